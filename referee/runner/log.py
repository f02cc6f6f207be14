"""Match logs, format v2: write them, read them, and verify them by replaying every deal.

A log holds everything needed to replay a match with the engine (rule set options, match seed,
per-deal seeds, moves) and everything needed to check the referee's bookkeeping (legal-move
counts, dealt hands, outcomes, totals, strikes, forfeits, standings, latency figures).  Two
forms carry the same data (``docs/logs.md``, schema ``referee/schemas/log-v2.json``):

* **JSON**: one object, ``{"format", "version", ..., "deals": [...], "result": {...}}``.
* **JSON Lines**: a ``header`` line, then per deal a ``deal`` line, one ``turn`` line per turn
  and a ``deal_end`` line, and finally a ``match_end`` line.  Good for streaming and for
  reading a log that was cut short.

:func:`verify` trusts nothing in the log: it rebuilds the rule set from its options, deals
every deal again from its seed and replays every move, and reports the first place where the
log and the replay disagree (deal and turn, numbered from 1 as people count them, and what
differs; :mod:`referee.game.numbering`).

Versions: v2 names each seat by the caller's ``player`` label instead of v1's ``url`` (a bot's
URL is its owner's secret, so no log carries one).  :func:`verify` reads both; nothing else
changed, so a v1 log replays exactly as before (its ``url`` is not looked at).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from referee.game import numbering
from referee.game.cards import CardError, mask_texts, move_id, parse_mask, parse_move
from referee.game.rules import RuleSet
from referee.game.state import Deal, DealContext
from referee.wire.protocol import PROTOCOL_VERSION
from referee.wire.text import encodable_json

from .match import (
    FORFEITED,
    BotIdentity,
    DealRecord,
    MatchRecord,
    TurnRecord,
    deal_seed,
    default_move,
    find_loser,
    latency_stats,
    standings,
)

FORMAT = "bigtwo-match-log"
VERSION = 2
"""The version this module writes."""
READABLE_VERSIONS = (1, 2)
"""The versions :func:`verify` reads (see the module docstring for what changed)."""


@functools.cache
def engine_version() -> str:
    """The installed ``big-two-arena`` version (the engine that wrote a log).

    Looked up once per process: ``importlib.metadata`` scans every folder of ``sys.path`` for
    the distribution on each call (milliseconds), and a worker writes a log per match."""
    try:
        return metadata.version("big-two-arena")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


class LogError(ValueError):
    """A file that is not a match log (not JSON, not an object, a broken line)."""


# --- record -> document ---------------------------------------------------------------------


def turn_json(t: TurnRecord) -> dict[str, Any]:
    return {
        "deal": t.deal,
        "turn": t.turn,
        "seat": t.seat,
        "legal": t.legal,
        "move": move_id(t.move),
        "latency_ms": t.latency_ms,
        "fault": t.fault,
        "detail": t.detail,
        "say": t.say,
        "bank_ms": t.bank_ms,
    }


def deal_json(d: DealRecord) -> dict[str, Any]:
    """One entry of the log's ``deals`` (also what a live broadcast reveals at a deal's end)."""
    return {
        "index": d.index,
        "seed": d.seed,
        "previous_winner": d.previous_winner,
        "previous_loser": d.previous_loser,
        "previous_order": list(d.previous_order),
        "hands": [mask_texts(h) for h in d.hands],
        "turns": [turn_json(t) for t in d.turns],
        "outcome": d.outcome.to_json() if d.outcome is not None else None,
        "loser": d.loser,
        "totals": list(d.totals),
    }


def logged_context(d: dict[str, Any]) -> DealContext:
    """The context a logged deal (an entry of ``deals``) was dealt with, as the log states it.
    For reading a log already verified, or one whose author is the reader (the owner's calls,
    the replay viewer); :func:`verify` checks the stated context against its own replay."""
    return DealContext(
        d["index"],
        d["previous_winner"],
        d["previous_loser"],
        tuple(d.get("previous_order", ())),
    )


def to_document(rec: MatchRecord) -> dict[str, Any]:
    """The JSON form of a match record."""
    deals = [deal_json(d) for d in rec.deals]
    result = {
        "totals": list(rec.totals),
        "standings": [
            {
                "rank": s.rank,
                "seat": s.seat,
                "name": s.name,
                "score": s.score,
                "wins": s.wins,
                "strikes": s.strikes,
                "forfeited": s.forfeited,
            }
            for s in rec.standings
        ],
        "strikes": [
            {"seat": s.seat, "deal": s.deal, "turn": s.turn, "reason": s.reason, "detail": s.detail}
            for s in rec.strikes
        ],
        "forfeits": [{"seat": f.seat, "deal": f.deal, "turn": f.turn} for f in rec.forfeits],
        "latency": [
            {
                "seat": x.seat,
                "calls": x.calls,
                "p50_ms": x.p50_ms,
                "p95_ms": x.p95_ms,
                "max_ms": x.max_ms,
            }
            for x in rec.latency
        ],
        "notes": [
            {
                "seat": n.seat,
                "call": n.call,
                "fault": n.fault,
                "detail": n.detail,
                "latency_ms": n.latency_ms,
            }
            for n in rec.notes
        ],
    }
    return {
        "format": FORMAT,
        "version": VERSION,
        "protocol": PROTOCOL_VERSION,
        "engine": engine_version(),
        "match_id": rec.match_id,
        "rules": {"name": rec.rules.name, "options": rec.rules.options()},
        "seed": rec.seed,
        "deals_planned": rec.deals_planned,
        "limits": rec.limits.to_json(),
        "seats": [s.to_json() for s in rec.seats],
        "deals": deals,
        "result": result,
    }


_HEADER_KEYS = (
    "format",
    "version",
    "protocol",
    "engine",
    "match_id",
    "rules",
    "seed",
    "deals_planned",
    "limits",
    "seats",
)
_DEAL_KEYS = ("index", "seed", "previous_winner", "previous_loser", "previous_order", "hands")
"""A deal line's keys; ``previous_order`` is absent from logs written before it was recorded."""
_DEAL_END_KEYS = ("outcome", "loser", "totals")


