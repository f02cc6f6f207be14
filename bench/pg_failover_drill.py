"""How long an arena on a PostgreSQL primary with a standby takes to carry on when the
primary is SIGKILLed and the standby promoted.

    python bench/pg_failover_drill.py                       # 60 matches, sync standby, 3 runs
    python bench/pg_failover_drill.py --matches 30 --promote-after 10 --runs 1 --json
    python bench/pg_failover_drill.py --async --lag 2       # an asynchronous standby that lags

Everything is real and on loopback (``tests/deploy/pg_failover.py`` says what runs): a
primary and a streaming standby of the drill's own (``initdb``, ``pg_basebackup -R``, in a
temporary folder, on free ports: never the test server), a private ``redis-server``,
gunicorn, one pool worker (``WORKER_CONCURRENCY`` = ``--concurrency``), the clock and
sample bots thinking ``--think`` ms per move, all given the multi-host ``DATABASE_URL``
(``?host=primary&host=standby&target_session_attrs=read-write``).  Once a sixth of the
``--matches`` are done and others running, the primary's postmaster and backends are
SIGKILLed; ``--promote-after`` seconds later the standby is promoted (``pg_ctl promote``).

Printed per run, in seconds from the promotion: ``first result`` (a match finished that was
not at the kill), ``web 200`` (the first 200 of ``GET /api/matches/<id>`` through
gunicorn), ``all done``; ``pg_ctl promote``'s own time; the web's failed answers in the gap;
the worker's store retries (finished matches waiting for a primary) and failed lease
renewals; replays; results committed before the kill and missing after it (0 with a
synchronous standby; with ``--async --lag N``, the standby's streaming stopped N seconds
before the kill, the finishes of those seconds are lost and those matches played again);
and whether
anything was lost or stored twice (one result and a rating event per seat each, ratings
equal a recompute, ``arena ratings --check`` through the same URL).  Exit status 1 if so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.deploy.pg_failover import Drill, DrillSettings


def one_run(settings: DrillSettings, keep: bool) -> dict[str, Any]:
    drill = Drill(settings)
    try:
        figures = drill.run().describe()
    finally:
        drill.stop()
        if keep:
            print(f"logs kept in {drill.dir}", file=sys.stderr)
        else:
            drill.cleanup()
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=60)
    ap.add_argument("--concurrency", type=int, default=20, help="WORKER_CONCURRENCY")
    ap.add_argument("--bots", type=int, default=8)
    ap.add_argument("--think", type=int, default=20, help="the bots' thinking time per move, ms")
    ap.add_argument("--deals", type=int, default=1)
    ap.add_argument("--promote-after", type=float, default=3.0,
                    help="seconds from the kill to pg_ctl promote")
    ap.add_argument("--async", dest="asynchronous", action="store_true",
                    help="an asynchronous standby (synchronous_standby_names empty)")
    ap.add_argument("--lag", type=float, default=0.0,
                    help="with --async: stop the standby's streaming this long before the kill")
    ap.add_argument("--lease-s", type=float, default=15.0, help="LEASE_S")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=900.0, help="longest wait for one step")
    ap.add_argument("--keep", action="store_true", help="keep the logs (prints the folder)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    settings = DrillSettings(
        matches=args.matches, concurrency=args.concurrency, bots=args.bots,
        think_ms=args.think, deals=args.deals, promote_after_s=args.promote_after,
        synchronous=not args.asynchronous, lag_s=args.lag, lease_s=args.lease_s,
        timeout_s=args.timeout)
    runs = []
    for n in range(args.runs):
        r = one_run(settings, args.keep)
        runs.append(r)
        if not args.json:
            print(f"run {n + 1}: {r['matches']} matches, at the kill {r['finished_at_kill']} "
                  f"finished / {r['running_at_kill']} running; pg_ctl promote "
                  f"{r['promote_s']} s; from the promotion: first result "
                  f"{r['first_result_s']} s, web 200 {r['first_web_200_s']} s, all done "
                  f"{r['all_done_s']} s; web errors in the gap {r['web_errors_in_gap']}; "
                  f"store retries {r['store_retries']}, lease renewals failed "
                  f"{r['lease_renewal_failures']}, replays {r['replays']}, commits lost "
                  f"{r['lost_commits']}; problems: {r['problems'] or 'none'}", flush=True)
    if args.json:
        print(json.dumps({"args": vars(args), "runs": runs}, indent=2))
    elif len(runs) > 1:
        for key in ("first_result_s", "first_web_200_s", "all_done_s"):
            values = [r[key] for r in runs if r[key] is not None]
            print(f"{key}: median {statistics.median(values):.2f}, max {max(values):.2f}")
    return 1 if any(r["problems"] for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
