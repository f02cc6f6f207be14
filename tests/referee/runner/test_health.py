"""The submission health check against loopback bots: a real match opening (GET /, /start,
the first /move of the bot's seat), and failure texts that are no port scanner."""

from __future__ import annotations

import random
import re
import time
from typing import Any

from referee.game.presets import find_ruleset
from referee.runner.health import Probe, check_player, health_check
from referee.runner.match import Limits
from referee.wire.netguard import NetPolicy
from referee.wire.players import LocalPlayer
from tests.ports import closed_port_url
from tests.referee import badbots as bb
from tests.referee import protocolbots as pb

LOCAL = NetPolicy(allow_private=True)


AMPLE_MS = 60_000
"""The health deadlines of a call that is not meant to be slow: on a saturated machine a
well-behaved bot may take seconds, and only a bot that misbehaves in time is timed."""


def check(bot: pb.ProtocolBot, **kw: Any) -> Any:
    kw.setdefault("deadline_ms", AMPLE_MS)
    kw.setdefault("describe_deadline_ms", AMPLE_MS)
    with pb.running(bot):
        return health_check(bot.url, LOCAL, **kw)


def test_good_bot_passes() -> None:
    bot = pb.ProtocolBot(name="healthy")
    result = check(bot)
    assert result.ok and result.reason == ""
    assert result.info == {"protocol": 1, "name": "healthy", "author": "tests", "version": "1.0"}
    assert result.describe_ms is not None and result.move_ms is not None
    assert bot.describes == 1 and len(bot.moves) == 1 and len(bot.starts) == 1
    assert re.fullmatch(r"m-[0-9a-f]{16}", bot.moves[0]["match_id"])
    assert bot.starts[0]["match_id"] == bot.moves[0]["match_id"] and not bot.ends


def test_signed_health_check() -> None:
    bot = pb.ProtocolBot(secret=b"k")
    with pb.running(bot):
        assert health_check(bot.url, LOCAL, secret=b"k", deadline_ms=AMPLE_MS,
                            describe_deadline_ms=AMPLE_MS).ok
    assert bot.bad_signatures == 0


def test_bad_description_fails() -> None:
    result = check(pb.ProtocolBot(description={"protocol": 2, "name": "x", "author": "",
                                               "version": ""}))
    assert not result.ok and result.reason.startswith(
        "GET /: bad description: 'protocol' must be 1")
    result = check(pb.ProtocolBot(description={"protocol": 1, "author": "", "version": ""}))
    assert not result.ok and "'name'" in result.reason


def test_illegal_probe_answer_fails() -> None:
    result = check(pb.ProtocolBot(misbehave=pb.not_in_hand, bad_moves={0}))
    assert not result.ok and result.reason.startswith(
        "POST /move: cards not in hand: the answer plays cards the bot does not hold")
    result = check(pb.ProtocolBot(misbehave=pb.error_500, bad_moves={0}))
    assert not result.ok and result.reason.startswith(
        "POST /move: HTTP error status: answered HTTP 500")


def test_slow_probe_fails_at_the_deadline() -> None:
    bot = pb.ProtocolBot(misbehave=pb.hang, bad_moves={0})
    t0 = time.monotonic()
    result = check(bot, deadline_ms=300)
    # Ended by the deadline, not by the bot (it hangs for 30 s); the well-behaved calls before
    # it (GET /, /start) may take seconds on a busy machine.
    assert time.monotonic() - t0 < 15
    assert not result.ok
    assert result.reason == "POST /move: no HTTP answer from the bot URL within 0.3 s"
    assert result.info is not None and result.move_ms is None  # no timing to learn from


def test_hanging_describe_fails() -> None:
    with bb.serving(bb.hang) as bot:
        t0 = time.monotonic()
        result = health_check(bot.url, LOCAL, describe_deadline_ms=300)
        assert time.monotonic() - t0 < 15  # the deadline ended it, not the bot (30 s)
    assert not result.ok
    assert result.reason == "GET /: no HTTP answer from the bot URL within 0.3 s"


def test_private_address_refused_by_default() -> None:
    bot = pb.ProtocolBot()
    with pb.running(bot):
        result = health_check(bot.url)  # the public policy
    assert not result.ok and "names an address the arena does not call" in result.reason
    assert bot.server is not None and bot.server.connections == 0


def test_check_player_in_process() -> None:
    assert check_player(LocalPlayer(lambda r: {"move": r["legal_moves"][0]["id"]})).ok
    result = check_player(LocalPlayer(lambda r: {"move": "pass"}))  # may not pass on the lead
    assert not result.ok and "not one of the request's legal_moves" in result.reason


def test_default_probe_is_the_lead_of_a_real_deal() -> None:
    bot = pb.ProtocolBot()
    check(bot)
    request = bot.moves[0]
    assert request["turn"] == 0 and request["must_include"] == "3D"
    assert all("3D" in m["cards"] for m in request["legal_moves"])


