"""Health check of a bot URL: the opening of a real match, played by the real match runner.

A probe must be indistinguishable from a real match's requests, or a bot could answer probes
well and misbehave in matches.  So the check does not build requests of its own: it runs
:func:`referee.runner.match.run_match` with the bot in one seat of a real deal (random rule set,
seed, seat and match id, given by the caller in a :class:`Probe`) and in-process players in
the others.  The bot sees what any match sends: ``GET /``, ``POST /start`` (the seats'
identities, the limits, the number of deals) and ``POST /move`` for its seat's first turn,
from the same code, with the same headers, in the same shapes.  After that first ``/move``
the runner is stopped (as when the arena abandons a match: no ``/end``).

The check passes when ``GET /`` answers a valid description and the ``/move`` answer is a
legal move, each within its deadline.  ``/start`` is judged as in matches: a failure there is
no fault.

Failure reasons are written for the bot's author, and never make the checker a port scanner:
everything that happens before a valid HTTP status line arrives (refused, reset, silence,
a TLS or non-HTTP answer, a timeout) reads the same, ``no HTTP answer from the bot URL within
N s``, with no latency; HTTP-level problems (a bad status, not JSON, an illegal move) are
named precisely, by the fault's name and sentence (:data:`referee.runner.faults.FAULTS`:
``POST /move: HTTP error status: answered HTTP 500; ...``).  See :func:`failure_reason`.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.game.presets import find_ruleset
from referee.game.rules import RuleSet
from referee.game.state import Deal, DealContext
from referee.wire.httpbot import DEFAULT_MAX_BODY, BotClient, CallResult, Fault
from referee.wire.netguard import DEFAULT_POLICY, NetPolicy
from referee.wire.players import EXCEPTION, HttpPlayer, LocalPlayer, Player, Reply
from referee.wire.protocol import check_description
from referee.wire.signing import LEGACY_V1_DEFAULT

from .faults import BAD_DESCRIPTION, fault_name, plain_fault
from .match import Limits, TurnRecord, deal_seed, run_match

DEFAULT_OPPONENTS: tuple[tuple[str, str, str], ...] = (
    ("greedy", "Big Two Arena", "1"),
    ("planner", "Big Two Arena", "1"),
    ("random", "Big Two Arena", "1"),
)
"""Identities of the other seats when the caller knows no real bots to borrow them from."""

NO_ANSWER_FAULTS = frozenset({Fault.TIMEOUT.value, Fault.CONNECTION.value, Fault.TLS.value,
                              Fault.PROTOCOL.value})
"""Faults that, without an HTTP status, mean nothing spoke HTTP: all read the same."""


def wire_match_id(token: int) -> str:
    """A match id as the arena sends it to bots: ``m-`` and 16 hex digits, opaque (the
    arena derives it from a keyed hash of its match number; probes use random ones)."""
    return f"m-{token & (2**64 - 1):016x}"


@dataclass(frozen=True)
class Probe:
    """The real match opening a health check plays: rule set, seed, the bot's seat, the
    match id, the number of deals and limits announced in ``/start``, and the identities
    ``(name, author, version)`` of the other seats."""

    rules: RuleSet
    seed: int
    seat: int
    match_id: str
    deals: int = 1
    limits: Limits = field(default_factory=Limits)
    opponents: tuple[tuple[str, str, str], ...] = DEFAULT_OPPONENTS

    @classmethod
    def draw(
        cls,
        rng: random.Random,
        *,
        rulesets: Sequence[RuleSet],
        deals: int,
        limits: Limits,
        opponents: Sequence[tuple[str, str, str]] = (),
    ) -> Probe:
        """A random probe (as random as a ladder match): rule set, seed, seat, match id,
        and opponents drawn from ``opponents`` (padded with :data:`DEFAULT_OPPONENTS`)."""
        rules = rng.choice(list(rulesets))
        pool = list(opponents)
        rng.shuffle(pool)
        others = (pool + [o for o in DEFAULT_OPPONENTS if o not in pool])[: rules.players - 1]
        while len(others) < rules.players - 1:
            others.append(DEFAULT_OPPONENTS[len(others) % len(DEFAULT_OPPONENTS)])
        return cls(rules=rules, seed=rng.getrandbits(62), seat=rng.randrange(rules.players),
                   match_id=wire_match_id(rng.getrandbits(64)), deals=deals, limits=limits,
                   opponents=tuple(others))


@dataclass(frozen=True)
class HealthResult:
    """``ok``, or the ``reason`` the bot failed; the description and both latencies.

    ``no_answer`` marks a failure before any HTTP answer (latencies are then withheld: how
    fast a connection was refused says whether a port is open)."""

    ok: bool
    reason: str
    info: dict[str, Any] | None
    describe_ms: float | None
    move_ms: float | None
    no_answer: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "info": self.info,
            "describe_ms": self.describe_ms,
            "move_ms": self.move_ms,
        }


def failure_reason(call: str, fault: str, detail: str, status: int | None,
                   deadline_s: float, max_body: int = DEFAULT_MAX_BODY) -> tuple[str, bool]:
    """The text shown to the submitter for a failed ``call`` (``GET /``, ``POST /move``), and
    whether it is a no-HTTP-answer failure.  Transport details (exception texts, addresses,
    internal class names) never appear."""
    if fault in NO_ANSWER_FAULTS and status is None:
        return f"{call}: no HTTP answer from the bot URL within {deadline_s:g} s", True
    # What only this context knows (the status, the deadline, the size cap); every other
    # transport fault reads as everywhere else (referee.runner.faults).
    texts = {
        Fault.TIMEOUT.value: f"the bot began answering (HTTP {status}) but did not finish "
                             f"within {deadline_s:g} s",
        Fault.CONNECTION.value: "the connection closed before the answer was complete",
        Fault.HTTP_STATUS.value: f"answered HTTP {status}; a 200 with a JSON object is "
                                 "expected",
        Fault.REDIRECT.value: f"answered a redirect (HTTP {status}); the arena never follows "
                              "redirects, so register the final URL",
        Fault.BODY_TOO_LARGE.value: f"the answer is larger than {max_body} bytes",
    }
    if fault in texts:
        text = texts[fault]
    elif fault == EXCEPTION:  # an in-process player: its own traceback summary
        text = detail[:200]
    else:  # every other fault reads as everywhere else (referee.runner.faults)
        text = plain_fault(fault, detail)
    return f"{call}: {fault_name(fault)}: {text}", False


class _ProbeOverError(Exception):
    """Stops the runner once the probe has what it needs."""


class _StatusHttpPlayer(HttpPlayer):
    """An :class:`HttpPlayer` that remembers the HTTP status of its last call (whether the
    bot spoke HTTP at all decides how a failure may be described)."""

    last_status: int | None = None

    def _keep(self, result: CallResult) -> Reply:
        self.last_status = result.status
        return self._reply(result)  # scrubbed of the URL, as every HttpPlayer reply

    def describe(self, deadline_s: float) -> Reply:
        return self._keep(self.client.get("/", deadline_s))

    def start(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self._keep(self.client.call("/start", info, deadline_s))

    def move(self, request: dict[str, Any], deadline_s: float) -> Reply:
        return self._keep(self.client.call("/move", request, deadline_s))

    def end(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self._keep(self.client.call("/end", info, deadline_s))


class _ProbeSeat(Player):
    """The bot's seat: forwards the runner's calls to the bot under the health deadlines and
    remembers the replies; after a failed ``GET /`` or the first ``/move`` it calls no more."""

    def __init__(self, player: Player, describe_deadline_s: float, move_deadline_s: float,
                 call_deadline_s: float) -> None:
        self.player, self.url, self.label = player, player.url, player.label
        self.describe_deadline_s, self.move_deadline_s = describe_deadline_s, move_deadline_s
        self.call_deadline_s = call_deadline_s
        self.describe_reply: Reply | None = None
        self.describe_status: int | None = None
        self.describe_problem: str | None = None
        self.move_reply: Reply | None = None
        self.move_status: int | None = None

    def scrub(self, text: str) -> str:
        return self.player.scrub(text)

    @property
    def failed(self) -> bool:
        reply = self.describe_reply
        return reply is None or not reply.ok or self.describe_problem is not None

    def _status(self) -> int | None:
        return getattr(self.player, "last_status", None)

    def describe(self, deadline_s: float) -> Reply:
        reply = self.player.describe(min(deadline_s, self.describe_deadline_s))
        self.describe_reply, self.describe_status = reply, self._status()
        if reply.ok:
            self.describe_problem = check_description(reply.data)
        return reply

    def start(self, info: dict[str, Any], deadline_s: float) -> Reply:
        if self.failed:
            return Reply({}, 0.0)
        return self.player.start(info, min(deadline_s, self.call_deadline_s))

    def move(self, request: dict[str, Any], deadline_s: float) -> Reply:
        if self.failed or self.move_reply is not None:
            return Reply(None, 0.0, EXCEPTION, "probe over")
        reply = self.player.move(request, min(deadline_s, self.move_deadline_s))
        self.move_reply, self.move_status = reply, self._status()
        return reply

    def end(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return Reply({}, 0.0)


def _first_legal(request: dict[str, Any]) -> dict[str, Any]:
    return {"move": request["legal_moves"][0]["id"]}


def check_player(
    player: Player,
    *,
    deadline_ms: int = 1000,
    describe_deadline_ms: int = 2000,
    rules: RuleSet | None = None,
    seed: int = 0,
    probe: Probe | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> HealthResult:
    """Run the health check against any :class:`~referee.wire.players.Player` (see the module
    docstring).  Without ``probe``: the bot holds the lead of deal ``seed`` of ``rules``."""
    if probe is None:
        r = rules or find_ruleset("standard")
        lead = Deal.new(r, deal_seed(seed, 0), DealContext(0, None, None)).to_move
        probe = Probe(rules=r, seed=seed, seat=lead, match_id=wire_match_id(seed))
    seat = _ProbeSeat(player, describe_deadline_ms / 1000, deadline_ms / 1000,
                      probe.limits.call_deadline_ms / 1000)
    players: list[Player] = []
    others = iter(probe.opponents)
    for i in range(probe.rules.players):
        if i == probe.seat:
            players.append(seat)
        else:
            name, author, version = next(others)
            players.append(LocalPlayer(_first_legal, name=name, author=author, version=version))
    seen: list[TurnRecord] = []

    def on_turn(turn: TurnRecord) -> None:
        if turn.seat == probe.seat and seat.move_reply is not None:
            seen.append(turn)
            raise _ProbeOverError()
        if seat.failed:
            raise _ProbeOverError()

    with contextlib.suppress(_ProbeOverError):
        run_match(probe.rules, players, probe.seed, probe.deals, probe.limits,
                  match_id=probe.match_id, on_turn=on_turn)
    return _judge(seat, seen[0] if seen else None, describe_deadline_ms / 1000,
                  deadline_ms / 1000, max_body)


def _judge(seat: _ProbeSeat, turn: TurnRecord | None, describe_s: float, move_s: float,
           max_body: int) -> HealthResult:
    d = seat.describe_reply
    assert d is not None
    describe_ms = round(d.latency_s * 1000, 3)
    if not d.ok:
        reason, silent = failure_reason("GET /", d.fault or "", d.detail, seat.describe_status,
                                        describe_s, max_body)
        return HealthResult(False, reason, None, None if silent else describe_ms, None, silent)
    if seat.describe_problem is not None:
        return HealthResult(False, f"GET /: {fault_name(BAD_DESCRIPTION)}: "
                                   f"{seat.describe_problem}", d.data, describe_ms, None)
    info = d.data
    m = seat.move_reply
    if m is None or turn is None:
        return HealthResult(False, "POST /move: the probe deal ended before the bot's turn",
                            info, describe_ms, None)
    move_ms = round(m.latency_s * 1000, 3)
    if turn.fault is not None:
        reason, silent = failure_reason("POST /move", turn.fault, turn.detail,
                                        seat.move_status if not m.ok else 200, move_s, max_body)
        return HealthResult(False, reason, info, describe_ms, None if silent else move_ms,
                            silent)
    return HealthResult(True, "", info, describe_ms, move_ms)


def health_check(
    url: str,
    policy: NetPolicy = DEFAULT_POLICY,
    *,
    secret: bytes | None = None,
    secrets: Sequence[bytes] = (),
    legacy_v1: bool = LEGACY_V1_DEFAULT,
    deadline_ms: int = 1000,
    describe_deadline_ms: int = 2000,
    rules: RuleSet | None = None,
    seed: int = 0,
    probe: Probe | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> HealthResult:
    """Check the bot at ``url`` (see the module docstring); never raises for the bot's faults.

    A URL refused by ``policy`` fails with a ``refused_address``/``bad_url`` reason.
    ``secrets`` (current first; ``secret`` for one) and ``legacy_v1`` sign the requests as
    in matches (:class:`referee.wire.httpbot.BotClient`).
    """
    with BotClient(url, secret=secret, secrets=secrets, legacy_v1=legacy_v1, policy=policy,
                   max_body=max_body) as client:
        return check_player(
            _StatusHttpPlayer(url, client=client),
            deadline_ms=deadline_ms,
            describe_deadline_ms=describe_deadline_ms,
            rules=rules,
            seed=seed,
            probe=probe,
            max_body=max_body,
        )
