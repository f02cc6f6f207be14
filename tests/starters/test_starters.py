"""The starter bots in starters/ (TypeScript, Go, Java), built with their own toolchains and
run for real as processes on loopback.

Each starter is built into a scratch folder, started with ``--port 0`` (it prints the address
it took), and then:

* asked signed requests whose version 2 headers are made here by the arena's own signer
  (:mod:`referee.wire.signing`): a signed ``GET /`` and ``/move`` are answered (validated
  against the protocol's JSON Schemas, the move one of the listed ids), the very same request
  sent again is refused as ``replayed``, and unsigned, stale, malformed or wrongly signed
  requests are refused with the reason word the arena's own verifier gives for them;
* seated in real matches against the sample bots, played by the referee's match runner
  (:func:`referee.runner.match.run_match`), under several presets (four players, three
  players, card exchanges, bombs out of turn): not one strike, failed call or forfeit.

The matches are signed: the starter holds a secret and the referee's caller signs every request
with it (version 2, plus version 1 during the transition, which the starters ignore), so every
turn of every match is also a signature the starter verified and a request id it remembered.

A missing toolchain skips a starter, saying what to install; where ``CI`` (or
``ARENA_REQUIRE_STARTERS``) is set it fails instead: CI installs every toolchain
(``.ci/run``).
"""

from __future__ import annotations

import fcntl
import hashlib
import http.client
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from referee.game.presets import find_ruleset
from referee.runner.match import Limits, run_match
from referee.wire import signing
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer
from referee.wire.protocol import example_exchange
from sample_bots import greedy_bot, planner_bot, random_bot
from sample_bots.sdk import BotServer, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
STARTERS = ROOT / "starters"
SCHEMAS = ROOT / "referee" / "schemas"
SECRET = "DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs"
GSON_JAR = Path("/usr/share/java/gson.jar")
START_DEADLINE_S = 120.0
"""How long a starter may take to print its address (a cold JVM on a loaded machine)."""


@dataclass(frozen=True)
class Starter:
    language: str
    folder: str
    fixture: str
    """The starter's copy of the protocol's example /move request."""
    install: str
    """What to install when a tool is missing."""

    @property
    def path(self) -> Path:
        return STARTERS / self.folder


JAVASCRIPT = Starter("javascript", "javascript", "test/fixtures/move-request.json",
                     "Node.js 20 or later with npm")
GO = Starter("go", "go", "testdata/move-request.json", "apt-get install golang-go")
JAVA = Starter("java", "java", "src/test/resources/move-request.json",
               "apt-get install openjdk-17-jdk-headless libgoogle-gson-java junit5")
ALL = [JAVASCRIPT, GO, JAVA]


def _required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("ARENA_REQUIRE_STARTERS"))


def _missing_toolchain(starter: Starter, what: str) -> None:
    message = f"the {starter.language} starter needs {what}: {starter.install}"
    if _required():
        pytest.fail(f"{message} (CI installs it in .ci/run; a starter is never skipped there)")
    pytest.skip(message)


def _node_major() -> int:
    out = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    found = re.match(r"v(\d+)\.", out.stdout.strip())
    return int(found.group(1)) if found else 0


