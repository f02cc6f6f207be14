"""``python -m referee replay``: a logged match's requests re-sent to a new version of a bot.

A real match is played between four loopback bots and logged; its seat 1 is then replayed
against the same bot, a bot whose answers changed and a bot whose answers are illegal, from
the log (JSON and JSON Lines) and from an owner's calls export built as the arena builds it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.__main__ import main
from referee.runner import log as mlog
from referee.runner.requests import move_requests
from tests.referee import protocolbots as pb
from tests.referee import sdkbots

SEAT = 1
"""The seat replayed: the log's index 1, which people (and ``--seat``) call seat 2."""
SEAT_ARG = str(SEAT + 1)


@dataclass
class Match:
    json_path: Path
    jsonl_path: Path
    doc: dict[str, Any]
    sent: list[bytes]
    """The /move bodies seat 1 received in the match, in order."""

    def seat_requests(self) -> list[tuple[int, int, dict[str, Any]]]:
        return [(d, t, r) for d, t, _, r in move_requests(self.doc, seat=SEAT)]


@pytest.fixture(scope="module")
def match(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Match]:
    tmp = tmp_path_factory.mktemp("replay")
    bots = [pb.ProtocolBot(name=f"b{i}") for i in range(4)]
    path = tmp / "match.json"
    with pb.running(*bots):
        assert main(["play", *[b.url for b in bots], "--deals", "2", "--seed", "5",
                     "--log", str(path), "--allow-private", "--deadline-ms", "10000"]) == 0
    assert bots[SEAT].server is not None
    sent = [r.body for r in bots[SEAT].server.requests if r.path.endswith("/move")]
    doc = mlog.read(path)
    jsonl = tmp / "match.jsonl"
    mlog.write(doc, jsonl)
    yield Match(path, jsonl, doc, sent)


def replay_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["replay", *args, "--allow-private", "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_same_bot_gives_the_same_answers_byte_for_byte_requests(
        match: Match, capsys: pytest.CaptureFixture[str]) -> None:
    bot = pb.ProtocolBot()
    with pb.running(bot):
        code = main(["replay", str(match.json_path), "--seat", SEAT_ARG, bot.url,
                     "--allow-private"])
        assert bot.server is not None
        received = [r.body for r in bot.server.requests if r.path.endswith("/move")]
    out = capsys.readouterr().out
    assert code == 0
    assert received == match.sent  # every request, byte for byte as the seat got it
    n = len(match.sent)
    assert f"summary: {n} requests: {n} same, 0 different, 0 would be strikes" in out
    assert "DIFFERENT" not in out and "STRIKE" not in out


