"""``python -m referee replay LOG --seat N URL``: a regression test for a bot, from a real match.

Re-sends every ``/move`` request that seat received in a logged match (or every call of an
owner's calls export), byte for byte as it was sent (:mod:`referee.cli.replay_source`), to the
bot at ``URL`` through the arena's own caller, and reports for each one whether the new answer
is the *same* as the logged one, *different* (a legal move, another one: information, not a
failure), or a *strike* (it would be refused in a match: illegal, malformed, late, no answer;
judged by the referee's own judge), with each latency.  Seats, deals and turns are numbered
from 1 in the lines printed and in ``--seat``, as the pages and ``python -m referee request``
number them; the ``--json`` document's ``seat``, ``deal`` and ``turn`` are the 0-based
indices of the log (:mod:`referee.game.numbering`).

Each call gets the limit it had in the match: the per-move deadline plus the time bank the
request says was left.  Exit status: 0 when every answer would be accepted (differences
allowed), 1 when at least one would be a strike, 2 when the file cannot be read, does not
replay, or holds no request for that seat.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from referee.game.numbering import person_number, where
from referee.runner.faults import fault_name
from referee.runner.match import percentile
from referee.wire.httpbot import BotClient
from referee.wire.netguard import NetPolicy

from .judging import MoveVerdict, judge_call
from .replay_source import Logged, Source, SourceError, load
from .terminal import echo, printable

REPLAY_VERSION = 1
"""Version of the ``--json`` document (``replay_version``); fields are only ever added."""

SAME, DIFFERENT, STRIKE = "same", "different", "strike"


@dataclass(frozen=True)
class Outcome:
    """One replayed request: the logged answer, the new verdict, and how they compare."""

    logged: Logged
    now: MoveVerdict
    status: str
    over_deadline: bool
    """Answered after the per-move deadline (in a match: drawn from the time bank)."""

    def to_json(self) -> dict[str, Any]:
        lg = self.logged
        return {
            "match_id": lg.match_id, "deal": lg.deal, "turn": lg.turn, "seat": lg.seat,
            "status": self.status,
            "logged": {"move": lg.move, "fault": lg.fault, "latency_ms": lg.latency_ms},
            "now": {"move": self.now.move, "fault": self.now.fault, "detail": self.now.words,
                    "latency_ms": self.now.latency_ms, "over_deadline": self.over_deadline},
            "fix": self.now.fix,
        }


def compare(logged: Logged, now: MoveVerdict, deadline_ms: int) -> Outcome:
    if not now.ok:
        status = STRIKE
    elif logged.fault is None and now.move == logged.move:
        status = SAME
    else:
        status = DIFFERENT
    return Outcome(logged, now, status, now.latency_ms > deadline_ms)


def replay(source: Source, url: str, *, secret: bytes | None, policy: NetPolicy,
           deadline_ms: int | None = None, progress: Any = None) -> list[Outcome]:
    """Send every request of ``source`` to ``url`` and judge each answer."""
    outcomes = []
    with BotClient(url, secret=secret, policy=policy) as client:
        for item in source.items:
            limit = deadline_ms if deadline_ms is not None else item.deadline_ms
            bank = int(item.request.get("time_bank_ms") or 0)
            result = client.call("/move", item.request, (limit + bank) / 1000)
            outcome = compare(item, judge_call(result, item.request), limit)
            outcomes.append(outcome)
            if progress is not None:
                progress(outcome)
    return outcomes


def ms(value: float) -> str:
    """A latency for people: one decimal below 10 ms, whole milliseconds above."""
    return f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"


def at(lg: Logged, *, with_match: bool) -> str:
    """Where a request was sent, as people count (``deal 2, turn 7``)."""
    turn = where(deal=lg.deal, turn=lg.turn)
    return f"match {lg.match_id}, {turn}" if with_match else turn


def line(o: Outcome, *, with_match: bool) -> str:
    lg, now = o.logged, o.now
    at_ = at(lg, with_match=with_match)
    then = (lg.move if lg.fault is None
            else f"a strike ({fault_name(lg.fault)}; {lg.move} played for it)")
    late = ", after the deadline" if o.over_deadline else ""
    if o.status == SAME:
        text = f"{at_}: same: {lg.move} ({ms(now.latency_ms)}{late})"
    elif o.status == DIFFERENT:
        text = f"{at_}: DIFFERENT: logged {then}, now {now.move} ({ms(now.latency_ms)}{late})"
    else:
        text = (f"{at_}: STRIKE: {fault_name(now.fault)}: {now.words} (logged {then}; "
                f"{ms(now.latency_ms)}). "
                f"Fix: {now.fix}")
    return printable(text)


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    counts = {s: sum(o.status == s for o in outcomes) for s in (SAME, DIFFERENT, STRIKE)}
    latencies = [o.now.latency_ms for o in outcomes]
    return {
        "requests": len(outcomes), **counts,
        "over_deadline": sum(o.over_deadline for o in outcomes),
        "latency": None if not latencies else {
            "p50_ms": percentile(latencies, 0.5), "p95_ms": percentile(latencies, 0.95),
            "max_ms": max(latencies)},
    }


def summary_text(s: dict[str, Any]) -> str:
    text = (f"summary: {s['requests']} requests: {s[SAME]} same, {s[DIFFERENT]} different, "
            f"{s[STRIKE]} would be strikes")
    if s["latency"] is not None:
        lat = s["latency"]
        text += (f"; latency p50 {ms(lat['p50_ms'])}, p95 {ms(lat['p95_ms'])}, max "
                 f"{ms(lat['max_ms'])}, {s['over_deadline']} after the deadline")
    verdict = ("exit 1: fix each STRIKE above" if s[STRIKE] else
               "exit 0: every answer would be accepted (differences are information)")
    return f"{text}\n{verdict}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m referee replay",
        description="Re-send every /move request a seat received in a logged match (or an "
                    "owner's calls export) to a bot, and report where its answers differ, "
                    "which would be strikes, and each latency. Exit status 0: every answer "
                    "would be accepted; 1: some would be strikes; 2: unreadable input.")
    ap.add_argument("log", metavar="LOG", help="a match log (JSON or JSON Lines) or the JSON of "
                    "GET /api/bots/<id>/calls")
    ap.add_argument("url", metavar="URL", help="the bot to send the requests to")
    ap.add_argument("--seat", type=person_number, help="the seat to replay, from 1 as the "
                    "match page shows it (required for a match log; filters a calls export)")
    ap.add_argument("--secret", help="sign the requests with this secret (the bot's)")
    ap.add_argument("--json", action="store_true", help="one JSON document (docs/conformance.md)")
    ap.add_argument("--allow-private", action="store_true",
                    help="allow loopback and private addresses (a bot on this machine)")
    ap.add_argument("--deadline-ms", type=int, default=None,
                    help="the per-move deadline (default: the logged match's)")
    args = ap.parse_args(argv)
    try:
        source = load(args.log, args.seat)
    except (OSError, SourceError) as exc:
        echo(f"{args.log}: {exc}", file=sys.stderr, keep_newlines=False)
        return 2
    if not source.items:
        echo(f"{args.log}: no request to replay ({source.name})", file=sys.stderr,
             keep_newlines=False)
        return 2
    with_match = len({i.match_id for i in source.items}) > 1
    if not args.json:
        echo(printable(f"replaying {len(source.items)} requests of {source.name} to "
                       f"{args.url}"), keep_newlines=False)
    progress = None if args.json else (
        lambda o: echo(line(o, with_match=with_match), keep_newlines=False))
    outcomes = replay(source, args.url, secret=args.secret.encode() if args.secret else None,
                      policy=NetPolicy(allow_private=args.allow_private),
                      deadline_ms=args.deadline_ms, progress=progress)
    s = summary(outcomes)
    if args.json:
        echo(json.dumps({"replay_version": REPLAY_VERSION, "source": source.kind,
                         "name": source.name, "url": args.url, "ok": not s[STRIKE],
                         "summary": s, "turns": [o.to_json() for o in outcomes]}, indent=2,
                        ensure_ascii=True))
    else:
        echo(summary_text(s))
    return 1 if s[STRIKE] else 0


__all__ = ["DIFFERENT", "SAME", "STRIKE", "Outcome", "compare", "main", "replay", "summary"]
