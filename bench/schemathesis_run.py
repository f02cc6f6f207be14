"""Schemathesis against the OpenAPI document, on SQLite and on PostgreSQL: the 5xx count.

    python bench/schemathesis_run.py                       # 50 examples per operation and mode
    python bench/schemathesis_run.py --max-examples 200 --seed 1
    python bench/schemathesis_run.py --databases postgres
    PYTHONPATH=/tmp/main-src python bench/schemathesis_run.py   # another checkout's code

For each database: a freshly migrated one of its own (SQLite: a file in a temporary folder;
PostgreSQL: ``arena_fuzz_<pid>`` on ``ARENA_TEST_PG_URL`` or the local test server, dropped
at the end), the app built as the tests build it (``tests/arena/conftest.py`` settings: rate
limits and the read cache off, the operator's token known), then every operation of
``/api/openapi.json`` with generated requests, positive and negative
(``tests/arena/fuzz_api.py``).  Prints the number of requests, the 5xx count per database,
and each operation that answered 5xx with one request that did.  Exit status 1 when any
database saw a 5xx.  Redis: ``ARENA_TEST_REDIS_URL`` or 127.0.0.1:6379 (database 14, flushed
before and after).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: its code wins
# One prefix for RQ's keys, as the tests set it (each app has a namespace of its own).
os.environ.setdefault("RQ_KEY_PREFIX", "arena-fuzz:rq")

from redis import Redis

from arena import create_app
from arena.core.storage import get_db
from tests.arena.conftest import ADMIN, _pg_admin_url
from tests.arena.databases import PgDatabases, migrate, sqlite_url
from tests.arena.fuzz_api import FuzzReport, fuzz


def _settings(folder: Path, database_url: str, redis_url: str) -> dict[str, object]:
    return {
        "INSTANCE_PATH": str(folder / "instance"),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "QUEUE_NAME": f"arena-fuzz-{uuid.uuid4().hex[:8]}",
        "REDIS_NAMESPACE": f"arena-fuzz-{uuid.uuid4().hex[:8]}",
        "SECRET_KEY": "fuzz-pepper-0123456789abcdefghijklmnop",
        "ADMIN_TOKEN": ADMIN,
        "ALLOW_PRIVATE_BOT_URLS": True,
        "RATE_LIMITS_ENABLED": False,
        "READ_CACHE_S": 0.0,
    }


def run_on(backend: str, folder: Path, redis_url: str, max_examples: int,
           seed: int | None) -> FuzzReport:
    pg: PgDatabases | None = None
    name = ""
    if backend == "postgres":
        admin, why = _pg_admin_url()
        if admin is None:
            raise SystemExit(f"PostgreSQL unreachable: {why}")
        pg = PgDatabases(admin)
        name = f"arena_fuzz_{os.getpid()}"
        url = pg.create(name)
    else:
        url = sqlite_url(folder / "fuzz.sqlite3")
    try:
        migrate(url)
        app = create_app(_settings(folder / backend, url, redis_url))
        try:
            return fuzz(app, max_examples=max_examples, seed=seed)
        finally:
            get_db(app).dispose()
    finally:
        if pg is not None:
            pg.drop(name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-examples", type=int, default=50)
    ap.add_argument("--seed", type=int, default=None,
                    help="hypothesis seed (default: derandomized, the same examples each run)")
    ap.add_argument("--databases", default="sqlite,postgres")
    args = ap.parse_args()
    redis_url = os.environ.get("ARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379") + "/14"
    r = Redis.from_url(redis_url)
    r.flushdb()
    failed = False
    try:
        for backend in args.databases.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.monotonic()
                report = run_on(backend, Path(tmp), redis_url, args.max_examples, args.seed)
                took = time.monotonic() - t0
            print(f"{backend}: {report.requests} requests, {len(report.errors)} answered 5xx "
                  f"({took:.0f} s)")
            for operation, count in sorted(report.by_operation().items()):
                first = next(e for e in report.errors if e.operation == operation)
                print(f"  {count:4d} x {operation}: {first.status} for {first.request}")
            for skipped in report.skipped:
                print(f"  not run: {skipped}")
            failed = failed or bool(report.errors)
    finally:
        r.flushdb()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