def test_drawn_probe_plays_the_real_opening_up_to_the_bots_seat() -> None:
    rng = random.Random(5)
    limits = Limits(deadline_ms=800, time_bank_ms=4000, max_strikes=7)
    for _ in range(4):
        probe = Probe.draw(rng, rulesets=[find_ruleset("standard")], deals=3, limits=limits,
                           opponents=[("alice", "a", "1"), ("bob", "b", "2")])
        bot = pb.ProtocolBot()
        assert check(bot, probe=probe).ok
        start, move = bot.starts[0], bot.moves[0]
        assert start["seat"] == move["seat"] == probe.seat and start["deals"] == 3
        assert (start["deadline_ms"], start["time_bank_ms"], start["max_strikes"]) == (800, 4000, 7)
        names = [s["name"] for s in start["seats"]]
        assert names[probe.seat] == "proto" and {"alice", "bob"} <= set(names)
        assert move["match_id"] == probe.match_id and move["deal_id"] == f"{probe.match_id}/0"


NO_ANSWER = "no HTTP answer from the bot URL within 0.5 s"


def test_transport_failures_read_the_same() -> None:
    """Refused, reset, closed, silent, not HTTP: one text, no latency (no port scanner)."""
    closed = closed_port_url()
    reasons = {}
    results = [health_check(closed, LOCAL, describe_deadline_ms=500)]
    for behaviour in (bb.reset, bb.silent, bb.hang, bb.close_after_request,
                      bb.raw_answer(b"SSH-2.0-OpenSSH_9.2\r\n")):
        with bb.serving(behaviour) as bot:
            results.append(health_check(bot.url, LOCAL, describe_deadline_ms=500))
    for r in results:
        reasons[r.reason] = r
        assert not r.ok and r.describe_ms is None and r.no_answer
    assert list(reasons) == [f"GET /: {NO_ANSWER}"]


def test_http_level_failures_are_precise_and_name_no_internals() -> None:
    cases = [
        (pb.ProtocolBot(misbehave=pb.error_500, bad_moves={0}), "answered HTTP 500"),
        (pb.ProtocolBot(misbehave=pb.invalid_json, bad_moves={0}), "not JSON"),
        (pb.ProtocolBot(misbehave=pb.redirect, bad_moves={0}), "never follows redirects"),
        (pb.ProtocolBot(misbehave=pb.unknown_id, bad_moves={0}),
         "move id is not one of the request's legal_moves"),
        (pb.ProtocolBot(misbehave=pb.not_an_object, bad_moves={0}), "not an object"),
        (pb.ProtocolBot(misbehave=pb.wrong_turn, bad_moves={0}),
         "for another turn than the one asked"),
    ]
    for bot, words in cases:
        result = check(bot)
        assert not result.ok and result.reason.startswith("POST /move: "), result.reason
        assert words in result.reason, result.reason
        assert not result.no_answer and result.move_ms is not None
        for internal in ("_Pinned", "Connection(", "host=", "Error", "127.0.0.1", "errno"):
            assert internal not in result.reason, result.reason


CLASS_NAME = re.compile(r"\b_?[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+\b|\w+Error\b|\w+\(\w+=")
"""A Python class name (``_PinnedHTTPConnection``, ``ConnectionResetError``) or a repr
(``HTTPConnection(host=``)."""


def test_every_failure_reads_in_words_without_internals() -> None:
    """Issue 11: a failure once read ``_PinnedHTTPConnection(host=...)``.  Every transport
    fault (with and without an HTTP status), every refused answer and an unknown fault code
    read as words for the bot's author, whatever internal text the detail carries: no class
    name, no repr, no address, no fault code."""
    from referee.runner.faults import ANSWER_TEXTS
    from referee.runner.health import failure_reason
    from referee.wire.httpbot import Fault
    from referee.wire.protocol import AnswerFault

    hostile = ("_PinnedHTTPConnection(host='bot.internal', port=443): "
               "ConnectionResetError(104, 'Connection reset by peer') at 10.0.0.7")
    assert set(ANSWER_TEXTS) >= {f.value for f in AnswerFault}
    cases = [(f.value, s) for f in Fault for s in (None, 502)] + \
        [(f.value, 200) for f in AnswerFault] + [("some_new_fault", 200)]
    for fault, status in cases:
        for call in ("GET /", "POST /move"):
            detail = hostile if fault in {f.value for f in Fault} else "no legal move has id 'x'"
            reason, _ = failure_reason(call, fault, detail, status, 1.0)
            assert reason.startswith(f"{call}: "), reason
            words = reason.removeprefix(f"{call}: ")
            assert not CLASS_NAME.search(words), (fault, reason)
            for internal in ("bot.internal", "10.0.0.7", "host=", "errno", "Traceback"):
                assert internal not in words, (fault, reason)
            if "_" in fault:
                assert fault not in words, (fault, reason)  # the code itself is not words
            assert re.search(r"[a-z]{3,} [a-z]{2,}", words), (fault, reason)
