"""Health check of a bot URL: what the service runs when a bot is submitted.

Two calls, each under its deadline: ``GET /`` must answer a valid description
(``{"protocol": 1, "name", "author", "version"}``), and one probe ``POST /move`` with a real
position (the first turn of a standard deal) must come back with a legal move.  The probe's
``match_id`` starts with ``health-``; bots must answer a ``/move`` for a match they never saw
``/start`` for (see ``docs/protocol.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .httpbot import DEFAULT_MAX_BODY, BotClient
from .netguard import DEFAULT_POLICY, NetPolicy
from .players import HttpPlayer, Player
from .presets import find_ruleset
from .protocol import check_description, judge_answer, move_request
from .rules import RuleSet
from .state import Deal

PROBE_MATCH_ID = "health-check"


@dataclass(frozen=True)
class HealthResult:
    """``ok``, or the ``reason`` the bot failed; the description and both latencies."""

    ok: bool
    reason: str
    info: dict[str, Any] | None
    describe_ms: float | None
    move_ms: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "info": self.info,
            "describe_ms": self.describe_ms,
            "move_ms": self.move_ms,
        }


def probe_request(
    rules: RuleSet | None = None, seed: int = 0, deadline_ms: int = 1000
) -> tuple[dict[str, Any], Deal]:
    """The probe ``/move`` body (first turn of a real deal) and the deal it comes from."""
    deal = Deal.new(rules or find_ruleset("standard"), seed)
    request = move_request(
        deal,
        deal.to_move,
        match_id=PROBE_MATCH_ID,
        turn=0,
        scores=[0] * deal.rules.players,
        deadline_ms=deadline_ms,
        time_bank_ms=0,
        last_latency_ms=None,
    )
    return request, deal


def check_player(
    player: Player,
    *,
    deadline_ms: int = 1000,
    describe_deadline_ms: int = 2000,
    rules: RuleSet | None = None,
    seed: int = 0,
) -> HealthResult:
    """Run the health check against any :class:`~referee.players.Player`."""
    reply = player.describe(describe_deadline_ms / 1000)
    describe_ms = round(reply.latency_s * 1000, 3)
    if not reply.ok:
        return HealthResult(False, f"GET /: {reply.fault}: {reply.detail}", None, describe_ms, None)
    problem = check_description(reply.data)
    if problem is not None:
        return HealthResult(False, f"GET /: {problem}", reply.data, describe_ms, None)
    info = reply.data
    request, deal = probe_request(rules, seed, deadline_ms)
    legal = deal.legal_moves()
    move = player.move(request, deadline_ms / 1000)
    move_ms = round(move.latency_s * 1000, 3)
    if not move.ok:
        return HealthResult(
            False, f"POST /move: {move.fault}: {move.detail}", info, describe_ms, move_ms
        )
    answer = judge_answer(move.data, request["turn"], legal, deal.hands[deal.to_move])
    if answer.fault is not None:
        return HealthResult(
            False, f"POST /move: {answer.fault.value}: {answer.detail}", info, describe_ms, move_ms
        )
    return HealthResult(True, "", info, describe_ms, move_ms)


def health_check(
    url: str,
    policy: NetPolicy = DEFAULT_POLICY,
    *,
    secret: bytes | None = None,
    deadline_ms: int = 1000,
    describe_deadline_ms: int = 2000,
    rules: RuleSet | None = None,
    seed: int = 0,
    max_body: int = DEFAULT_MAX_BODY,
) -> HealthResult:
    """Check the bot at ``url`` (see the module docstring); never raises for the bot's faults.

    A URL refused by ``policy`` fails with a ``refused_address``/``bad_url`` reason.
    """
    with BotClient(url, secret=secret, policy=policy, max_body=max_body) as client:
        return check_player(
            HttpPlayer(url, client=client),
            deadline_ms=deadline_ms,
            describe_deadline_ms=describe_deadline_ms,
            rules=rules,
            seed=seed,
        )