def _check_toolchain(starter: Starter) -> None:
    tools = {"javascript": ["node", "npm"], "go": ["go"], "java": ["javac", "jar", "java", "make"]}
    for tool in tools[starter.language]:
        if shutil.which(tool) is None:
            _missing_toolchain(starter, f"`{tool}` on PATH")
    if starter is JAVASCRIPT and _node_major() < 20:
        _missing_toolchain(starter, "Node.js 20 or later")
    if starter is JAVA and not GSON_JAR.is_file():
        _missing_toolchain(starter, str(GSON_JAR))


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (
        f"{' '.join(command)} failed in {cwd} ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    )


def _build(starter: Starter, out: Path) -> list[str]:
    """Build ``starter`` into ``out`` and return the command that runs it."""
    if starter is JAVASCRIPT:
        # npm ci writes node_modules in the source folder: one process at a time.
        lock = Path(tempfile.gettempdir()) / "bigtwo-starters-npm.lock"
        with lock.open("w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            if not (starter.path / "node_modules" / "typescript").is_dir():
                _run(["npm", "ci", "--no-audit", "--no-fund"], starter.path)
        _run(["node", "node_modules/typescript/bin/tsc", "-p", ".", "--outDir", str(out)],
             starter.path)
        return ["node", str(out / "src" / "main.js")]
    if starter is GO:
        _run(["go", "build", "-o", str(out / "bot"), "."], starter.path)
        return [str(out / "bot")]
    _run(["make", "--no-print-directory", "build", f"BUILD={out}"], starter.path)
    return ["java", "-jar", str(out / "bigtwo-starter.jar")]


BUILD_OUTPUTS = {"node_modules", "dist", "build", "target"}


def _source_digest(starter: Starter) -> str:
    """A digest of the starter's sources: a build is reused only for the same sources."""
    digest = hashlib.sha256()
    for path in sorted(starter.path.rglob("*")):
        relative = path.relative_to(starter.path)
        if path.is_file() and not BUILD_OUTPUTS & set(relative.parts):
            digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@pytest.fixture(params=ALL, ids=[s.language for s in ALL])
def starter(request: pytest.FixtureRequest) -> Starter:
    chosen: Starter = request.param
    return chosen


@pytest.fixture
def command(starter: Starter, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that runs ``starter``, built once per test session: the test processes of
    one session (pytest-xdist workers) share the session's temporary root and take turns,
    so the first builds and the others reuse its build."""
    _check_toolchain(starter)
    shared = tmp_path_factory.getbasetemp().parent / "starters"
    shared.mkdir(exist_ok=True)
    out = shared / f"{starter.language}-{_source_digest(starter)}"
    with (shared / f"{starter.language}.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = out / "command.json"
        if not done.is_file():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            done.write_text(json.dumps(_build(starter, out)), encoding="utf-8")
        built: list[str] = json.loads(done.read_text(encoding="utf-8"))
    return built


class RunningBot:
    """A starter process listening on a loopback port; its stderr is kept for messages."""

    def __init__(self, command: list[str], secret: str | None) -> None:
        args = [*command, "--host", "127.0.0.1", "--port", "0"]
        if secret:
            args += ["--secret", secret]
        env = {k: v for k, v in os.environ.items() if k not in ("PORT", "BIGTWO_SECRET", "HOST")}
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     env=env)
        self.lines: list[str] = []
        self.url = self._wait_for_address()
        self.host, port = self.url.removeprefix("http://").split(":")
        self.port = int(port)
        self._drain = threading.Thread(target=self._keep_reading, daemon=True)
        self._drain.start()

    def _wait_for_address(self) -> str:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + START_DEADLINE_S
        buffered = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stderr], [], [], 1.0)
            if not ready:
                if self.proc.poll() is not None:
                    break
                continue
            chunk = os.read(self.proc.stderr.fileno(), 4096)
            if not chunk:
                break
            buffered += chunk
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                self.lines.append(line.decode("utf-8", "replace"))
                found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", self.lines[-1])
                if found:
                    return found.group(1)
        self.stop()
        raise AssertionError("the starter did not print its address:\n" + "\n".join(self.lines))

    def _keep_reading(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@pytest.fixture
def launch(command: list[str]) -> Iterator[Callable[[str | None], RunningBot]]:
    started: list[RunningBot] = []

    def start(secret: str | None) -> RunningBot:
        bot = RunningBot(command, secret)
        started.append(bot)
        return bot

    yield start
    for bot in started:
        bot.stop()


# --------------------------------------------------------------------------- signed requests


@dataclass
class Answer:
    status: int
    data: Any


class Caller:
    """Raw HTTP/1.1 on one kept-alive connection, with version 2 headers made here."""

    def __init__(self, bot: RunningBot) -> None:
        self.conn = http.client.HTTPConnection(bot.host, bot.port, timeout=60)

    def send(self, method: str, target: str, body: bytes, headers: dict[str, str]) -> Answer:
        self.conn.request(method, target, body=body or None,
                          headers={"Content-Type": "application/json", **headers})
        resp = self.conn.getresponse()
        raw = resp.read()
        return Answer(resp.status, json.loads(raw) if raw else None)

    def close(self) -> None:
        self.conn.close()


def v2_headers(
    method: str,
    target: str,
    body: bytes,
    *,
    secret: str = SECRET,
    timestamp: int | None = None,
    request_id: str | None = None,
) -> dict[str, str]:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    rid = request_id or signing.new_request_id()
    return {
        signing.TIMESTAMP_HEADER: stamp,
        signing.REQUEST_ID_HEADER: rid,
        signing.SIGNATURES_HEADER: signing.signatures_value(
            [secret.encode()], method, target, stamp, rid, body
        ),
    }


def arena_reason(method: str, target: str, body: bytes, headers: dict[str, str]) -> str:
    """What the arena's own verifier says of a request (fresh replay memory)."""
    problem = signing.verify_v2(
        [SECRET.encode()], method, target, body,
        timestamp=headers.get(signing.TIMESTAMP_HEADER),
        request_id=headers.get(signing.REQUEST_ID_HEADER),
        signatures=headers.get(signing.SIGNATURES_HEADER),
        replay_cache=signing.ReplayCache(),
    )
    return problem[0] if problem else "accepted"


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


@pytest.mark.drill
def test_signed_requests_are_answered_and_replays_refused(
    starter: Starter, launch: Callable[[str | None], RunningBot]
) -> None:
    bot = launch(SECRET)
    caller = Caller(bot)
    try:
        headers = v2_headers("GET", "/", b"")
        described = caller.send("GET", "/", b"", headers)
        assert described.status == 200, described
        jsonschema.validate(described.data, schema("describe-answer"))

        again = caller.send("GET", "/", b"", headers)
        assert again.status == 401, again
        assert again.data["reason"] == "replayed" and isinstance(again.data["error"], str)

        request, _ = example_exchange()
        body = json.dumps(request).encode()
        moved = caller.send("POST", "/move", body, v2_headers("POST", "/move", body))
        assert moved.status == 200, moved
        jsonschema.validate(moved.data, schema("move-answer"))
        assert moved.data["move"] in [m["id"] for m in request["legal_moves"]]
        assert moved.data.get("turn", request["turn"]) == request["turn"]
    finally:
        caller.close()


REFUSED: list[tuple[str, Callable[[bytes], tuple[str, dict[str, str]]]]] = [
    ("unsigned", lambda body: ("/move", {})),
    ("another secret", lambda body: ("/move", v2_headers("POST", "/move", body, secret="x" * 43))),
    ("signed for another path", lambda body: ("/move", v2_headers("POST", "/end", body))),
    ("stale", lambda body: ("/move", v2_headers("POST", "/move", body,
                                                timestamp=int(time.time()) - 400))),
    ("malformed request id", lambda body: ("/move", v2_headers("POST", "/move", body,
                                                               request_id="A" * 32))),
    ("no v2 entry", lambda body: ("/move", {
        **v2_headers("POST", "/move", body), signing.SIGNATURES_HEADER: "v9=00"})),
]


@pytest.mark.drill
def test_refusals_name_the_reason_the_arena_would(
    starter: Starter, launch: Callable[[str | None], RunningBot]
) -> None:
    bot = launch(SECRET)
    caller = Caller(bot)
    request, _ = example_exchange()
    body = json.dumps(request).encode()
    try:
        for label, make in REFUSED:
            target, headers = make(body)
            expected = arena_reason("POST", target, body, headers)
            assert expected != "accepted", label
            got = caller.send("POST", target, body, headers)
            assert got.status == 401, (label, got)
            assert got.data["reason"] == expected, (label, got.data)

        bad = b'{"legal_moves": [}'
        malformed = caller.send("POST", "/move", bad, v2_headers("POST", "/move", bad))
        assert malformed.status == 400, malformed
        assert isinstance(malformed.data["error"], str)
    finally:
        caller.close()


# --------------------------------------------------------------------------- real matches


MATCHES = [
    # (preset, deals, the starter's seat): four and three players, card exchanges from the
    # second deal (president), bombs out of turn (bu-bu-gao-sheng).
    ("standard", 2, 0),
    ("three-player", 2, 1),
    ("president", 3, 2),
    ("bu-bu-gao-sheng", 2, 3),
]


@pytest.fixture
def sample_bots() -> Iterator[list[BotServer]]:
    servers = [
        serve_in_thread(module.choose, name=module.NAME, host="127.0.0.1", port=0)
        for module in (greedy_bot, planner_bot, random_bot)
    ]
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.drill
def test_plays_real_signed_matches_without_a_strike(
    starter: Starter,
    launch: Callable[[str | None], RunningBot],
    sample_bots: list[BotServer],
) -> None:
    bot = launch(SECRET)
    policy = NetPolicy(allow_private=True)
    # Generous limits: a well-behaved bot on a loaded machine must not be cut off.
    limits = Limits(deadline_ms=20_000, time_bank_ms=0, max_strikes=None,
                    call_deadline_ms=20_000)
    for preset, deals, seat in MATCHES:
        rules = find_ruleset(preset)
        others = [s.url for s in sample_bots][: rules.players - 1]
        urls = [*others[:seat], bot.url, *others[seat:]]
        players = [
            HttpPlayer(u, policy=policy, secret=SECRET.encode() if u == bot.url else None)
            for u in urls
        ]
        try:
            rec = run_match(rules, players, seed=7, deals=deals, limits=limits,
                            match_id=f"starter-{starter.language}-{preset}")
        finally:
            for p in players:
                p.close()
        context = f"{starter.language} in {preset}:\n" + "\n".join(bot.lines[-20:])
        assert len(rec.deals) == deals, context
        assert rec.seats[seat].name.startswith("starter-"), context
        assert [s for s in rec.strikes if s.seat == seat] == [], context
        assert [n for n in rec.notes if n.seat == seat] == [], context
        assert not [f for f in rec.forfeits if f.seat == seat], context
        played = [t for d in rec.deals for t in d.turns if t.seat == seat]
        assert played and all(t.fault is None for t in played), context


# --------------------------------------------------------------------------- fixtures in sync


@pytest.mark.parametrize("starter", ALL, ids=[s.language for s in ALL])
def test_each_starter_tests_against_the_current_example_request(starter: Starter) -> None:
    """Every starter's own tests read a copy of the protocol's example /move request; the copy
    must be the current one (regenerate: ``python -m referee protocol-example``, first
    object)."""
    copy = json.loads((starter.path / starter.fixture).read_text(encoding="utf-8"))
    request, _ = example_exchange()
    assert copy == json.loads(json.dumps(request))
