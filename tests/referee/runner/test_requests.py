"""Requests rebuilt from a log are, byte for byte, the bodies the bots received.

Real HTTP bots on loopback record every ``/move`` body as it arrived; the match's log goes
through JSON (as a stored log does); every request rebuilt from it must encode to the same
bytes.  The match has what changes the next request: strikes (garbage, unknown ids, cards
not held), a forfeit (a bot that keeps failing is not called again), time banks drawn on (a
1 ms deadline: every answer overruns it, however fast) and scores carried across deals.
"""

from __future__ import annotations

import json

import pytest

from referee import find_ruleset
from referee.runner.log import to_document, verify
from referee.runner.match import FORFEITED, Limits, run_match
from referee.runner.requests import move_request_at, move_requests
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer, Player
from tests.referee import protocolbots as pb


def encoded(request: dict[str, object]) -> bytes:
    """As :meth:`referee.wire.httpbot.BotClient.call` encodes a body."""
    return json.dumps(request, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def test_rebuilt_requests_are_the_bytes_each_bot_received() -> None:
    bots = [
        pb.ProtocolBot(name="good"),
        pb.ProtocolBot(name="garbage", misbehave=pb.invalid_json, bad_moves={1, 5}),
        pb.ProtocolBot(name="liar", misbehave=pb.unknown_id, bad_moves={0, 2}),
        pb.ProtocolBot(name="broken", misbehave=pb.error_500, bad_moves=set(range(1000))),
    ]
    limits = Limits(deadline_ms=1, time_bank_ms=600_000, max_strikes=3)
    with pb.running(*bots):
        players: list[Player] = [HttpPlayer(b.url, policy=NetPolicy(allow_private=True))
                                 for b in bots]
        try:
            rec = run_match(find_ruleset("standard"), players, seed=21, deals=3, limits=limits)
        finally:
            for p in players:
                p.close()
    doc = json.loads(json.dumps(to_document(rec)))  # as stored
    assert verify(doc).ok
    turns = [t for d in doc["deals"] for t in d["turns"]]
    assert any(t["fault"] == FORFEITED for t in turns), "seat 3 forfeits"
    assert any(t["bank_ms"] < limits.time_bank_ms for t in turns), "banks are drawn on"
    assert any(t["fault"] == "not_json" for t in turns)
    assert doc["deals"][0]["totals"] != [0, 0, 0, 0]

    for seat, bot in enumerate(bots):
        assert bot.server is not None
        received: dict[tuple[str, int], bytes] = {}
        for r in bot.server.requests:  # a request the referee retried arrives twice
            if r.path.endswith("/move"):
                body = json.loads(r.body)
                received.setdefault((body["deal_id"], body["turn"]), r.body)
        rebuilt = {(req["deal_id"], turn): encoded(req)
                   for _, turn, _, req in move_requests(doc, seat=seat)}
        assert rebuilt == received, f"seat {seat}"
    assert len({k for b in bots[3:] for k in b.keys}) == 3  # the forfeited bot: 3 calls


def test_one_request_and_the_turns_nobody_was_called_at() -> None:
    bots = [pb.ProtocolBot(), pb.ProtocolBot(), pb.ProtocolBot(),
            pb.ProtocolBot(misbehave=pb.error_500, bad_moves=set(range(1000)))]
    with pb.running(*bots):
        players: list[Player] = [HttpPlayer(b.url, policy=NetPolicy(allow_private=True))
                                 for b in bots]
        try:
            rec = run_match(find_ruleset("standard"), players, seed=4, deals=2,
                            limits=Limits(deadline_ms=60_000, time_bank_ms=0, max_strikes=1))
        finally:
            for p in players:
                p.close()
    doc = json.loads(json.dumps(to_document(rec)))
    last = doc["deals"][1]["turns"][-1]
    request = move_request_at(doc, 1, last["turn"])
    if last["fault"] == FORFEITED:
        assert request is None
    else:
        assert request is not None and request["turn"] == last["turn"]
        assert request["deal_id"].endswith("/1") and request["seat"] == last["seat"]
    forfeited = next(t for d in doc["deals"] for t in d["turns"] if t["fault"] == FORFEITED)
    assert move_request_at(doc, forfeited["deal"], forfeited["turn"]) is None


def test_a_log_that_does_not_replay_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="does not replay"):
        list(move_requests({"rules": {"name": "standard"}}))
