"""The call deadline holds for every response framing, every phase and every entry point.

Each bot here trickles one byte every ``INTERVAL`` seconds for far longer (>= 5 s) than the
deadline; a per-``recv`` timeout never fires on such a bot, so only a bound on the whole
exchange can stop it.  Every entry point the referee has (``POST /move``, ``/start``,
``/end``, ``GET /``, and both calls of the health check) is called at once against the same
bots, and each must come back with a ``timeout`` fault within ``DEADLINE + SLACK``: a generous
margin, so a loaded machine cannot fail these, while a client held by the bot runs for
seconds past it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from referee.game.presets import find_ruleset
from referee.runner.health import Probe, check_player
from referee.runner.match import Limits
from referee.wire.httpbot import BotClient, Fault
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer
from tests.referee import badbots as bb

LOCAL = NetPolicy(allow_private=True)
DEADLINE = 0.5
SLACK = 1.5
INTERVAL = 0.05
BODY = 200  # bytes: 10 s of trickle at INTERVAL


@dataclass
class Outcome:
    entry: str
    elapsed: float
    timed_out: bool
    detail: str


ClientFactory = Callable[[str], BotClient]


def plain_client(url: str) -> BotClient:
    return BotClient(url, policy=LOCAL)


def _entry_points(factory: ClientFactory, url: str, describe_ok_url: str
                  ) -> dict[str, Callable[[], Outcome]]:
    def client_call(name: str, run: Callable[[BotClient], object]) -> Callable[[], Outcome]:
        def go() -> Outcome:
            with factory(url) as client:
                t0 = time.monotonic()
                result = run(client)
                elapsed = time.monotonic() - t0
            fault = getattr(result, "fault", None)
            return Outcome(name, elapsed, fault is Fault.TIMEOUT, repr(result))
        return go

    def health(name: str, which_url: str, expect: str) -> Callable[[], Outcome]:
        def go() -> Outcome:
            with factory(which_url) as client:
                t0 = time.monotonic()
                # The probe is a real match opening: its /start (to the same misbehaving
                # server) is held to the same deadline.
                limits = Limits(call_deadline_ms=int(DEADLINE * 1000))
                rules = find_ruleset("standard")
                probe = Probe(rules=rules, seed=0, seat=0, match_id="m-0123456789abcdef",
                              limits=limits)
                result = check_player(HttpPlayer(which_url, client=client), probe=probe,
                                      deadline_ms=int(DEADLINE * 1000),
                                      describe_deadline_ms=int(DEADLINE * 1000)
                                      if expect == "GET /" else 30_000)
                elapsed = time.monotonic() - t0
            # Time only the misbehaving call: the well-behaved GET / before the probe
            # may be slow on a loaded machine.
            # A failure before any HTTP answer withholds the latencies and reads "no HTTP
            # answer" (the check must not tell a timeout from a refusal: no port scanning),
            # so the whole check's elapsed time bounds it then.
            slow_ms = result.move_ms if expect == "POST /move" else None
            if expect == "POST /move" and slow_ms is None:
                # Withheld: the check's time less the /start before the probe (which the
                # misbehaving server holds for at most its own deadline).
                slow_ms = max(0.0, elapsed - DEADLINE - (result.describe_ms or 0) / 1000) * 1000
            ok = not result.ok and (
                result.reason.startswith(f"{expect}: timeout")
                or (result.no_answer and result.reason.startswith(f"{expect}: no HTTP answer")))
            return Outcome(name, slow_ms / 1000 if slow_ms is not None else elapsed, ok,
                           repr(result))
        return go

    return {
        "POST /move": client_call("POST /move", lambda c: c.call("/move", {"t": 1}, DEADLINE)),
        "POST /start": client_call("POST /start",
                                   lambda c: c.call("/start", {"s": 1}, DEADLINE)),
        "POST /end": client_call("POST /end", lambda c: c.call("/end", {"e": 1}, DEADLINE)),
        "GET /": client_call("GET /", lambda c: c.get("/", DEADLINE)),
        "health GET /": health("health GET /", url, "GET /"),
        "health POST /move": health("health POST /move", describe_ok_url, "POST /move"),
    }


def assert_all_cut_off(behaviour: bb.Behaviour, describe_ok: bb.Behaviour,
                       factory: ClientFactory = plain_client, **serve_kw: object) -> None:
    """Run every entry point at once against ``behaviour``; each must time out in time."""
    with (bb.serving(behaviour, **serve_kw) as bot,  # type: ignore[arg-type]
          bb.serving(describe_ok, **serve_kw) as bot2):  # type: ignore[arg-type]
        url = bot.url if "tls" not in serve_kw else f"https://bot.test:{bot.port}"
        url2 = bot2.url if "tls" not in serve_kw else f"https://bot.test:{bot2.port}"
        assert_entry_points_cut_off(factory, url, url2)


def assert_entry_points_cut_off(factory: ClientFactory, url: str, describe_ok_url: str,
                                skip: tuple[str, ...] = ()) -> None:
    outcomes: list[Outcome] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(go: Callable[[], Outcome]) -> None:
        try:
            out = go()
        except BaseException as exc:  # reported below, in the test's thread
            with lock:
                errors.append(exc)
            return
        with lock:
            outcomes.append(out)

    entries = {k: v for k, v in _entry_points(factory, url, describe_ok_url).items()
               if k not in skip}
    threads = [threading.Thread(target=run, args=(go,)) for go in entries.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(outcomes) == len(entries)
    late = [o for o in outcomes if not (o.timed_out and o.elapsed < DEADLINE + SLACK)]
    assert not late, "\n".join(f"{o.entry}: {o.elapsed:.2f}s {o.detail}" for o in late)
    assert all(o.elapsed >= DEADLINE * 0.9 for o in outcomes), outcomes


def _slow_part(framing: str, phase: str) -> int:
    status, head, wire = bb.framed_response(framing, bb.padded_body(BODY))
    skip = {"status-line": 0, "headers": len(status), "body": len(status + head)}[phase]
    return len(status + head + wire) - skip


@pytest.mark.parametrize("phase", bb.PHASES)
@pytest.mark.parametrize("framing", bb.FRAMINGS)
def test_trickling_bot_is_cut_off_at_the_deadline(framing: str, phase: str) -> None:
    assert _slow_part(framing, phase) * INTERVAL >= 5  # the bot would hold us >= 5 s
    assert_all_cut_off(bb.trickle_framed(framing, phase, INTERVAL),
                       bb.trickle_framed(framing, phase, INTERVAL, describe_first=True))


@pytest.mark.parametrize("framing", ["read-to-eof", "chunked", "headers"])
def test_bot_that_never_stops_trickling_is_cut_off(framing: str) -> None:
    assert_all_cut_off(bb.trickle_forever(framing),
                       bb.trickle_forever(framing, describe_first=True))


def test_connect_that_never_completes_is_cut_off() -> None:
    # A listener whose accept queue is full: the kernel drops further SYNs, so connect()
    # hangs (retransmitting) until the client gives up.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers: list[socket.socket] = []
        try:
            while len(fillers) < 16:
                filler = socket.socket()
                filler.settimeout(0.3)
                try:
                    filler.connect(("127.0.0.1", port))
                except TimeoutError:
                    filler.close()
                    break  # the queue is full: the next connect hangs
                fillers.append(filler)
            else:
                pytest.skip("could not fill the accept queue")
            url = f"http://127.0.0.1:{port}"
            assert_entry_points_cut_off(plain_client, url, url, skip=("health POST /move",))
        finally:
            for f in fillers:
                f.close()


def test_bot_that_never_reads_a_large_request_is_cut_off() -> None:
    # Sending: a request far larger than the socket buffers to a bot that never reads it.
    big = {"pad": "x" * (32 << 20)}
    with bb.serving(bb.silent) as bot, BotClient(bot.url, policy=LOCAL) as client:
        result = client.call("/move", big, DEADLINE)
    assert result.fault is Fault.TIMEOUT, result
    assert DEADLINE * 0.9 <= result.latency_s < DEADLINE + SLACK


# --------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def tls_setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, str]]:
    import ssl

    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("bot.test").configure_cert(ctx)
    path: Path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    yield ctx, str(path)


def _tls_factory(ca_path: str) -> ClientFactory:
    def make(url: str) -> BotClient:
        return BotClient(url, policy=LOCAL, ca_bundle=ca_path, resolver=lambda h: ["127.0.0.1"])
    return make


def test_trickled_tls_handshake_is_cut_off(tls_setup: tuple[object, str]) -> None:
    import ssl

    ctx, ca_path = tls_setup
    assert isinstance(ctx, ssl.SSLContext)
    # The server is real: unthrottled, it completes a verifiable handshake for bot.test,
    # so what the client is cut off from below is a genuine (slow) TLS handshake.
    with bb.serving(bb.tls_trickled_handshake(ctx, 0.0)) as fast:
        client_ctx = ssl.create_default_context(cafile=ca_path)
        with socket.create_connection(("127.0.0.1", fast.port), timeout=10) as raw, \
                client_ctx.wrap_socket(raw, server_hostname="bot.test") as tls:
            assert tls.version() is not None
    trickler = bb.tls_trickled_handshake(ctx, INTERVAL)
    factory = _tls_factory(ca_path)
    outcomes: list[Outcome] = []
    with bb.serving(trickler) as bot:
        url = f"https://bot.test:{bot.port}"
        for name, go in _entry_points(factory, url, url).items():
            if name == "health POST /move":
                continue  # the handshake never completes, so GET / is where it stops
            outcomes.append(go())
    late = [o for o in outcomes if not (o.timed_out and o.elapsed < DEADLINE + SLACK)]
    assert not late, late


@pytest.mark.parametrize("framing", bb.FRAMINGS)
def test_trickling_bot_over_tls_is_cut_off(framing: str, tls_setup: tuple[object, str]) -> None:
    ctx, ca_path = tls_setup
    assert_all_cut_off(bb.trickle_framed(framing, "body", INTERVAL),
                       bb.trickle_framed(framing, "body", INTERVAL, describe_first=True),
                       _tls_factory(ca_path), tls=ctx)


@pytest.mark.parametrize("framing", bb.FRAMINGS)
def test_the_test_framings_are_what_they_say(framing: str) -> None:
    # The matrix above is only as good as its servers: parse each framing's bytes with h11
    # and check that it delimits the body the way its name says.
    import h11

    status, head, wire = bb.framed_response(framing, bb.padded_body(50))
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(status + head + wire)
    events = []
    needed_eof = False
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            client.receive_data(b"")  # EOF: only a read-to-EOF body needs it to end
            needed_eof = True
            continue
        events.append(event)
        if isinstance(event, h11.EndOfMessage):
            break
    response = events[0]
    assert isinstance(response, h11.Response)
    names = {k.lower() for k, _ in response.headers}
    assert (b"transfer-encoding" in names) == framing.startswith("chunked")
    assert (b"content-length" in names) == framing.endswith("content-length") or (
        framing == "http/1.0" and b"content-length" in names)
    assert response.http_version == (b"1.0" if framing == "http/1.0" else b"1.1")
    body = b"".join(e.data for e in events if isinstance(e, h11.Data))
    assert body == bb.padded_body(50)
    keeps_alive = framing in ("keep-alive+content-length", "chunked")
    assert needed_eof == (framing == "no-length-read-to-eof")
    assert (client.their_state is h11.DONE and not needed_eof) == keeps_alive
