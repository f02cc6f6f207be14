"""The submission health check against loopback bots: GET / and one probe /move."""

from __future__ import annotations

import time
from typing import Any

from referee.health import check_player, health_check, probe_request
from referee.netguard import NetPolicy
from referee.players import LocalPlayer
from tests.referee import badbots as bb
from tests.referee import protocolbots as pb

LOCAL = NetPolicy(allow_private=True)


def check(bot: pb.ProtocolBot, **kw: Any) -> Any:
    with pb.running(bot):
        return health_check(bot.url, LOCAL, **kw)


def test_good_bot_passes() -> None:
    bot = pb.ProtocolBot(name="healthy")
    result = check(bot)
    assert result.ok and result.reason == ""
    assert result.info == {"protocol": 1, "name": "healthy", "author": "tests", "version": "1.0"}
    assert result.describe_ms is not None and result.move_ms is not None
    assert bot.describes == 1 and len(bot.moves) == 1 and not bot.starts
    assert bot.moves[0]["match_id"] == "health-check"


def test_signed_health_check() -> None:
    bot = pb.ProtocolBot(secret=b"k")
    with pb.running(bot):
        assert health_check(bot.url, LOCAL, secret=b"k").ok
    assert bot.bad_signatures == 0


def test_bad_description_fails() -> None:
    result = check(pb.ProtocolBot(description={"protocol": 2, "name": "x", "author": "",
                                               "version": ""}))
    assert not result.ok and result.reason.startswith("GET /: 'protocol' must be 1")
    result = check(pb.ProtocolBot(description={"protocol": 1, "author": "", "version": ""}))
    assert not result.ok and "'name'" in result.reason


def test_illegal_probe_answer_fails() -> None:
    result = check(pb.ProtocolBot(misbehave=pb.not_in_hand, bad_moves={0}))
    assert not result.ok and result.reason.startswith("POST /move: not_in_hand")
    result = check(pb.ProtocolBot(misbehave=pb.error_500, bad_moves={0}))
    assert not result.ok and "http_status" in result.reason


def test_slow_probe_fails_at_the_deadline() -> None:
    bot = pb.ProtocolBot(misbehave=pb.hang, bad_moves={0})
    t0 = time.monotonic()
    result = check(bot, deadline_ms=300)
    assert time.monotonic() - t0 < 3
    assert not result.ok and result.reason.startswith("POST /move: timeout")
    assert result.info is not None and result.move_ms is not None and result.move_ms >= 250


def test_hanging_describe_fails() -> None:
    with bb.serving(bb.hang) as bot:
        t0 = time.monotonic()
        result = health_check(bot.url, LOCAL, describe_deadline_ms=300)
        assert time.monotonic() - t0 < 3
    assert not result.ok and result.reason.startswith("GET /: timeout")


def test_private_address_refused_by_default() -> None:
    bot = pb.ProtocolBot()
    with pb.running(bot):
        result = health_check(bot.url)  # the public policy
    assert not result.ok and "refused_address" in result.reason
    assert bot.server is not None and bot.server.connections == 0


def test_check_player_in_process() -> None:
    assert check_player(LocalPlayer(lambda r: {"move": r["legal_moves"][0]["id"]})).ok
    result = check_player(LocalPlayer(lambda r: {"move": "pass"}))  # may not pass on the lead
    assert not result.ok and "unknown_move" in result.reason


def test_probe_is_a_real_first_turn() -> None:
    request, deal = probe_request()
    assert request["turn"] == 0 and request["seat"] == deal.to_move
    assert request["must_include"] == "3D"
    assert all("3D" in m["cards"] for m in request["legal_moves"])
