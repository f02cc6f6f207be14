"""The ledger at 100,000 bots: results stored per second per rating family, finish latency, and
what a ladder round and a health sweep cost.

    python bench/ledger_throughput.py                                  # 100k bots, 300k matches
    python bench/ledger_throughput.py --bots 100000 --matches 300000 --results 3000 \\
        --processes 4 --threads 8 --json

1. **Seed** a PostgreSQL database of its own (``arena_ledger_<pid>``, dropped at the end) with
   ``--bots`` bots and ``--matches`` finished matches, their results, rating events and
   ratings, all in one family (``classic``): the seeding of ``bench/read_path.py``.  Every bot
   is admitted (its check passed).  The finished matches are rated in a family of their own
   (``ledger``), on the seeded tables.
2. **Finish** ``--results`` matches at once: each is a running four-seat match of random bots
   under a lease, finished by the worker's own code (:func:`arena.jobs.bodies.finish`: the
   seats, then under the family's ledger lock the result, the ratings and their events, the
   bots' idle time and health judgement) from ``--processes`` processes of ``--threads``
   threads each, as many concurrent finishers as worker threads storing results at once.
   Every match stores the same real played log (its standings rank the seats).  Printed:
   results stored per second (all finishers, one family: the family's rate), finish latency
   p50/p99 (one ``finish`` call: the transaction, the wait for the lock and for its batch
   included), the transactions that took the lock and the results in each (a checkout that
   groups the finishes of a process, :mod:`arena.jobs.ledger`, stores several in one), the
   wait for the lock and how long it was held (from the lock taken to the commit returned:
   the part that no two transactions of a family can overlap) and the ceiling that follows,
   results per second of lock held.  Then ``arena ratings --check``'s comparison: the
   stored ratings must equal a recompute of every result in the family.
3. **Ladder round**: :func:`arena.play.ladder.run_round` (make and enqueue the matches) at
   this size, with ``LADDER_MAX_MATCHES_PER_ROUND`` = 8 (the default) and ``--round-matches``.
4. **Health sweep**: the query of :func:`arena.bots.sweep.sweep` when every bot is due (the
   first sweep after an outage), and a whole sweep (query and enqueues) with the bots' last
   checks spread over 1.1 ``HEALTH_SWEEP_INTERVAL_S`` (about a tenth of them due: the steady
   state, the clock sweeping ten times an interval).

``--keep`` keeps the seeded database and ``--reuse NAME`` runs again on it without seeding
(new running matches each time), so two checkouts compare back to back on one database;
``--results 0`` skips the finishing, ``--profile`` prints a cProfile of each ladder round.
Besides the lock's hold the bench prints the commit's part of it (``commit_mean_ms``: the
rest is the statements under the lock), and a round's CPU seconds beside its wall time (on a
shared host, the part the load does not add).

``PYTHONPATH=<another checkout>`` measures that checkout's finish (this bench's seeding).
Redis is ``REDIS_URL`` (else ``redis://127.0.0.1:6379/13``) under a namespace of the run's
own, emptied at the end.  PostgreSQL is ``ARENA_BENCH_PG_URL`` or 127.0.0.1:5432 (trust).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))  # after PYTHONPATH: another checkout's code wins
sys.path.append(str(HERE))
NAMESPACE = f"bench-ledger-{os.getpid()}"
os.environ.setdefault("REDIS_NAMESPACE", NAMESPACE)
os.environ.setdefault("RQ_KEY_PREFIX", f"{NAMESPACE}:rq")

import psycopg  # noqa: E402
import read_path  # noqa: E402
from read_path import admin_url, log, seed  # noqa: E402
from sqlalchemy import update  # noqa: E402

from arena import create_app  # noqa: E402
from arena.core.storage import get_db, upgrade  # noqa: E402

# Names of six digits: read_path's five would repeat past 99,999 bots (a unique index).
read_path.SEED_SQL = [(n, q.replace("lpad(g::text, 5, '0')", "lpad(g::text, 6, '0')"))
                      for n, q in read_path.SEED_SQL]

FAMILY = "ledger"
"""The family the finished matches are rated in: a new one beside the seeded ``classic`` (whose
ratings are not Elo arithmetic, so only this one can be compared with a recompute); the tables
and their indexes are the seeded ones."""
RUNNING_SQL = """
    INSERT INTO matches (kind, state, ruleset, family, deals, seed, limits, rated, created_at,
                         queued_at, started_at, attempts, enqueues, job_id, lease_token,
                         lease_owner, lease_expires_at, error)
    SELECT 'ladder', 'running', 'standard', %(family)s, 2, g,
           '{"deadline_ms": 1000, "time_bank_ms": 10000, "max_strikes": 10,
             "call_deadline_ms": 5000}'::json, true, now(), now(), now(), 1, 1,
           'bench-' || g, 'bench-token', 'bench', now() + interval '1 hour', ''
    FROM generate_series(1, %(n)s) g
    RETURNING id"""


def make_running(url: str, n: int, bots: int, rng: random.Random) -> list[int]:
    """``n`` running matches (a lease each) of four distinct random bots."""
    with psycopg.connect(url) as conn:
        ids = [int(r[0]) for r in conn.execute(RUNNING_SQL,
                                                {"n": n, "family": FAMILY}).fetchall()]
        conn.execute("UPDATE matches SET lease_token = 'bench-token-' || id WHERE id = ANY(%s)",
                     (ids,))
        rows = []
        for m in ids:
            for seat, b in enumerate(rng.sample(range(1, bots + 1), 4)):
                rows.append((m, seat, b, b))
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO match_seats (match_id, seat, bot_id, bot_version_id) "
                            "VALUES (%s, %s, %s, %s)", rows)
        conn.commit()
    return ids


def played_result() -> Any:
    """A real played match (four first-legal players, two deals), as the worker keeps it."""
    from arena.jobs.result_spool import FinishedResult
    from referee import find_ruleset
    from referee.runner.match import run_match
    from referee.wire.players import LocalPlayer

    rec = run_match(find_ruleset("standard"),
                    [LocalPlayer(lambda r: {"move": r["legal_moves"][0]["id"]},
                                 name=f"p{i}") for i in range(4)], seed=7, deals=2)
    return FinishedResult.of(rec)


# --- the finishers ---------------------------------------------------------------------------


def finisher(settings: dict[str, Any], ids: list[int], threads: int, start_at: float,
             out: Any) -> None:
    """One process: ``threads`` threads finishing ``ids``; sends its samples to ``out``."""
    from arena.jobs import bodies

    app = create_app({**settings, "DATABASE_POOL_SIZE": threads, "DATABASE_MAX_OVERFLOW": 0})
    result = played_result()
    local = threading.local()
    # The statement that takes the family's lock: this checkout's, or an older one's.
    lock_name = "count_and_lock" if hasattr(bodies, "count_and_lock") else "lock_family"
    real_lock = getattr(bodies, lock_name)
    together: Any = getattr(bodies, "_store_together", None)  # a checkout that batches
    batches: list[tuple[int, float, float, float]] = []
    """Per transaction that took the lock: (results in it, wait for the lock, hold, the
    commit's part of the hold)."""

    def committing(conn: Any) -> None:  # the COMMIT is sent: the rest of the hold is its
        local.committing = time.perf_counter()

    from sqlalchemy import event

    event.listen(get_db(app).engine, "commit", committing)

    def timed_lock(s: Any, family: str, *args: Any) -> Any:
        if not getattr(local, "asked", 0.0):
            local.asked = time.perf_counter()
        row = real_lock(s, family, *args)
        if not getattr(local, "locked", 0.0):
            local.locked = time.perf_counter()
        return row

    def timed_together(app: Any, works: list[Any]) -> list[str]:
        local.asked = local.locked = local.committing = 0.0
        outcomes: list[str] = together(app, works)
        if local.locked:
            now = time.perf_counter()
            batches.append((outcomes.count("finished"), local.locked - local.asked,
                            now - local.locked, now - (local.committing or now)))
        return outcomes

    setattr(bodies, lock_name, timed_lock)
    if together is not None:
        bodies._store_together = timed_together
    todo = list(ids)
    guard = threading.Lock()
    samples: list[tuple[float, str]] = []

    def run() -> None:
        with app.app_context():
            while True:
                with guard:
                    if not todo:
                        return
                    m = todo.pop()
                local.asked = local.locked = local.committing = 0.0
                t0 = time.perf_counter()
                outcome = bodies.finish(app, m, f"bench-token-{m}", result)
                t1 = time.perf_counter()
                samples.append((t1 - t0, outcome))
                if together is None and local.locked:  # one finish, one transaction
                    batches.append((1, local.locked - local.asked, t1 - local.locked,
                                    t1 - (local.committing or t1)))

    while time.time() < start_at:  # every process starts together
        time.sleep(0.005)
    pool = [threading.Thread(target=run) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    get_db(app).dispose()
    out.put((samples, batches))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def finish_many(settings: dict[str, Any], ids: list[int], processes: int,
                threads: int) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    start_at = time.time() + 3.0
    chunks = [ids[i::processes] for i in range(processes)]
    procs = [ctx.Process(target=finisher, args=(settings, c, threads, start_at, out))
             for c in chunks]
    for p in procs:
        p.start()
    samples: list[tuple[float, str]] = []
    batches: list[tuple[int, float, float, float]] = []
    for _ in procs:
        got = out.get()
        samples += got[0]
        batches += got[1]
    ended = time.time()
    for p in procs:
        p.join()
    stored = [x for x in samples if x[1] == "finished"]
    wall = ended - start_at
    latency = [x[0] * 1000 for x in stored]
    wait = [b[1] * 1000 for b in batches]
    hold = [b[2] * 1000 for b in batches]
    return {
        "finishers": processes * threads, "results": len(stored),
        "not_stored": len(samples) - len(stored), "wall_s": round(wall, 2),
        "results_per_s": round(len(stored) / wall, 1),
        "finish_p50_ms": round(pct(latency, 0.5), 1), "finish_p99_ms": round(pct(latency, 0.99), 1),
        "transactions": len(batches),
        "results_per_transaction": round(sum(b[0] for b in batches) / len(batches), 2),
        "lock_wait_p50_ms": round(pct(wait, 0.5), 1), "lock_wait_p99_ms": round(pct(wait, 0.99), 1),
        "lock_hold_mean_ms": round(statistics.fmean(hold), 2),
        "lock_hold_p50_ms": round(pct(hold, 0.5), 2), "lock_hold_p99_ms": round(pct(hold, 0.99), 2),
        # The commit (the WAL flush) of the hold; the rest is the statements under the lock.
        "commit_mean_ms": round(statistics.fmean(b[3] * 1000 for b in batches), 2),
        # The family's ceiling: results stored per second of lock held.
        "lock_bound_per_s": round(sum(b[0] for b in batches) / (sum(hold) / 1000), 1),
    }


# --- the clock's duties at this size ---------------------------------------------------------


def time_ladder(app: Any, per_round: list[int], profile: bool = False) -> list[dict[str, Any]]:
    import cProfile
    import pstats

    from arena.core.models import Match
    from arena.play.ladder import run_round

    out = []
    for limit in per_round:
        prof = cProfile.Profile() if profile else None
        t0, cpu0 = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.enable()
        made = run_round(app, max_matches=limit, seed=1)
        spent, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        if prof is not None:
            prof.disable()
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
        with get_db(app).begin() as s:  # out of the way of the next round
            s.execute(update(Match).where(Match.id.in_(made))
                      .values(state="failed", error="bench"))
        # The CPU seconds of this process: on a shared host, the part the load does not add.
        out.append({"max_matches": limit, "made": len(made), "seconds": round(spent, 2),
                    "cpu_s": round(cpu, 2)})
        log(f"ladder round of up to {limit} matches: {len(made)} made in {spent:.2f} s "
            f"({cpu:.2f} s of CPU)")
    return out


def time_sweep(app: Any, url: str) -> dict[str, Any]:
    """The sweep's query with every bot due, and a whole sweep in the steady state."""
    from arena.bots.sweep import due_bots, sweep
    from arena.core.queue import get_queue

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    due = due_bots(app)
    out["all_due"] = {"due": len(due), "query_s": round(time.perf_counter() - t0, 2)}
    interval = float(app.config["HEALTH_SWEEP_INTERVAL_S"])
    with psycopg.connect(url, autocommit=True) as conn:  # last checks over 1.1 intervals
        conn.execute("UPDATE bots SET last_health_at = now() at time zone 'utc' "
                     "- (id %% 1100) * %s * interval '1 second'", (interval / 1000,))
    t0 = time.perf_counter()
    swept = sweep(app)
    spent = time.perf_counter() - t0
    out["steady"] = {"due": len(swept), "seconds": round(spent, 2),
                     "enqueued_per_s": round(len(swept) / spent, 1)}
    get_queue(app).queue.empty()  # type: ignore[no-untyped-call]
    log(f"health sweep: {out}")
    return out


# --- main ------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bots", type=int, default=100_000)
    ap.add_argument("--matches", type=int, default=300_000, help="finished matches seeded")
    ap.add_argument("--results", type=int, default=3000, help="matches finished at once")
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--threads", type=int, default=8, help="finishing threads per process")
    ap.add_argument("--round-matches", type=int, default=300,
                    help="a ladder round's size for the 100k plan (besides the default 8)")
    ap.add_argument("--no-clock", action="store_true", help="skip the ladder and the sweep")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true",
                    help="keep the database (its name is printed) for --reuse")
    ap.add_argument("--reuse", metavar="NAME",
                    help="a database kept by --keep: no seeding, and it is kept again")
    ap.add_argument("--profile", action="store_true", help="cProfile the ladder rounds")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up (finally) on TERM
    admin = admin_url()
    name = args.reuse or f"arena_ledger_{os.getpid()}"
    keep = args.keep or bool(args.reuse)
    pg_url = f"{admin.rsplit('/', 1)[0]}/{name}"
    sa_url = "postgresql+psycopg://" + pg_url.split("://", 1)[1]
    if not args.reuse:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    settings: dict[str, Any] = {
        "DATABASE_URL": sa_url, "SECRET_KEY": uuid.uuid4().hex * 2,
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13"),
        "REDIS_NAMESPACE": NAMESPACE, "QUEUE_NAME": f"bench-ledger-{os.getpid()}",
        "RATE_LIMITS_ENABLED": False, "LIVE_ENABLED": False,
        "INSTANCE_PATH": f"/tmp/{name}"}
    report: dict[str, Any] = {"bots": args.bots, "matches": args.matches}
    app = None
    try:
        app = create_app(settings)
        if not args.reuse:
            upgrade(get_db(app))
            log(f"seeding {args.bots} bots and {args.matches} matches into {name}")
            report["seed_s"] = seed(pg_url, args.bots, args.matches)["total"]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE bots SET check_state = 'passed'")
            conn.execute("UPDATE matches SET state = 'failed' "
                         "WHERE state IN ('queued', 'running')")  # a kept run's leftovers
            conn.execute("VACUUM ANALYZE bots")
        if args.results:
            ids = make_running(pg_url, args.results, args.bots, random.Random(1))
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
            log(f"finishing {len(ids)} matches with {args.processes} x {args.threads} "
                "finishers")
            report["ledger"] = finish_many(settings, ids, args.processes, args.threads)
            log(f"ledger: {report['ledger']}")
        if args.results:
            from arena.play.ratings import check_all

            _, problems = check_all(get_db(app), initial=float(app.config["ELO_INITIAL"]),
                                    k=float(app.config["ELO_K"]), family=FAMILY)
            report["ratings_equal_recompute"] = not problems
            report["recompute_problems"] = problems[:5]
            log(f"ratings = recompute: {not problems} ({len(problems)} differences)")
        if not args.no_clock:
            report["ladder"] = time_ladder(app, [8, args.round_matches], args.profile)
            report["sweep"] = time_sweep(app, pg_url)
    finally:
        if app is not None:
            get_db(app).dispose()
            from arena.core.queue import get_queue

            redis = get_queue(app).redis
            for key in redis.scan_iter(f"{NAMESPACE}:*", count=1000):
                redis.delete(key)
        if keep:
            log(f"kept the database {name} (--reuse {name}; drop it when done)")
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(json.dumps(report, indent=None if not args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
