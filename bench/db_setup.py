"""What a test's database costs to set up: migrating per test (as before issue 18) against a
copy of a template migrated once (tests/arena/databases.py), side by side.

* SQLite: ``upgrade()`` of a new file, against a file copy of a migrated one.
* PostgreSQL: ``DROP SCHEMA public CASCADE`` + ``upgrade()`` (+ the drop after the test),
  against ``CREATE DATABASE ... TEMPLATE`` + ``DROP DATABASE`` of the copy.

Rounds alternate between the two ways so drift in machine load hits both.  PostgreSQL is the
test server (``ARENA_TEST_PG_URL`` or 127.0.0.1:5432, trust auth); without it only SQLite runs.
Usage: ``python bench/db_setup.py [--rounds N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402

from tests.arena.databases import (  # noqa: E402
    PgDatabases,
    migrate,
    sqlite_copy,
    sqlite_template,
    sqlite_url,
)


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def empty_pg(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def pg_admin() -> str | None:
    import os

    import psycopg

    given = os.environ.get("ARENA_TEST_PG_URL")
    for url in [given] if given else ["postgresql://root@127.0.0.1:5432/test",
                                      "postgresql://postgres@127.0.0.1:5432/test"]:
        try:
            with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return url
        except Exception:
            continue
    return None


def bench_sqlite(rounds: int, folder: Path) -> dict[str, list[float]]:
    template = sqlite_template(folder)
    out: dict[str, list[float]] = {"migrate": [], "copy": []}
    for i in range(rounds):
        out["migrate"].append(timed(lambda i=i: migrate(sqlite_url(folder / f"m{i}.sqlite3")))
                              )
        out["copy"].append(timed(lambda i=i: sqlite_copy(template, folder / f"c{i}.sqlite3")))
    return out


def bench_pg(rounds: int, admin: str) -> dict[str, list[float]]:
    dbs = PgDatabases(admin)
    scratch = f"{dbs.prefix}_scratch"
    url = dbs.create(scratch)
    out: dict[str, list[float]] = {"migrate": [], "copy": []}
    try:
        dbs.copy()  # the template, once (not timed: once per test process)

        def per_test_migration() -> None:
            empty_pg(url)
            migrate(url)
            empty_pg(url)

        def per_test_copy() -> None:
            name, _ = dbs.copy()
            dbs.drop(name)

        for _ in range(rounds):
            out["migrate"].append(timed(per_test_migration))
            out["copy"].append(timed(per_test_copy))
    finally:
        dbs.drop(scratch)
        dbs.close()
    return out


def summary(times: dict[str, list[float]]) -> dict[str, float]:
    m, c = statistics.median(times["migrate"]), statistics.median(times["copy"])
    return {"migrate_ms": round(m * 1000, 1), "copy_ms": round(c * 1000, 1),
            "ratio": round(m / c, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        result["sqlite"] = summary(bench_sqlite(args.rounds, Path(tmp)))
    admin = pg_admin()
    if admin is not None:
        result["postgres"] = summary(bench_pg(args.rounds, admin))
    if args.json:
        print(json.dumps(result))
        return
    for backend, r in result.items():
        print(f"{backend:<9} per-test migration {r['migrate_ms']:8.1f} ms   template copy "
              f"{r['copy_ms']:7.1f} ms   ({r['ratio']}x)")
    if admin is None:
        print("postgres  not reachable: skipped")


if __name__ == "__main__":
    main()
