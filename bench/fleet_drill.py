"""The fleet drill's figures: whole worker machines killed while matches run, and how long
their matches wait for another machine.

    python bench/fleet_drill.py                         # 3 machines, 3 kills, LEASE_S=6
    python bench/fleet_drill.py --kills 6 --lease-s 12 --reconcile-interval-s 3 --json

Everything is real and local (``tests/deploy/fleet.py``): ``--machines`` worker machines
(each a process group of ``arena worker`` processes, killed whole with SIGKILL and booted
again), two gunicorns behind nginx (``deploy/``), one ``arena clock`` running ladder rounds and
the reconciler, real sample bots thinking ``--think-ms`` per move, a private ``redis-server``
and PostgreSQL (a fresh database on ``--pg``, else ``ARENA_TEST_PG_URL`` or the test server,
dropped at the end).  nginx must be installed.

It prints the kills (processes killed, matches orphaned), the matches (posted through nginx,
ladder), how many were lost or duplicated (both must be 0), the replays, the takeover times
(from the kill to the orphan's new claim: p50 and max) beside the bound the settings give
(``LEASE_S + RECONCILE_INTERVAL_S + CLOCK_TICK_S``), and whether the ratings equal a
recompute.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.arena.databases import PgDatabases  # noqa: E402
from tests.deploy.fleet import FleetSettings, cleanup, fleet, run_drill  # noqa: E402


def pg_admin(given: str | None) -> str:
    import os

    import psycopg

    env = os.environ.get("ARENA_TEST_PG_URL")
    candidates = [given] if given else [env] if env else [
        "postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"]
    for url in candidates:
        try:
            with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return url
        except Exception as exc:
            why = str(exc)
    raise SystemExit(f"PostgreSQL unreachable ({why}): give --pg")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--machines", type=int, default=3)
    ap.add_argument("--workers-per-machine", type=int, default=1)
    ap.add_argument("--bots", type=int, default=8)
    ap.add_argument("--think-ms", type=int, default=25)
    ap.add_argument("--deals", type=int, default=2)
    ap.add_argument("--lease-s", type=float, default=6.0)
    ap.add_argument("--reconcile-interval-s", type=float, default=1.0)
    ap.add_argument("--clock-tick-s", type=float, default=0.5)
    ap.add_argument("--pg", default=None, help="PostgreSQL admin URL (trust auth)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    ap.add_argument("--keep", action="store_true", help="keep the processes' logs")
    args = ap.parse_args()
    settings = FleetSettings(
        machines=args.machines, workers_per_machine=args.workers_per_machine, bots=args.bots,
        think_ms=args.think_ms, deals=args.deals, lease_s=args.lease_s,
        reconcile_interval_s=args.reconcile_interval_s, clock_tick_s=args.clock_tick_s)
    dbs = PgDatabases(pg_admin(args.pg))
    name, url = dbs.copy()
    runtime = Path(tempfile.mkdtemp(prefix="arena-fleet-bench-"))
    try:
        print(f"starting the fleet (logs in {runtime}) ...", flush=True)
        with fleet(settings, url, runtime) as f:
            print("running: bots registered through nginx, ladder on", flush=True)
            report = run_drill(f, kills=args.kills, progress=lambda s: print(s, flush=True))
    finally:
        dbs.drop(name)
        dbs.close()
    print("\n".join(report.lines()))
    a, t = report.audit, report.takeovers
    if args.json:
        print(json.dumps({
            "settings": asdict(settings), "takeover_bound_s": settings.takeover_bound_s(),
            "kills": len(report.kills), "processes_killed": [k.processes for k in report.kills],
            "orphans": len(t), "matches": a.matches, "posted": a.admin, "ladder": a.ladder,
            "lost": a.lost, "duplicated": a.duplicated, "replays": a.replays,
            "takeover_s": t, "takeover_p50_s": statistics.median(t) if t else None,
            "takeover_max_s": max(t, default=None),
            "ratings_equal_recompute": not a.rating_problems, "seconds": report.seconds,
        }, indent=2))
    if not args.keep:
        cleanup(runtime)
    ok = a.lost == 0 and a.duplicated == 0 and not a.rating_problems
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
