"""How long an arena on Redis Sentinel takes to recover when its Redis primary is SIGKILLed.

    python bench/sentinel_drill.py                         # 100 matches, 80 at once
    python bench/sentinel_drill.py --matches 20 --concurrency 8 --runs 3 --json

Everything is real and on loopback (tests/arena/sentinel_drill.py says what runs): a primary,
a replica and three sentinels (``down-after-milliseconds`` 1000, ``failover-timeout`` 5000),
a web app, one pool worker (``WORKER_CONCURRENCY`` = ``--concurrency``), the clock (a ladder
round every 2 s; the reconciler at its defaults unless ``--reconcile-every`` and
``--requeue-after`` say otherwise), the live relay and eight sample bots thinking
``--think`` ms per move, on a fresh PostgreSQL database (``bench_sentinel_<pid>``, dropped
at the end; ``--pg`` or ``ARENA_TEST_PG_URL``, else 127.0.0.1:5432).  The operator posts
``--matches`` matches; once a tenth are done (the rest running or waiting on the queue)
the primary is SIGKILLed, two more are posted before the sentinels have agreed, two after.

Printed per run: matches running and queued at the kill; ``failover``: from the kill to every
sentinel naming the promoted replica; ``first job``: from the kill to the first job the worker
took off the queue afterwards (its log: the first job after its first Redis error, so from the
new primary); ``all done``: from the kill to every posted match
finished (and a ladder round created after the kill: a job lost with the primary waits for
the reconciler, ``RECONCILE_QUEUED_AFTER_S``, 60 s by default), how many were re-enqueued so,
and when the others were done; and whether anything was lost or
applied twice (each match one result and four rating events, ratings equal a recompute).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# One namespace for this process and its children, read by RQ when it is first imported.
os.environ.setdefault("REDIS_NAMESPACE", f"bench-sentinel-{os.getpid()}")

import psycopg

from arena import create_app
from arena.core.storage import get_db, upgrade
from tests.arena.sentinel_drill import Drill, describe
from tests.arena.sentinels import SentinelCluster

SECRET = "bench-sentinel-secret-0123456789abcdefghij"
ADMIN = "bench-sentinel-admin-0123456789abcdefghij"


def pg_admin(given: str | None) -> str:
    candidates = [given] if given else (
        [os.environ["ARENA_TEST_PG_URL"]] if os.environ.get("ARENA_TEST_PG_URL")
        else ["postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"])
    for url in candidates:
        try:
            with psycopg.connect(url, connect_timeout=3):
                return url
        except Exception:
            continue
    raise SystemExit("no PostgreSQL reachable (--pg postgresql://user@host:port/db)")


def one_run(admin: str, n: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    dbname = f"bench_sentinel_{os.getpid()}_{n}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    user_host = admin.split("://", 1)[1].rsplit("/", 1)[0]
    cluster = SentinelCluster(folder / f"redis-{n}", service=f"bench-{n}")
    try:
        cluster.start()
        app = create_app({
            "INSTANCE_PATH": str(folder / f"instance-{n}"),
            "DATABASE_URL": f"postgresql+psycopg://{user_host}/{dbname}",
            "REDIS_URL": "", "REDIS_SENTINELS": cluster.hosts,
            "REDIS_SENTINEL_SERVICE": cluster.service, "QUEUE_NAME": f"bench-sentinel-{n}",
            "SECRET_KEY": SECRET, "ADMIN_TOKEN": ADMIN, "ALLOW_PRIVATE_BOT_URLS": True})
        upgrade(get_db(app))
        drill = Drill(app, cluster, folder / f"run-{n}", matches=args.matches,
                      concurrency=args.concurrency, think_ms=args.think, deals=args.deals,
                      timeout_s=args.timeout, settings=settings(args))
        try:
            figures = describe(drill.run())
        finally:
            drill.stop()
            get_db(app).dispose()
    finally:
        cluster.stop()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
    return figures


def settings(args: argparse.Namespace) -> dict[str, str]:
    """The recovery settings given on the command line (the rest keep their defaults)."""
    given = {"WORKER_REDIS_RETRY_MAX_S": args.retry_max,
             "RECONCILE_INTERVAL_S": args.reconcile_every,
             "RECONCILE_QUEUED_AFTER_S": args.requeue_after}
    return {k: str(v) for k, v in given.items() if v is not None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--matches", type=int, default=100, help="matches the operator posts")
    ap.add_argument("--concurrency", type=int, default=80, help="WORKER_CONCURRENCY")
    ap.add_argument("--think", type=int, default=20, help="the bots' thinking time per move, ms")
    ap.add_argument("--deals", type=int, default=1, help="deals per match")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--retry-max", type=float, default=None,
                    help="WORKER_REDIS_RETRY_MAX_S (default: the setting's, 30)")
    ap.add_argument("--reconcile-every", type=float, default=None,
                    help="RECONCILE_INTERVAL_S (default: the setting's, 30)")
    ap.add_argument("--requeue-after", type=float, default=None,
                    help="RECONCILE_QUEUED_AFTER_S (default: the setting's, 60)")
    ap.add_argument("--timeout", type=float, default=900.0, help="longest wait for one step")
    ap.add_argument("--pg", default=None, help="PostgreSQL admin URL")
    ap.add_argument("--keep", action="store_true", help="keep the logs (prints the folder)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on SIGTERM too
    admin = pg_admin(args.pg)
    folder = Path(tempfile.mkdtemp(prefix="arena-sentinel-"))
    runs = []
    try:
        for n in range(args.runs):
            runs.append(one_run(admin, n, args, folder))
            if not args.json:
                r = runs[-1]
                print(f"run {n + 1}: {r['posted']} posted + {r['ladder_after_kill']} ladder "
                      f"matches after the kill ({r['matches']} in all); at the kill "
                      f"{r['running_at_kill']} running, {r['queued_at_kill']} queued; "
                      f"failover {r['failover_s']:.2f} s, first job {r['first_job_s']} s, "
                      f"all done {r['all_done_s']:.1f} s ({r['requeued']} re-enqueued by the "
                      f"reconciler; the others done {r['kept_done_s']:.1f} s after the kill); "
                      f"problems: {r['problems'] or 'none'}",
                      flush=True)
    finally:
        if args.keep:
            print(f"logs kept in {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps({"args": vars(args), "runs": runs}, indent=2))
    if any(r["problems"] for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