def to_lines(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The JSON Lines form of a document, one object per line."""
    yield {"type": "header", **{k: doc[k] for k in _HEADER_KEYS}}
    for d in doc["deals"]:
        yield {"type": "deal", **{k: d[k] for k in _DEAL_KEYS if k in d}}
        for t in d["turns"]:
            yield {"type": "turn", **t}
        if d.get("outcome") is not None:
            yield {"type": "deal_end", "deal": d["index"], **{k: d[k] for k in _DEAL_END_KEYS}}
    if doc.get("result") is not None:
        yield {"type": "match_end", **doc["result"]}


def from_lines(lines: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Rebuild the JSON form from JSON Lines objects (a log cut short gives a short document:
    the last deal without ``outcome``, no ``result``)."""
    doc: dict[str, Any] | None = None
    for n, line in enumerate(lines, 1):
        kind = line.get("type") if isinstance(line, dict) else None
        if doc is None:
            if kind != "header":
                raise LogError(f"line {n}: the first line must be the header")
            doc = {k: v for k, v in line.items() if k != "type"}
            doc["deals"] = []
            continue
        body = {k: v for k, v in line.items() if k != "type"}
        if kind == "deal":
            doc["deals"].append(
                {**body, "turns": [], "outcome": None, "loser": None, "totals": None}
            )
        elif kind in ("turn", "deal_end"):
            if not doc["deals"]:
                raise LogError(f"line {n}: {kind} line before any deal line")
            if kind == "turn":
                doc["deals"][-1]["turns"].append(body)
            else:
                body.pop("deal", None)
                doc["deals"][-1].update(body)
        elif kind == "match_end":
            doc["result"] = body
        else:
            raise LogError(f"line {n}: unknown line type {kind!r}")
    if doc is None:
        raise LogError("empty log")
    return doc


def _document(log: MatchRecord | dict[str, Any]) -> dict[str, Any]:
    return to_document(log) if isinstance(log, MatchRecord) else log


def dumps(log: MatchRecord | dict[str, Any], *, lines: bool = False) -> str:
    """The log as text: compact JSON, or JSON Lines with ``lines=True``.  Always a text that
    encodes to UTF-8: a lone surrogate (in a log read from somewhere else, or written before
    the protocol refused them) is written as its ``\\udXXX`` escape."""
    doc = _document(log)
    if lines:
        return encodable_json("".join(
            json.dumps(x, separators=(",", ":"), ensure_ascii=False) + "\n" for x in to_lines(doc)
        ))
    return encodable_json(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")


def loads(text: str) -> dict[str, Any]:
    """Parse either form into the JSON form.  A JSON Lines log whose last line was cut mid-way
    loses that line (the replay then reports where the log ends)."""
    stripped = text.strip()
    if not stripped:
        raise LogError("empty log")
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "type" not in whole:
        return whole
    objects: list[dict[str, Any]] = []
    raw_lines = stripped.split("\n")
    for n, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            if n == len(raw_lines) and objects:
                break  # a line cut short by a crash or a truncation (after whole lines)
            raise LogError(f"line {n}: not JSON ({exc})") from exc
        if not isinstance(obj, dict):
            raise LogError(f"line {n}: not a JSON object")
        objects.append(obj)
    return from_lines(objects)


def write(log: MatchRecord | dict[str, Any], path: str | Path) -> None:
    """Write a log; a ``.jsonl`` suffix selects JSON Lines, anything else JSON."""
    p = Path(path)
    p.write_text(dumps(log, lines=p.suffix == ".jsonl"), encoding="utf-8")


def read(path: str | Path) -> dict[str, Any]:
    """Read a log in either form (see :func:`loads`)."""
    return loads(Path(path).read_text(encoding="utf-8"))


# --- verification ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """Result of :func:`verify`: ``ok``, or the first ``problem`` and where it is."""

    ok: bool
    problem: str = ""
    deal: int | None = None
    turn: int | None = None
    summary: str = ""

    def where(self) -> str:
        """Where, as people count (``deal 2, turn 7`` is the log's deal 1, turn 6:
        :mod:`referee.game.numbering`); ``deal`` and ``turn`` stay the 0-based indices."""
        if self.deal is None:
            return "match"
        return numbering.where(deal=self.deal, turn=self.turn)

    def __str__(self) -> str:
        if self.ok:
            return self.summary
        return f"{self.where()}: {self.problem}"


class _MismatchError(Exception):
    def __init__(self, problem: str, deal: int | None = None, turn: int | None = None) -> None:
        super().__init__(problem)
        self.problem, self.deal, self.turn = problem, deal, turn


def _seat(index: int) -> str:
    """A seat in a message, as people count (``seat 1`` is the log's ``"seat": 0``)."""
    return numbering.where(seat=index)


def _cards(mask: int) -> str:
    return " ".join(mask_texts(mask)) or "pass"


class _Replay:
    """Replays a log document, raising :class:`_MismatchError` at the first disagreement."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.deal: int | None = None
        self.turn: int | None = None

    def bad(self, problem: str) -> _MismatchError:
        return _MismatchError(problem, self.deal, self.turn)

    def run(self) -> str:
        doc = self.doc
        if doc.get("format") != FORMAT:
            raise self.bad(f"not a match log (format {doc.get('format')!r})")
        version = doc.get("version")
        if version not in READABLE_VERSIONS or isinstance(version, bool):
            known = ", ".join(str(v) for v in READABLE_VERSIONS)
            raise self.bad(f"log format version {version!r}, this reader knows {known}")
        try:
            rules = RuleSet.from_options(doc["rules"]["name"], doc["rules"]["options"])
        except (TypeError, ValueError, KeyError) as exc:
            raise self.bad(f"rule set cannot be rebuilt from its options: {exc}") from exc
        if rules.problems():
            raise self.bad(f"rule set is invalid: {'; '.join(rules.problems())}")
        n = rules.players
        seats = [
            BotIdentity(s["seat"], s["name"], s["author"], s["version"], s.get("player"))
            for s in doc["seats"]
        ]
        if len(seats) != n or [s.seat for s in seats] != list(range(n)):
            raise self.bad(f"seat map must list \"seat\": 0 to {n - 1} in order")
        limits = doc["limits"]
        max_strikes = limits["max_strikes"]
        seed = doc["seed"]
        planned = doc["deals_planned"]
        self.totals = [0] * n
        self.wins = [0] * n
        self.strikes: list[dict[str, Any]] = []
        self.strike_count = [0] * n
        self.forfeited: set[int] = set()
        self.forfeits: list[dict[str, Any]] = []
        self.latencies: list[list[float]] = [[] for _ in range(n)]
        winner: int | None = None
        loser: int | None = None
        self.order: tuple[int, ...] = ()
        deals = doc["deals"]
        turns = 0
        for i in range(planned):
            self.deal, self.turn = i, None
            if i >= len(deals):
                raise self.bad(f"log ends after {len(deals)} of {planned} deals")
            winner, loser = self.replay_deal(rules, seed, i, deals[i], winner, loser, max_strikes)
            turns += len(deals[i]["turns"])
        self.deal = self.turn = None
        if len(deals) > planned:
            raise self.bad(f"{len(deals)} deals logged, {planned} planned")
        self.check_result(seats)
        rules_name = doc["rules"]["name"]
        top = [s for s in doc["result"]["standings"] if s["rank"] == 1]
        lead = " and ".join(f"{_seat(s['seat'])} ({s['name']}, {s['score']})" for s in top)
        return (
            f"valid: match {doc.get('match_id')}, {rules_name}, {planned} deals, {turns} "
            f"turns, {len(self.strikes)} strikes, {len(self.forfeits)} forfeits; "
            f"first: {lead}"
        )

    def logged_order(self, d: dict[str, Any]) -> tuple[int, ...]:
        """The previous finishing order this deal was dealt with: the replay's, which the log
        must state, or none for a log written before the order was recorded (its deals were
        dealt without one, so the president exchange did not happen)."""
        if "previous_order" not in d:
            return ()
        if d["previous_order"] != list(self.order):
            raise self.bad(
                f"context says previous finishing order {d['previous_order']!r}, "
                f"replay has {list(self.order)!r}"
            )
        return self.order

    def replay_deal(
        self,
        rules: RuleSet,
        seed: int,
        i: int,
        d: dict[str, Any],
        winner: int | None,
        loser: int | None,
        max_strikes: int | None,
    ) -> tuple[int | None, int | None]:
        if d["index"] != i:
            raise self.bad(f"deal index {d['index']!r} out of order")
        expected_seed = deal_seed(seed, i)
        if d["seed"] != expected_seed:
            raise self.bad(
                f"deal seed {d['seed']!r} is not the one derived from match seed "
                f"{seed!r} ({expected_seed})"
            )
        if d["previous_winner"] != winner or d["previous_loser"] != loser:
            raise self.bad(
                f"context says \"previous_winner\": {d['previous_winner']!r}, "
                f"\"previous_loser\": {d['previous_loser']!r}; the replay has "
                f"{winner!r} and {loser!r}"
            )
        deal = Deal.new(rules, d["seed"], DealContext(i, winner, loser, self.logged_order(d)))
        hands = d["hands"]
        if len(hands) != len(deal.dealt):
            raise self.bad(f"{len(hands)} hands logged, {len(deal.dealt)} dealt")
        for s, (logged, real) in enumerate(zip(hands, deal.dealt, strict=True)):
            try:
                mask = parse_mask(logged)
            except CardError as exc:
                raise self.bad(f"dealt hand of {_seat(s)} is malformed: {exc}") from exc
            if mask != real:
                raise self.bad(
                    f"dealt hand of {_seat(s)} differs: log has {_cards(mask)}, "
                    f"the seed deals {_cards(real)}"
                )
        for t, tr in enumerate(d["turns"]):
            self.turn = t
            self.replay_turn(deal, i, t, tr, max_strikes)
        self.turn = None
        out = deal.outcome
        if out is None:
            self.turn = len(d["turns"])
            raise self.bad("log ends before the deal is over")
        logged = d.get("outcome")
        if logged is None:
            raise self.bad("deal has no outcome")
        real_json = out.to_json()
        for key, value in real_json.items():
            if logged.get(key) != value:
                raise self.bad(
                    f"outcome field {key!r} differs: log has {logged.get(key)!r}, "
                    f"replay has {value!r}"
                )
        for s, v in enumerate(out.scores):
            self.totals[s] += v
        if out.winner is not None:
            self.wins[out.winner] += 1
        self.order = out.finish_order
        real_loser = find_loser(deal)
        if d["loser"] != real_loser:
            raise self.bad(f"loser differs: log has {d['loser']!r}, replay has {real_loser!r}")
        if d["totals"] != self.totals:
            raise self.bad(
                f"totals after the deal differ: log has {d['totals']!r}, replay has {self.totals!r}"
            )
        return out.winner, real_loser

    def replay_turn(
        self, deal: Deal, i: int, t: int, tr: dict[str, Any], max_strikes: int | None
    ) -> None:
        if deal.outcome is not None:
            raise self.bad("turn logged after the deal was over")
        if tr["deal"] != i or tr["turn"] != t:
            raise self.bad(f"turn labelled \"deal\": {tr['deal']!r}, \"turn\": {tr['turn']!r} "
                           f"(indices {i} and {t} expected)")
        seat = deal.to_move
        if tr["seat"] != seat:
            raise self.bad(f"\"seat\": {tr['seat']!r} moved, but {_seat(seat)} (\"seat\": "
                           f"{seat}) was to move")
        legal = deal.legal_moves()
        if tr["legal"] != len(legal):
            raise self.bad(f"log has {tr['legal']!r} legal moves, replay has {len(legal)}")
        try:
            move = parse_move(tr["move"])
        except (CardError, TypeError) as exc:
            raise self.bad(f"move {tr['move']!r} is malformed: {exc}") from exc
        if move & ~deal.hands[seat]:
            raise self.bad(
                f"move {_cards(move)} is not in {_seat(seat)}'s hand ({_cards(deal.hands[seat])})"
            )
        if move not in legal:
            raise self.bad(f"move {_cards(move)} is not legal now")
        fault = tr["fault"]
        if fault is not None:
            expected = default_move(deal, legal)
            if move != expected:
                raise self.bad(
                    f"a faulted turn plays the default move {_cards(expected)}, "
                    f"log has {_cards(move)}"
                )
        if seat in self.forfeited:
            if fault != FORFEITED:
                raise self.bad(f"{_seat(seat)} had forfeited, but the turn has fault {fault!r}")
        elif fault == FORFEITED:
            raise self.bad(f"turn marked forfeited, but {_seat(seat)} had not forfeited")
        elif fault is not None:
            self.strikes.append({"seat": seat, "deal": i, "turn": t, "reason": fault})
            self.strike_count[seat] += 1
            if max_strikes is not None and self.strike_count[seat] >= max_strikes:
                self.forfeited.add(seat)
                self.forfeits.append({"seat": seat, "deal": i, "turn": t})
        if fault != FORFEITED:
            latency = tr["latency_ms"]
            if not isinstance(latency, int | float) or isinstance(latency, bool):
                raise self.bad(f"latency {latency!r} is not a number")
            self.latencies[seat].append(latency)
        deal.push(move)

    def check_result(self, seats: list[BotIdentity]) -> None:
        result = self.doc.get("result")
        if result is None:
            raise self.bad("log ends before the match end")
        if result["totals"] != self.totals:
            raise self.bad(
                f"totals differ: log has {result['totals']!r}, replay has {self.totals!r}"
            )
        logged_strikes = [
            {k: s[k] for k in ("seat", "deal", "turn", "reason")} for s in result["strikes"]
        ]
        if logged_strikes != self.strikes:
            raise self.bad(
                f"strikes differ from the faults in the turns: log has "
                f"{len(logged_strikes)}, turns have {len(self.strikes)}"
            )
        if result["forfeits"] != self.forfeits:
            raise self.bad(
                f"forfeits differ: log has {result['forfeits']!r}, replay has {self.forfeits!r}"
            )
        real = [
            {
                "rank": s.rank,
                "seat": s.seat,
                "name": s.name,
                "score": s.score,
                "wins": s.wins,
                "strikes": s.strikes,
                "forfeited": s.forfeited,
            }
            for s in standings(seats, self.totals, self.wins, self.strike_count, self.forfeited)
        ]
        if result["standings"] != real:
            for pos, (a, b) in enumerate(zip(result["standings"], real, strict=False)):
                if a != b:
                    raise self.bad(f"standing {pos + 1} differs: log has {a!r}, replay has {b!r}")
            raise self.bad("standings differ in length")
        for x in result["latency"]:
            s = x["seat"]
            st = latency_stats(s, self.latencies[s])
            if (x["calls"], x["p50_ms"], x["p95_ms"], x["max_ms"]) != (
                st.calls,
                st.p50_ms,
                st.p95_ms,
                st.max_ms,
            ):
                raise self.bad(f"latency figures of {_seat(s)} do not match its turns")


def verify(log: MatchRecord | dict[str, Any]) -> Verdict:
    """Replay a log with the engine and check every move, count, hand, score and standing.

    Returns a :class:`Verdict` naming the first disagreement (deal and turn index, what
    differs; its messages number seats, deals and turns from 1, as people do); a malformed
    document is reported the same way, never raised.
    """
    replay = _Replay(_document(log))
    try:
        summary = replay.run()
    except _MismatchError as bad:
        return Verdict(False, bad.problem, bad.deal, bad.turn)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else f"{exc}"
        return Verdict(False, f"malformed log: {what}", replay.deal, replay.turn)
    return Verdict(True, summary=summary)


__all__ = [
    "FORMAT",
    "READABLE_VERSIONS",
    "VERSION",
    "LogError",
    "Verdict",
    "dumps",
    "from_lines",
    "loads",
    "read",
    "to_document",
    "to_lines",
    "verify",
    "write",
]
