"""Benchmark the referee's per-move overhead and deadline precision, on loopback.

1. Overhead per move.  Four local keep-alive bots play matches through ``run_match`` and
   ``HttpPlayer`` (building the request with the full observation and legal-move list, the
   HTTP call with its deadline machinery, judging the answer, applying the move, recording the
   turn).  Each turn's wall time (between consecutive ``on_turn`` callbacks) minus the
   processing time the bot reports for that request is the referee's cost *plus* the HTTP round
   trip.  The baseline is a bare keep-alive ``requests`` POST of the very same request bodies
   (``json=`` serialisation and ``.json()`` parsing included) to the same bots, minus the same
   reported bot time.  Rounds alternate (one deal through the referee, then the same requests
   bare) so drift in machine load hits both sides.  Target: ratio <= 1.3 at the median.
2. Deadline precision.  A seat whose bot hangs (reads the request, never answers) or trickles
   its body (one byte every 10 ms, which no per-read timeout catches) in each HTTP/1.x body
   framing (see ``http_caller.FRAMINGS``), deadline 100 ms, no time bank, no forfeit: how far
   past the deadline each such turn holds the match (turn wall time minus the deadline).
   Target: p99 < 20 ms.

Every server is started here on 127.0.0.1; every loop is bounded.
Usage: ``python bench/referee_overhead.py [--json] [--rounds N] [--deadline-calls N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from http_caller import FRAMINGS, Handler, Server, framed_trickle, hang, pct  # noqa: E402

from referee import find_ruleset  # noqa: E402
from referee.runner.match import Limits, TurnRecord, run_match  # noqa: E402
from referee.wire.netguard import NetPolicy  # noqa: E402
from referee.wire.players import HttpPlayer, LocalPlayer, Player  # noqa: E402

LOCAL = NetPolicy(allow_private=True)
RULES = find_ruleset("standard")


def _read(conn: socket.socket, buf: bytearray) -> tuple[bytes, bytes] | None:
    """One request: (request line, body); None on EOF."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None
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
            return None
        rest += chunk
    buf[:] = rest[length:]
    return head.split(b"\r\n", 1)[0], rest[:length]


def _respond(conn: socket.socket, payload: bytes) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                 + str(len(payload)).encode() + b"\r\n\r\n" + payload)


class ProtocolBot:
    """A fast protocol bot that reports its own processing time and keeps every request."""

    def __init__(self) -> None:
        self.bot_us: dict[tuple[str, int], float] = {}
        self.requests: list[dict[str, Any]] = []
        self.record = True
        self.server = Server(self.handle)

    @property
    def url(self) -> str:
        return self.server.url

    def handle(self, conn: socket.socket, stop: threading.Event) -> None:
        buf = bytearray()
        while True:
            got = _read(conn, buf)
            if got is None:
                return
            line, body = got
            t0 = time.perf_counter()
            if line.startswith(b"GET"):
                answer: dict[str, Any] = {"protocol": 1, "name": "bench", "author": "",
                                          "version": "1"}
            elif b"/move" in line:
                req = json.loads(body)
                answer = {"move": req["legal_moves"][0]["id"]}
                if self.record:
                    self.requests.append(req)
            else:
                answer = {}
            payload = json.dumps(answer).encode()
            spent = (time.perf_counter() - t0) * 1e6
            if b"/move" in line:
                key = (req["deal_id"], req["turn"])
                self.bot_us[key] = spent
                payload = payload[:-1] + b',"bot_us":' + f"{spent:.1f}".encode() + b"}"
            _respond(conn, payload)

    def close(self) -> None:
        self.server.close()


