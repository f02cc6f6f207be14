"""The command line: verify, play (against loopback bots), health, demo, protocol-example."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from referee.__main__ import main
from referee.runner import log as mlog
from tests.referee import protocolbots as pb

ROOT = Path(__file__).resolve().parents[3]


def test_demo_writes_a_log_that_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    path = tmp_path / "demo.jsonl"
    assert main(["demo", "--deals", "3", "--seed", "4", "--log", str(path)]) == 0
    out = capsys.readouterr().out
    assert "deal  1:" in out and "rank seat" in out
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "valid: match demo-4, standard, 3 deals" in out


def test_verify_names_the_first_bad_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    good = tmp_path / "good.json"
    assert main(["demo", "--deals", "2", "--log", str(good)]) == 0
    doc = mlog.read(good)
    doc["deals"][1]["turns"][6]["legal"] += 3
    bad = tmp_path / "bad.json"
    mlog.write(doc, bad)
    capsys.readouterr()
    assert main(["verify", str(bad)]) == 1
    out = capsys.readouterr().out
    # The log's deal 1, turn 6 (indices) is the second deal's seventh turn: people count
    # from 1, and so does every message (referee.game.numbering).
    assert "INVALID at deal 2, turn 7:" in out and "legal moves" in out


def test_verify_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(tmp_path / "missing.json")]) == 2
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"type": "turn"}\n{"type": "turn"}\n')
    assert main(["verify", str(junk)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_play_against_local_bots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bots = [pb.ProtocolBot(name=f"b{i}") for i in range(4)]
    path = tmp_path / "match.json"
    with pb.running(*bots):
        code = main(["play", *[b.url for b in bots], "--deals", "2", "--seed", "9",
                     "--log", str(path), "--allow-private", "--deadline-ms", "2000",
                     "--time-bank-ms", "500"])
    assert code == 0
    out = capsys.readouterr().out
    assert "match match-9: standard, 2 deals, seed 9" in out
    for i in range(4):
        assert f"b{i}" in out
    doc = mlog.read(path)
    assert doc["limits"]["deadline_ms"] == 2000 and doc["limits"]["time_bank_ms"] == 500
    assert all("url" not in s and s["player"] is None for s in doc["seats"])
    assert not any(b.url.split("//")[1] in path.read_text() for b in bots)
    assert mlog.verify(doc).ok


def test_play_refuses_private_addresses_without_the_flag(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    bots = [pb.ProtocolBot() for _ in range(4)]
    with pb.running(*bots):
        code = main(["play", *[b.url for b in bots], "--deals", "1", "--max-strikes", "2"])
    assert code == 0
    out = capsys.readouterr().out
    assert "address not allowed: " in out and "(forfeited)" in out  # the fault's name
    assert all(b.server is not None and b.server.connections == 0 for b in bots)


def test_play_needs_one_url_per_seat(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["play", "http://127.0.0.1:9/"])
    assert "needs 4 bot URLs" in capsys.readouterr().err


def test_health_command(capsys: pytest.CaptureFixture[str]) -> None:
    bot = pb.ProtocolBot(name="hc")
    with pb.running(bot):
        assert main(["health", bot.url, "--allow-private"]) == 0
        assert json.loads(capsys.readouterr().out)["ok"] is True
        assert main(["health", bot.url]) == 1
        assert "names an address the arena does not call" in capsys.readouterr().out


def test_play_and_health_sign_as_the_arena(capsys: pytest.CaptureFixture[str]) -> None:
    """``--secret`` signs every request (version 2, one entry per comma-separated secret, as
    in a rotation's grace period; plus version 1 unless ``--no-signature-v1``)."""
    bots = [pb.ProtocolBot(name=f"s{i}", secret=b"old" if i % 2 else b"new") for i in range(4)]
    with pb.running(*bots):
        assert main(["play", *[b.url for b in bots], "--deals", "1", "--allow-private",
                     "--secret", "new,old", "--no-signature-v1"]) == 0
        played = [list(b.server.requests) for b in bots if b.server is not None]
        assert main(["health", bots[1].url, "--allow-private", "--secret", "old"]) == 0
        assert bots[1].server is not None
        checked = bots[1].server.requests[len(played[1]):]
    capsys.readouterr()
    assert all(played) and checked
    assert all(b.bad_signatures == 0 for b in bots), [b.signature_problems for b in bots]
    assert not any("x-bigtwo-signature" in r.headers for reqs in played for r in reqs)
    assert all("x-bigtwo-signature" in r.headers for r in checked)


def test_protocol_example_command_runs_as_a_module() -> None:
    out = subprocess.run([sys.executable, "-m", "referee", "protocol-example"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert '"type": "move"' in out and '"say": "low and steady"' in out


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("object.json", '{"hello": "world"}\n'),
        ("other-format.json", '{"format": "something-else", "version": 1, "deals": []}\n'),
        ("array.json", "[1, 2, 3]\n"),
        ("number.json", "42\n"),
        ("header.jsonl", '{"type": "header", "format": "not-a-log"}\n'),
    ],
)
def test_verify_json_that_is_not_a_log_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    """docs/logs.md: 'The exit status is 0 for a valid log, 1 for an invalid one, 2 for a file
    that is not a log.'  A JSON file of another kind used to exit 1 ('malformed log')."""
    path = tmp_path / name
    path.write_text(text)
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err


@pytest.mark.parametrize("text", ["hello, I am not a log\n", "hello\nworld\n", "{not json"])
def test_verify_text_that_is_not_json_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """A text file is not 'an empty log': the message says it is not JSON (exit 2)."""
    path = tmp_path / "notes.txt"
    path.write_text(text)
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not JSON" in err and "empty log" not in err


def test_request_prints_the_body_a_logged_turn_was_sent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "demo.jsonl"
    assert main(["demo", "--deals", "2", "--seed", "3", "--log", str(path)]) == 0
    doc = mlog.read(path)
    turn = doc["deals"][1]["turns"][5]
    capsys.readouterr()
    assert main(["request", str(path), "--deal", "2", "--turn", "6"]) == 0  # from 1
    body = json.loads(capsys.readouterr().out)
    assert body["type"] == "move" and body["turn"] == 5 and body["seat"] == turn["seat"]
    assert body["deal_id"] == f"{doc['match_id']}/1"
    assert turn["move"] in {m["id"] for m in body["legal_moves"]}
    assert main(["request", str(path), "--deal", "2", "--turn", "999"]) == 1
    assert main(["request", str(tmp_path / "missing.json"), "--deal", "1", "--turn", "1"]) == 2
    with pytest.raises(SystemExit) as exc:  # 0 is no number people count with
        main(["request", str(path), "--deal", "0", "--turn", "1"])
    assert exc.value.code == 2
    assert "numbered from 1" in capsys.readouterr().err
