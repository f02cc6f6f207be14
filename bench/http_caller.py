"""Benchmark the bot HTTP caller (referee.wire.httpbot.BotClient) on loopback.

Two questions:

1. Overhead: what does the guard + deadline + strict parsing cost per call?
   Median time of ``BotClient.call`` against a fast local keep-alive bot versus
   a bare ``requests.Session().post(json=...)`` + ``.json()`` to the same bot,
   and versus the same with ``trust_env = False`` (no per-call proxy/.netrc
   lookups, which BotClient skips too), measured interleaved (rotating order)
   in one run so that drift in machine load hits all equally.  Target: ratio
   <= 1.3 at the median against both baselines.  ``new_connections_during_run``
   shows keep-alive reuse (0 after warm-up).  The same client signing every request as
   the arena does (``botclient_signed``: version 2 with one secret, plus version 1 during the
   transition) is measured in the same rotation: ``ratio_signed_vs_unsigned`` is what
   signing adds to a call.
2. Deadline precision: how long past a 100 ms deadline a hanging bot and a
   bot trickling its body (one byte every 10 ms, which no per-read timeout
   catches) hold the caller, for every body framing (keep-alive or close,
   Content-Length, chunked, read to EOF, HTTP/1.0).  Target: p99 overshoot
   < 20 ms.  The trickle is bounded (2 s), so a client that the framing lets
   the bot hold shows up as ~1.9 s of overshoot rather than hanging the run.

All traffic goes to servers this script starts on 127.0.0.1; every loop is
bounded.  Usage: ``python bench/http_caller.py [--json] [--calls N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.wire.httpbot import BotClient, Fault
from referee.wire.netguard import NetPolicy

Handler = Callable[[socket.socket, threading.Event], None]
SECRET = b"DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs"  # a bot's secret, 43 characters
ANSWER = json.dumps({"play": ["3D", "3C"], "note": "x" * 64}).encode()
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(ANSWER)).encode() + b"\r\n\r\n" + ANSWER)


def _read_request(conn: socket.socket, buf: bytearray) -> bool:
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        buf.extend(chunk)
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        rest += chunk
    buf[:] = rest[length:]
    return True


def fast(conn: socket.socket, stop: threading.Event) -> None:
    buf = bytearray()
    while _read_request(conn, buf):
        conn.sendall(RESPONSE)


def hang(conn: socket.socket, stop: threading.Event) -> None:
    _read_request(conn, bytearray())
    stop.wait(30)


def trickle(conn: socket.socket, stop: threading.Event) -> None:
    if not _read_request(conn, bytearray()):
        return
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n")
    for _ in range(3000):  # bounded: 30 s at most, the client leaves after 0.1 s
        if stop.wait(0.01):
            return
        conn.sendall(b" ")


#: Every HTTP/1.x way to frame a body: (status line, headers, how the body goes on the wire).
FRAMINGS: dict[str, tuple[bytes, bytes, bool]] = {
    "keep-alive+content-length": (b"HTTP/1.1 200 OK", b"Content-Length: %d\r\n", False),
    "close+content-length": (
        b"HTTP/1.1 200 OK", b"Content-Length: %d\r\nConnection: close\r\n", False),
    "no-length-read-to-eof": (b"HTTP/1.1 200 OK", b"", False),
    "http/1.0": (b"HTTP/1.0 200 OK", b"Content-Length: %d\r\n", False),
    "chunked": (b"HTTP/1.1 200 OK", b"Transfer-Encoding: chunked\r\n", True),
    "chunked+close": (
        b"HTTP/1.1 200 OK", b"Transfer-Encoding: chunked\r\nConnection: close\r\n", True),
}
TRICKLE_BYTES = 200  # at 10 ms a byte: a 2 s trickle, bounded so a held client comes back


def framed_trickle(framing: str) -> Handler:
    """Send the head of a ``framing`` response at once, then its body one byte every 10 ms."""
    status, headers, chunked = FRAMINGS[framing]
    body = b'{"pad":"' + b"x" * (TRICKLE_BYTES - 10) + b'"}'
    wire = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if chunked else body
    head = status + b"\r\nContent-Type: application/json\r\n"
    head += (headers % len(body) if b"%d" in headers else headers) + b"\r\n"

    def run(conn: socket.socket, stop: threading.Event) -> None:
        if not _read_request(conn, bytearray()):
            return
        conn.sendall(head)
        for i in range(len(wire)):
            if stop.wait(0.01):
                return
            conn.sendall(wire[i : i + 1])

    return run


class Server:
    """Threaded raw-socket server on 127.0.0.1 that counts connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.stop = threading.Event()
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            self.handler(conn, self.stop)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_overhead(calls: int) -> dict[str, object]:
    server = Server(fast)
    payload = {"hand": ["3D", "4C", "5H", "6S"], "table": [], "seat": 1}
    client = BotClient(server.url, policy=NetPolicy(allow_private=True))
    signed = BotClient(server.url, policy=NetPolicy(allow_private=True), secret=SECRET)
    bare = requests.Session()
    # A second baseline without requests' per-call environment lookups (proxy
    # variables, .netrc), which BotClient also skips: the tighter comparison.
    lean = requests.Session()
    lean.trust_env = False
    bare_url = server.url + "/move"
    ours: list[float] = []
    theirs: list[float] = []
    leans: list[float] = []
    signs: list[float] = []

    def run_ours() -> None:
        t = time.perf_counter()
        r = client.call("/move", payload, 1.0)
        ours.append(time.perf_counter() - t)
        assert r.ok, r

    def run_signed() -> None:
        t = time.perf_counter()
        r = signed.call("/move", payload, 1.0)
        signs.append(time.perf_counter() - t)
        assert r.ok, r

    def run_bare() -> None:
        t = time.perf_counter()
        resp = bare.post(bare_url, json=payload, timeout=(1.0, 1.0))
        resp.json()
        theirs.append(time.perf_counter() - t)

    def run_lean() -> None:
        t = time.perf_counter()
        resp = lean.post(bare_url, json=payload, timeout=(1.0, 1.0))
        resp.json()
        leans.append(time.perf_counter() - t)

    runners = [run_ours, run_bare, run_lean, run_signed]
    for _ in range(50):  # warm up all pools and code paths
        for run in runners:
            run()
    ours.clear()
    theirs.clear()
    leans.clear()
    signs.clear()
    connections_before = server.connections
    for i in range(calls):
        shift = i % len(runners)  # rotate the order so no side always goes first
        for run in runners[shift:] + runners[:shift]:
            run()
    new_connections = server.connections - connections_before
    client.close()
    signed.close()
    bare.close()
    lean.close()
    server.close()
    med_ours, med_bare = statistics.median(ours), statistics.median(theirs)
    med_lean = statistics.median(leans)
    med_signed = statistics.median(signs)
    return {
        "calls_each": calls,
        "botclient_median_us": round(med_ours * 1e6, 1),
        "bare_requests_median_us": round(med_bare * 1e6, 1),
        "bare_requests_no_env_median_us": round(med_lean * 1e6, 1),
        "ratio_median": round(med_ours / med_bare, 3),
        "ratio_median_vs_no_env": round(med_ours / med_lean, 3),
        "botclient_signed_median_us": round(med_signed * 1e6, 1),
        "ratio_signed_vs_unsigned": round(med_signed / med_ours, 3),
        "botclient_p99_us": round(pct(ours, 0.99) * 1e6, 1),
        "bare_requests_p99_us": round(pct(theirs, 0.99) * 1e6, 1),
        "new_connections_during_run": new_connections,
        "target_ratio": 1.3,
        "meets_target": max(med_ours / med_bare, med_ours / med_lean) <= 1.3,
    }