def bench_overhead(rounds: int) -> dict[str, Any]:
    bots = [ProtocolBot() for _ in range(4)]
    players: list[Player] = [HttpPlayer(b.url, policy=LOCAL) for b in bots]
    bare = requests.Session()
    bare.trust_env = False  # like BotClient: no proxy/.netrc lookups per call
    referee_us: list[float] = []
    bare_us: list[float] = []
    turn_us: list[float] = []
    bot_side: list[float] = []
    limits = Limits(deadline_ms=5000, time_bank_ms=0, max_strikes=None)

    def one_round(k: int, keep: bool) -> None:
        stamps: list[tuple[TurnRecord, float]] = []
        for b in bots:
            b.requests.clear()
        run_match(RULES, players, seed=k, deals=1, limits=limits, match_id=f"r{k}",
                  on_turn=lambda t: stamps.append((t, time.perf_counter())))
        for (_prev, t_prev), (turn, t_now) in itertools.pairwise(stamps):
            key = (f"r{k}/0", turn.turn)
            spent = bots[turn.seat].bot_us[key]
            if keep:
                referee_us.append((t_now - t_prev) * 1e6 - spent)
                turn_us.append((t_now - t_prev) * 1e6)
                bot_side.append(spent)
        # The same requests, bare, to the same bots.
        for b in bots:
            reqs = list(b.requests)
            url = b.url + "/move"
            for req in reqs:
                t0 = time.perf_counter()
                answer = bare.post(url, json=req, timeout=(5, 5)).json()
                elapsed = (time.perf_counter() - t0) * 1e6
                if keep:
                    bare_us.append(elapsed - answer["bot_us"])

    for k in range(3):  # warm up pools and code paths
        one_round(10_000 + k, keep=False)
    for k in range(rounds):
        one_round(k, keep=True)
    for p in players:
        p.close()
    bare.close()
    for b in bots:
        b.close()
    med_ref, med_bare = statistics.median(referee_us), statistics.median(bare_us)
    return {
        "rounds": rounds,
        "turns": len(referee_us),
        "bare_calls": len(bare_us),
        "referee_turn_median_us": round(statistics.median(turn_us), 1),
        "bot_processing_median_us": round(statistics.median(bot_side), 1),
        "referee_minus_bot_median_us": round(med_ref, 1),
        "bare_http_minus_bot_median_us": round(med_bare, 1),
        "ratio_median": round(med_ref / med_bare, 3),
        "referee_minus_bot_p99_us": round(pct(referee_us, 0.99), 1),
        "bare_http_minus_bot_p99_us": round(pct(bare_us, 0.99), 1),
        "target_ratio": 1.3,
        "meets_target": med_ref / med_bare <= 1.3,
    }


def first(request: dict[str, Any]) -> dict[str, Any]:
    return {"move": request["legal_moves"][0]["id"]}


def bench_overshoot(handler: Handler, calls: int, deadline_ms: int) -> dict[str, Any]:
    server = Server(handler)
    bad = HttpPlayer(server.url, policy=LOCAL)
    players: list[Player] = [bad, LocalPlayer(first), LocalPlayer(first), LocalPlayer(first)]
    limits = Limits(deadline_ms=deadline_ms, time_bank_ms=0, max_strikes=None,
                    call_deadline_ms=deadline_ms)
    over: list[float] = []
    faults: dict[str, int] = {}
    seed = 0
    while len(over) < calls and seed < calls:  # bounded: a deal gives seat 0 several turns
        last = [0.0]

        def stamp(turn: TurnRecord, last: list[float] = last) -> None:
            # The first turn of a match also pays for GET / and /start: not a move.
            now = time.perf_counter()
            if turn.seat == 0 and len(over) < calls and last[0]:
                over.append((now - last[0]) * 1000 - deadline_ms)
                key = turn.fault or "ok"
                faults[key] = faults.get(key, 0) + 1
            last[0] = now

        run_match(RULES, players, seed=seed, deals=1, limits=limits, on_turn=stamp)
        seed += 1
    bad.close()
    server.close()
    return {
        "calls": len(over),
        "deadline_ms": deadline_ms,
        "overshoot_p50_ms": round(pct(over, 0.50), 2),
        "overshoot_p99_ms": round(pct(over, 0.99), 2),
        "overshoot_max_ms": round(max(over), 2),
        "faults": faults,
        "meets_target_p99_lt_20ms": pct(over, 0.99) < 20,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    parser.add_argument("--rounds", type=int, default=30, help="deals on each side")
    parser.add_argument("--deadline-calls", type=int, default=50)
    args = parser.parse_args(argv)
    result = {
        "overhead": bench_overhead(args.rounds),
        "deadline_hanging_bot": bench_overshoot(hang, args.deadline_calls, 100),
    }
    for framing in FRAMINGS:
        result[f"deadline_trickling_body_{framing}"] = bench_overshoot(
            framed_trickle(framing), args.deadline_calls, 100
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
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())