def test_a_changed_bot_is_reported_turn_by_turn(match: Match,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    expected = {(d, t) for d, t, r in match.seat_requests()
                if r["legal_moves"][0]["id"] != r["legal_moves"][-1]["id"]}
    assert expected, "the match gave seat 1 choices"
    with sdkbots.sdk_bot(choose=sdkbots.last_legal) as bot:
        code = main(["replay", str(match.json_path), "--seat", SEAT_ARG, bot.url,
                     "--allow-private"])
        out = capsys.readouterr().out
        code_json, doc = replay_json(capsys, str(match.jsonl_path), "--seat", SEAT_ARG, bot.url)
    assert code == 0 and code_json == 0  # differences are information, not failure
    shown = {(int(d) - 1, int(t) - 1) for d, t in re.findall(  # people count from 1
        r"^deal (\d+), turn (\d+): DIFFERENT", out, re.M)}
    assert shown == expected
    assert {(x["deal"], x["turn"]) for x in doc["turns"] if x["status"] == "different"} == (
        expected)
    assert doc["summary"]["different"] == len(expected) and doc["ok"] is True
    first = next(x for x in doc["turns"] if x["status"] == "different")
    request = next(r for d, t, r in match.seat_requests()
                   if (d, t) == (first["deal"], first["turn"]))
    assert first["logged"]["move"] == request["legal_moves"][0]["id"]
    assert first["now"]["move"] == request["legal_moves"][-1]["id"]
    assert first["now"]["latency_ms"] >= 0 and first["logged"]["latency_ms"] is not None


def test_an_illegal_answering_bot_exits_1_with_the_strikes(
        match: Match, capsys: pytest.CaptureFixture[str]) -> None:
    bot = pb.ProtocolBot(misbehave=pb.unknown_id, bad_moves={0, 2})
    with pb.running(bot):
        code = main(["replay", str(match.json_path), "--seat", SEAT_ARG, bot.url,
                     "--allow-private"])
        out = capsys.readouterr().out
    assert code == 1
    strikes = re.findall(r"^deal (\d+), turn (\d+): STRIKE: (.*)$", out, re.M)
    turns = match.seat_requests()
    assert [(int(d) - 1, int(t) - 1) for d, t, _ in strikes] == [turns[0][:2], turns[2][:2]]
    assert "not one of the request's legal_moves" in strikes[0][2]
    assert "Fix: answer one of the ids listed" in strikes[0][2]
    assert "2 would be strikes" in out and "exit 1" in out


def calls_export(match: Match) -> dict[str, Any]:
    """What ``GET /api/bots/<id>/calls`` answers for the bot in seat 1 (``arena.bots.calls``):
    newest first, each with the request rebuilt from the log; through JSON, as served."""
    turns = {(d["index"], t["turn"]): t for d in match.doc["deals"] for t in d["turns"]}
    items = []
    for d, t, r in match.seat_requests():
        turn = turns[(d, t)]
        items.append({"match_id": 17, "deal": d, "turn": t, "seat": SEAT,
                      "at": "2027-01-01T00:00:00Z", "latency_ms": turn["latency_ms"],
                      "fault": turn["fault"], "detail": turn["detail"], "move": turn["move"],
                      "say": None, "answer": json.dumps({"move": turn["move"]}),
                      "answer_bytes": 20, "answer_truncated": False, "verdict": "ok",
                      "reason": "its answer was played", "request": r})
    items.reverse()
    items.append({**items[-1], "match_id": 3, "request": None})  # its log is gone: skipped
    return json.loads(json.dumps({"bot_id": 7, "kept": 50, "items": items}))


def test_an_owners_calls_export_replays_like_the_log(
        match: Match, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(calls_export(match), indent=1))
    bot = pb.ProtocolBot()
    with pb.running(bot):
        code, doc = replay_json(capsys, str(path), bot.url)
        assert bot.server is not None
        received = [r.body for r in bot.server.requests if r.path.endswith("/move")]
    assert code == 0 and doc["source"] == "calls" and doc["name"] == "calls of bot 7"
    assert received == match.sent  # oldest first, byte for byte
    assert doc["summary"]["same"] == len(match.sent) == doc["summary"]["requests"]
    with sdkbots.sdk_bot(choose=sdkbots.last_legal) as changed:
        _, from_calls = replay_json(capsys, str(path), changed.url)
        _, from_log = replay_json(capsys, str(match.json_path), "--seat", SEAT_ARG,
                                  changed.url)
    assert [(x["deal"], x["turn"], x["status"]) for x in from_calls["turns"]] == [
        (x["deal"], x["turn"], x["status"]) for x in from_log["turns"]]
    code = main(["replay", str(path), "--seat", "1", bot.url, "--allow-private"])
    assert code == 2 and "no request to replay" in capsys.readouterr().err


@pytest.mark.parametrize(("content", "args", "words"), [
    ("not json at all\n", ["--seat", "1"], "not a match log or a calls export"),
    ('{"a": 1}', ["--seat", "1"], "not a match log"),
    (None, [], "--seat N"),
    (None, ["--seat", "5"], "seats 1 to 4"),
])
def test_unreadable_input_exits_2(match: Match, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str], content: str | None,
                                  args: list[str], words: str) -> None:
    path = match.json_path
    if content is not None:
        path = tmp_path / "bad.json"
        path.write_text(content)
    assert main(["replay", str(path), *args, "http://127.0.0.1:9", "--allow-private"]) == 2
    assert words in capsys.readouterr().err


def test_seat_0_is_refused_as_people_count_from_1(match: Match,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["replay", str(match.json_path), "--seat", "0", "http://127.0.0.1:9"])
    assert exc.value.code == 2 and "numbered from 1" in capsys.readouterr().err