def bench_overshoot(handler: Handler, calls: int, deadline: float) -> dict[str, object]:
    server = Server(handler)
    client = BotClient(server.url, policy=NetPolicy(allow_private=True))
    over: list[float] = []
    faults: dict[str, int] = {}
    for _ in range(calls):
        t = time.perf_counter()
        r = client.call("/move", {"x": 1}, deadline)
        over.append(time.perf_counter() - t - deadline)
        key = r.fault.value if r.fault else "ok"
        faults[key] = faults.get(key, 0) + 1
    client.close()
    server.close()
    ms = [o * 1000 for o in over]
    return {
        "calls": calls,
        "deadline_ms": deadline * 1000,
        "overshoot_p50_ms": round(pct(ms, 0.50), 2),
        "overshoot_p99_ms": round(pct(ms, 0.99), 2),
        "overshoot_max_ms": round(max(ms), 2),
        "faults": faults,
        "all_timeouts": faults.get(Fault.TIMEOUT.value, 0) == calls,
        "meets_target_p99_lt_20ms": pct(ms, 0.99) < 20,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    parser.add_argument("--calls", type=int, default=2000, help="overhead calls per side")
    parser.add_argument("--deadline-calls", type=int, default=50)
    args = parser.parse_args(argv)
    result = {
        "overhead": bench_overhead(args.calls),
        "deadline_hanging_bot": bench_overshoot(hang, args.deadline_calls, 0.1),
    }
    for framing in FRAMINGS:
        result[f"deadline_trickling_body_{framing}"] = bench_overshoot(
            framed_trickle(framing), args.deadline_calls, 0.1
        )
    if args.json:
        print(json.dumps(result))
    else:
        for section, figures in result.items():
            print(section)
            for key, value in figures.items():
                print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
