"""The live outbox's sender: CPU a batch and an event, by batch size.

    python bench/live_outbox.py
    python bench/live_outbox.py --sizes 1 6 20 60 --reps 500 --json

A pool worker's matches publish a live event per turn, and one sender thread sends them to
Redis in a batch every ``LIVE_FLUSH_MS`` (:mod:`arena.live.outbox`).  What a batch costs the
sender decides how often it should go: this sends batches of each ``--sizes`` turn events
(~200 bytes, spread over 50 streams, as a hundred matches make) ``--reps`` times with
:meth:`~arena.live.outbox.Outbox._send` itself, one after the other on one thread, and prints
the sender's CPU (``time.thread_time``: packing, the round trip's system calls, reading the
reply) a batch and an event, and the wall time a batch.  The fixed part is what a short
interval multiplies: a hundred matches of 500 ms bots publish ~200 events a second, so 20 ms
makes batches of ~4-6 events and 100 ms of ~20.

Redis is ``REDIS_URL`` (else ``redis://127.0.0.1:6379/13``); the streams are under a key
prefix of the run's own, deleted at the end.  Only loopback is ever contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from redis import Redis

from arena.live.outbox import Event, Outbox

TURN_EVENT = json.dumps({
    "deal": 0, "turn": 12, "seat": 1, "cards": ["3D", "3C"], "latency_ms": 500.2,
    "fault": None, "bank_ms": 0, "card_counts": [10, 11, 12, 13], "to_move": 2,
    "table": ["3D", "3C"], "table_seat": 1, "stock_count": 0, "finished": [],
}, separators=(",", ":")).encode()
"""A turn event as a match publishes it (arena.live.channel)."""


def measure(redis: Redis, prefix: str, size: int, reps: int) -> dict[str, float]:
    box = Outbox(redis, interval_s=0.1)  # its sender thread is never started: _send is called
    batch = [Event(f"{prefix}:match:{i % 50}", "turn", TURN_EVENT, 2000, 600)
             for i in range(size)]
    box._send(batch)  # the script loaded, the connection open
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    for _ in range(reps):
        box._send(batch)
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    if box.broken:
        raise SystemExit(f"streams refused the events: {sorted(box.broken)[:3]}")
    return {"size": size, "cpu_us_per_batch": round(cpu / reps * 1e6, 1),
            "cpu_us_per_event": round(cpu / reps / size * 1e6, 2),
            "wall_us_per_batch": round(wall / reps * 1e6, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 6, 20, 60])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    redis = Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13"))
    prefix = f"bench-outbox-{uuid.uuid4().hex[:8]}"
    try:
        rows = [measure(redis, prefix, size, args.reps) for size in args.sizes]
    finally:
        keys = list(redis.scan_iter(f"{prefix}:*"))
        if keys:
            redis.delete(*keys)
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(f"batch of {r['size']:3d} events: {r['cpu_us_per_batch']:7.1f} us of CPU "
                  f"({r['cpu_us_per_event']:6.2f} us an event), "
                  f"{r['wall_us_per_batch']:7.1f} us of wall time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
