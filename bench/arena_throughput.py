"""Arena throughput: matches per minute through the whole service, by number of workers.

    python bench/arena_throughput.py --json                       # 1 and 2 workers, SQLite
    python bench/arena_throughput.py --workers 1 2 4 --matches 24 --deals 2
    DATABASE_URL=postgresql+psycopg://root@127.0.0.1/bench python bench/arena_throughput.py

Everything is real and local: a fresh instance (SQLite, or ``DATABASE_URL``), the embedded
Redis (or ``REDIS_URL``), sample bots as processes on loopback, ``arena worker`` processes.
For each worker count the operator API creates ``--matches`` matches at once (tables of four
sample bots drawn from eight: two each of planner, greedy, random and random with another
seed), and the script measures until all are finished:

* ``matches_per_min``: finished matches per minute of wall time;
* ``queue_wait_p50_s`` / ``p95``: time from creation to a worker's claim;
* ``play_p50_s`` / ``p95``: time from claim to the stored result (the match itself plus the
  finishing transaction).

On a 2-core machine more workers than cores only helps while bots, not the referee, are the
bottleneck.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rq import Worker
from sqlalchemy import func, select

from arena import create_app
from arena.core.models import Match
from arena.core.queue import get_queue
from arena.core.storage import database_url, get_db, upgrade
from arena.ops.procs import Child, start_arena, start_bot, stop_all

BOTS = ["planner_bot", "greedy_bot", "random_bot", "random_bot"] * 2


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 3)


def run(workers: int, matches: int, deals: int, seed: int) -> dict[str, Any]:
    inst = tempfile.mkdtemp(prefix="arena-bench-")
    # A real-looking operator token: the app refuses to start with one shorter than
    # MIN_SECRET_LENGTH (arena.core.security), as it would in production.
    admin = secrets.token_urlsafe(32)
    app = create_app({"INSTANCE_PATH": inst, "ALLOW_PRIVATE_BOT_URLS": True,
                      "ADMIN_TOKEN": admin, "WORKER_CLOCK": False,
                      "RATE_LIMITS_ENABLED": False,  # one client registers all eight bots
                      "QUEUE_NAME": f"bench-{os.getpid()}-{workers}"})
    upgrade(get_db(app))
    client = app.test_client()
    children: list[Child] = []
    try:
        env = dict(os.environ)
        env.update({"DATABASE_URL": database_url(app), "REDIS_URL": get_queue(app).url,
                    "QUEUE_NAME": str(app.config["QUEUE_NAME"]),
                    "SECRET_KEY": str(app.config["SECRET_KEY"]), "ALLOW_PRIVATE_BOT_URLS": "1",
                    "ARENA_INSTANCE_PATH": inst, "WORKER_CLOCK": "0"})
        for i in range(workers):
            children.append(start_arena(["worker", "--no-clock"], env=env, name=f"w{i}"))
        queue = get_queue(app).queue
        while len(Worker.all(queue=queue)) < workers:  # measure matches, not worker start-up
            time.sleep(0.05)
        bot_ids = []
        for i, module in enumerate(BOTS):
            bot = start_bot(module)
            children.append(bot)
            r = client.post("/api/bots", json={"name": f"{module}-{i}", "url": bot.url})
            assert r.status_code == 202, r.get_json()
            bot_ids.append(r.get_json()["bot"]["id"])
        for bot_id in bot_ids:  # the workers run the health checks
            while not (c := client.get(f"/api/bots/{bot_id}/check").get_json())["done"]:
                time.sleep(0.05)
            assert c["state"] == "passed", c
        rng = random.Random(seed)
        t0 = time.monotonic()
        for n in range(matches):
            table = rng.sample(bot_ids, 4)
            r = client.post("/api/matches", json={"bots": table, "deals": deals, "seed": n},
                            headers={"Authorization": f"Bearer {admin}"})
            assert r.status_code == 202, r.get_json()
        while True:
            with get_db(app).begin() as s:
                done = s.scalar(select(func.count()).select_from(Match)
                                .where(Match.state.in_(("finished", "failed"))))
            if done == matches:
                break
            if time.monotonic() - t0 > 900:
                raise SystemExit("benchmark timed out")
            time.sleep(0.05)
        wall = time.monotonic() - t0
        with get_db(app).begin() as s:
            rows = s.execute(select(Match.state, Match.created_at, Match.started_at,
                                    Match.finished_at)).all()
        waits = [(st - c).total_seconds() for _, c, st, _ in rows if st]
        plays = [(f - st).total_seconds() for _, _, st, f in rows if st and f]
        return {
            "workers": workers,
            "matches": matches,
            "deals": deals,
            "failed": sum(1 for r in rows if r[0] == "failed"),
            "wall_s": round(wall, 3),
            "matches_per_min": round(matches / wall * 60, 1),
            "queue_wait_p50_s": percentile(waits, 0.5),
            "queue_wait_p95_s": percentile(waits, 0.95),
            "play_p50_s": percentile(plays, 0.5),
            "play_p95_s": percentile(plays, 0.95),
        }
    finally:
        stop_all(children)
        emb = app.extensions.get("arena.embedded_redis")
        if emb is not None:
            emb.stop()
        get_db(app).dispose()
        shutil.rmtree(inst, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--matches", type=int, default=12)
    ap.add_argument("--deals", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    results = [run(w, args.matches, args.deals, args.seed) for w in args.workers]
    if args.json:
        print(json.dumps({"benchmark": "arena_throughput", "nproc": os.cpu_count(),
                          "results": results}, indent=2))
    else:
        for r in results:
            print(f"{r['workers']} worker(s): {r['matches_per_min']:7.1f} matches/min "
                  f"({r['matches']} x {r['deals']} deals in {r['wall_s']} s), "
                  f"queue wait p50 {r['queue_wait_p50_s']} s, play p50 {r['play_p50_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
