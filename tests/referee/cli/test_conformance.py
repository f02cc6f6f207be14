"""The conformance kit against real loopback bots: a good bot passes; a bot that breaks one
family of the protocol fails that family's checks, with the advice for it."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.__main__ import main
from referee.cli.conformance_kit import FAIL, PASS, SKIP, WARN, Kit, Report, add_unknown_fields
from referee.cli.move_shapes import VARIANTS, all_samples
from referee.game.presets import preset_names
from referee.runner.health import health_check
from referee.runner.match import Limits
from referee.wire.netguard import NetPolicy
from tests.referee import protocolbots as pb
from tests.referee import sdkbots
from tests.referee.badbots import BadBot, read_request, response_bytes

ROOT = Path(__file__).resolve().parents[3]
LOCAL = NetPolicy(allow_private=True)
GENEROUS = Limits(deadline_ms=10_000, call_deadline_ms=10_000)
"""Deadlines no well-behaved bot misses on a busy machine."""
SECRET = b"kit-secret-0123456789"


def run_kit(url: str, secret: bytes | None = None, limits: Limits = GENEROUS,
            policy: NetPolicy = LOCAL) -> Report:
    return Kit(url, secret=secret, policy=policy, limits=limits).run()


def by_status(report: Report, status: str) -> set[str]:
    return {c.id for c in report.checks if c.status == status}


def check(report: Report, cid: str) -> Any:
    return next(c for c in report.checks if c.id == cid)


def move_ids() -> set[str]:
    return {f"move:{s.rules}:{'+'.join(s.tags)}" for s in all_samples(GENEROUS)}


# --------------------------------------------------------------------------- a good bot


def test_a_well_behaved_bot_passes_every_check() -> None:
    with sdkbots.sdk_bot() as bot:
        report = run_kit(bot.url)
    assert report.ok
    assert by_status(report, FAIL) == set() and by_status(report, WARN) == set()
    assert by_status(report, SKIP) == {"signing"}  # no --secret
    families = {c.family for c in report.checks}
    assert families == {"phases", "moves", "history", "forward", "keepalive", "signing",
                        "latency"}
    ids = {c.id for c in report.checks}
    assert move_ids() <= ids
    assert {"describe", "start", "end", "history:long", "forward:move", "forward:start",
            "forward:end", "keepalive", "latency:POST /move"} <= ids
    # Every preset is sent, with every special shape and deal size.
    sent = {c.id.split(":")[1] for c in report.checks if c.family == "moves"}
    assert set(preset_names()) | set(VARIANTS) <= sent
    tags = {t for c in report.checks if c.family == "moves" for t in c.id.split(":")[2].split("+")}
    assert {"lead", "follow", "out-of-turn", "decision-give", "decision-trade", "exchanges",
            "spare", "own-draws"} <= tags
    players = {s.players for s in all_samples(GENEROUS)}
    assert players == {2, 3, 4}


def test_the_command_prints_a_line_per_check_a_summary_and_json(
        capsys: pytest.CaptureFixture[str]) -> None:
    with sdkbots.sdk_bot() as bot:
        args = [bot.url, "--allow-private", "--deadline-ms", "10000",
                "--call-deadline-ms", "10000"]
        assert main(["conformance", *args]) == 0
        out = capsys.readouterr().out.splitlines()
        assert main(["conformance", *args, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
    checks = [line for line in out if re.match(r"(PASS|WARN|FAIL|SKIP)  ", line)]
    assert len(checks) == len(doc["checks"])
    assert out[-2].startswith("summary: ") and "ready for the arena" in out[-2]
    assert "--secret" in out[-1]
    assert set(doc) == {"kit_version", "url", "ok", "secret_checked", "deadlines", "summary",
                        "checks", "latency"}
    assert doc["ok"] is True and doc["secret_checked"] is False and doc["kit_version"] == 1
    assert set(doc["summary"]) == {"pass", "warn", "fail", "skip"}
    for item in doc["checks"]:
        assert set(item) == {"id", "family", "title", "status", "detail", "fix", "call",
                             "latency_ms"}
    assert {row["call"] for row in doc["latency"]} == {"GET /", "POST /start", "POST /move",
                                                       "POST /end"}
    assert set(doc["latency"][0]) == {"call", "calls", "p50_ms", "p95_ms", "max_ms",
                                      "deadline_ms"}


# --------------------------------------------------------------------------- each family


def test_a_bad_description_fails_get_with_its_fix() -> None:
    bot = pb.ProtocolBot(description={"protocol": 1, "name": " ", "author": "", "version": ""})
    with pb.running(bot):
        report = run_kit(bot.url)
    assert by_status(report, FAIL) == {"describe"}
    assert "GET /" in check(report, "describe").fix and "name" in check(report, "describe").detail


def test_a_bot_that_only_knows_plays_fails_the_decisions_and_out_of_turn_offers() -> None:
    def plays_only(request: dict[str, Any]) -> dict[str, Any]:
        if request["phase"] != "play":
            return {"move": "x" + request["legal_moves"][-1]["id"]}
        return pb.first_legal(request)

    bot = pb.ProtocolBot(policy=plays_only)
    with pb.running(bot):
        report = run_kit(bot.url)
    special = {f"move:{s.rules}:{'+'.join(s.tags)}" for s in all_samples(GENEROUS)
               if s.request["phase"] != "play"}
    assert special and by_status(report, FAIL) == special
    for cid in special:
        c = check(report, cid)
        assert "legal_moves" in c.fix and ("phase \"decision\"" in c.fix
                                           or "phase \"out-of-turn\"" in c.fix)


@pytest.mark.parametrize(("misbehave", "words", "fix"), [
    (pb.unknown_id, "not one of the request's legal_moves", "ids listed"),
    (pb.wrong_turn, "another turn", "echo the request's own \"turn\""),
    (pb.error_500, "answered HTTP 500", "look at its log"),
    (pb.invalid_json, "not JSON", "strict JSON"),
    (pb.not_in_hand, "does not hold", "hand"),
])
def test_a_bad_move_answer_fails_every_move_with_the_referees_words(
        misbehave: pb.Misbehaviour, words: str, fix: str) -> None:
    bot = pb.ProtocolBot(misbehave=misbehave, bad_moves=set(range(10_000)))
    with pb.running(bot):
        report = run_kit(bot.url)
    assert not report.ok
    assert move_ids() | {"history:long", "forward:move"} <= by_status(report, FAIL)
    c = check(report, "move:standard:lead")
    assert words in c.detail and fix in c.fix
    assert check(report, "describe").status == PASS


def test_a_bot_that_chokes_on_a_long_history_fails_that_check_only() -> None:
    assert max(len(s.request["history"]) for s in all_samples(GENEROUS)) <= 100
    with sdkbots.sdk_bot(sdkbots.failing_when(lambda r: len(r["history"]) > 100)) as bot:
        report = run_kit(bot.url)
    assert by_status(report, FAIL) == {"history:long"}
    assert "whole history" in check(report, "history:long").fix


def test_a_bot_refusing_unknown_fields_fails_forward_compatibility() -> None:
    with sdkbots.sdk_bot(sdkbots.failing_when(lambda r: "x_future_field" in r, 400)) as bot:
        report = run_kit(bot.url)
    assert by_status(report, FAIL) == {"forward:move"}
    c = check(report, "forward:move")
    assert "HTTP 400" in c.detail and "Ignore fields you do not know" in c.fix
    handler = sdkbots.failing_start_end_when(lambda body: "x_future_field" in body)
    with sdkbots.sdk_bot(handler) as bot:
        report = run_kit(bot.url)
    assert report.ok  # /start and /end failures cost no strike: warnings
    assert by_status(report, WARN) == {"forward:start", "forward:end"}
    assert "ignore fields you do not know" in check(report, "forward:end").fix


def test_unknown_fields_are_added_at_every_level_of_a_copy() -> None:
    follow = next(s for s in all_samples(GENEROUS) if "follow" in s.tags).request
    before = follow.encoded()
    extended = add_unknown_fields(follow)
    assert follow.encoded() == before  # the sample is untouched
    assert "x_future_field" in extended and "x_future_field" in extended["rules"]
    assert "x_future_field" in extended["rules"]["options"]
    assert all("x_future_field" in m for m in extended["legal_moves"])
    assert all("x_future_field" in h for h in extended["history"])
    assert "x_future_field" in extended["table"]


def test_keep_alive_a_bot_that_closes_each_connection_is_warned() -> None:
    with sdkbots.sdk_bot(sdkbots.ClosingHandler) as bot:
        report = run_kit(bot.url)
    assert report.ok and by_status(report, WARN) == {"keepalive"}
    assert "keep connections open" in check(report, "keepalive").fix


def _first_answer_only(conn: socket.socket, server: BadBot) -> None:
    """Answers the first request of a connection like a bot, every later one with a 400."""
    buf = bytearray()
    first = True
    while True:
        req = read_request(conn, buf)
        if req is None:
            return
        if req.method == "GET":
            payload: dict[str, Any] = {"protocol": 1, "name": "once", "author": "", "version": ""}
        elif req.path.endswith("/move"):
            payload = pb.first_legal(json.loads(req.body))
        else:
            payload = {}
        if first:
            conn.sendall(response_bytes(json.dumps(payload).encode()))
            first = False
        else:
            conn.sendall(response_bytes(b'{"error": "bad request"}', "400 Bad Request"))


def test_keep_alive_a_bot_that_breaks_on_a_reused_connection_fails() -> None:
    bot = BadBot(_first_answer_only).start()
    try:
        report = run_kit(bot.url)
    finally:
        bot.close()
    c = check(report, "keepalive")
    assert c.status == FAIL and "request 2" in c.detail and "kept-alive" in c.fix


def test_a_bot_that_hangs_on_moves_times_out_then_the_moves_are_skipped() -> None:
    bot = pb.ProtocolBot(misbehave=pb.hang, bad_moves=set(range(10_000)))
    with pb.running(bot):
        report = run_kit(bot.url, limits=Limits(deadline_ms=300, call_deadline_ms=10_000))
    moves = [c for c in report.checks if c.family in ("moves", "history", "forward")
             and c.call == "POST /move"]
    assert [c.status for c in moves[:3]] == [FAIL] * 3
    assert "no complete answer in time" in moves[0].detail and "answer sooner" in moves[0].fix
    assert {c.status for c in moves[3:]} == {SKIP}
    assert check(report, "keepalive").status == FAIL


def test_latency_near_the_deadline_is_a_warning() -> None:
    kit = Kit("http://127.0.0.1:9", policy=LOCAL, limits=Limits(deadline_ms=1000))
    kit.report.latencies = {"POST /move": [100.0] * 19 + [600.0],
                            "GET /": [2600.0]}
    kit.latency()
    slow_moves, slow_get = kit.report.checks
    assert slow_moves.status == PASS  # p95 of 20: the 19th, 100 ms
    assert slow_get.status == WARN and "52% of the deadline" in slow_get.detail
    kit = Kit("http://127.0.0.1:9", policy=LOCAL, limits=Limits(deadline_ms=1000))
    kit.report.latencies = {"POST /move": [100.0] * 10 + [501.0] * 10}
    kit.latency()
    assert kit.report.checks[0].status == WARN and "answer faster" in kit.report.checks[0].fix


def test_a_private_url_is_refused_before_any_connection_without_allow_private() -> None:
    bot = pb.ProtocolBot()
    with pb.running(bot):
        report = run_kit(bot.url, policy=NetPolicy())
        assert bot.server is not None and bot.server.connections == 0
    assert check(report, "describe").status == FAIL
    assert "--allow-private" in check(report, "describe").fix
    assert by_status(report, FAIL) == {"describe"}
    assert all(c.status == SKIP for c in report.checks[1:] if c.family != "latency")


# --------------------------------------------------------------------------- signing


def test_a_bot_verifying_version_2_passes_every_signing_check() -> None:
    with sdkbots.sdk_bot(sdkbots.V2Handler, secret=SECRET) as bot:
        report = run_kit(bot.url, secret=SECRET)
    assert report.ok and by_status(report, WARN) == set()
    signing = {c.id for c in report.checks if c.family == "signing"}
    assert signing == {f"signing:{x}" for x in (
        "valid-get", "valid-move", "two-secrets", "v2-only", "unsigned", "wrong-secret",
        "stale", "replayed", "cross-path")}
    assert signing <= by_status(report, PASS)


def test_a_bot_verifying_version_1_only_lets_replays_and_other_paths_through() -> None:
    with sdkbots.sdk_bot(sdkbots.V1Handler, secret=SECRET) as bot:
        report = run_kit(bot.url, secret=SECRET)
    assert by_status(report, FAIL) == {"signing:replayed", "signing:cross-path"}
    assert by_status(report, WARN) == {"signing:v2-only"}
    assert "X-BigTwo-Request-Id" in check(report, "signing:replayed").fix
    assert "request target" in check(report, "signing:cross-path").fix


def test_a_bot_that_verifies_nothing_fails_every_refusal() -> None:
    with sdkbots.sdk_bot() as bot:
        report = run_kit(bot.url, secret=SECRET)
    assert by_status(report, FAIL) == {f"signing:{x}" for x in (
        "unsigned", "wrong-secret", "stale", "replayed", "cross-path")}
    assert "answer 401 when it is missing" in check(report, "signing:unsigned").fix


def test_a_bot_refusing_with_403_is_warned_to_say_401() -> None:
    with sdkbots.sdk_bot(sdkbots.Refuses403Handler, secret=SECRET) as bot:
        report = run_kit(bot.url, secret=SECRET)
    assert report.ok
    assert by_status(report, WARN) == {f"signing:{x}" for x in (
        "unsigned", "wrong-secret", "stale", "replayed", "cross-path")}
    assert "HTTP 403" in check(report, "signing:stale").detail


@pytest.mark.parametrize("secret", [None, b"another-secret"])
def test_a_signing_bot_without_its_secret_stops_at_get(secret: bytes | None) -> None:
    with sdkbots.sdk_bot(sdkbots.V2Handler, secret=SECRET) as bot:
        report = run_kit(bot.url, secret=secret)
    assert by_status(report, FAIL) == {"describe"}
    assert "--secret" in check(report, "describe").fix
    assert "401" in check(report, "start").detail and check(report, "start").status == SKIP


# --------------------------------------------------------------------------- sample bots


@pytest.fixture
def sample_bot(request: pytest.FixtureRequest) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", f"sample_bots.{request.param}", "--port",
                             "0"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert found, line
        yield found.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("sample_bot", ["random_bot", "greedy_bot", "planner_bot"],
                         indirect=True)
def test_every_sample_bot_passes_without_a_secret(sample_bot: str) -> None:
    report = run_kit(sample_bot)
    assert report.ok, [(c.id, c.detail) for c in report.checks if c.status == FAIL]
    assert by_status(report, WARN) == set()


# --------------------------------------------------------------------------- health check


def _bots_the_health_check_refuses() -> list[Any]:
    return [
        pytest.param(pb.ProtocolBot(description={"protocol": 2, "name": "x", "author": "",
                                                 "version": ""}), id="bad-description"),
        pytest.param(pb.ProtocolBot(misbehave=pb.unknown_id, bad_moves=set(range(99))),
                     id="unknown-move"),
        pytest.param(pb.ProtocolBot(misbehave=pb.error_500, bad_moves=set(range(99))),
                     id="http-500"),
        pytest.param(pb.ProtocolBot(misbehave=pb.not_an_object, bad_moves=set(range(99))),
                     id="not-an-object"),
        pytest.param(pb.ProtocolBot(misbehave=pb.hang, bad_moves=set(range(99))), id="hangs"),
    ]


@pytest.mark.parametrize("bot", _bots_the_health_check_refuses())
def test_a_bot_the_health_check_refuses_fails_the_kit(bot: pb.ProtocolBot) -> None:
    limits = Limits(deadline_ms=300, call_deadline_ms=10_000)
    with pb.running(bot):
        health = health_check(bot.url, LOCAL, deadline_ms=300, describe_deadline_ms=10_000)
        report = run_kit(bot.url, limits=limits)
    assert not health.ok
    assert not report.ok


def test_a_bot_the_health_check_accepts_passes_the_kit() -> None:
    bot = pb.ProtocolBot()
    with pb.running(bot):
        health = health_check(bot.url, LOCAL, deadline_ms=10_000, describe_deadline_ms=10_000)
        report = run_kit(bot.url)
    assert health.ok and report.ok
