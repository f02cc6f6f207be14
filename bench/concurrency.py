"""Many matches in one worker process: throughput vs the ideal, memory, connections, CPU, deadlines.

    python bench/concurrency.py                          # N = 10 50 100 200, think 100 and 500 ms
    python bench/concurrency.py --n 100 --think 500 --json
    python bench/concurrency.py --n 4 --think 100 --concurrency 0     # RQ's forking worker
    python bench/concurrency.py --n 100 --think 500 --against main --rounds 3
    python bench/concurrency.py --n 100 --think 500 --against /work/wt/base \
        --against-python /work/wt/base/.venv/bin/python --rounds 2

``--against REF`` runs a second worker from a git worktree of ``REF`` (made in a temporary
folder, removed at the end; or, when REF is the folder of a checkout, that checkout as it
stands, left in place) beside this checkout's, in the same run: same database, bots,
matches and machine, the two alternating run by run (this tree first, then REF, then REF
first...) so drifting machine load hits both.  It prints each run and then, per think time
and N, the median CPU per move of each and their ratio (this tree / REF).  Only the worker
process is REF's; the bench, its seeding and the bots are this checkout's (both trees must
share the database schema).

Everything is real and local: PostgreSQL (a fresh database ``bench_concurrency_<pid>`` on
``--pg``, dropped at the end), Redis (``REDIS_URL``, else the embedded one), ONE
``arena worker`` process (a fresh one per run, ``WORKER_CONCURRENCY`` = N + probes unless
``--concurrency`` says otherwise), and loopback bots in one asyncio process of their own
(``bench/thinking_bots.py``) that think a fixed time per move.

Each run enqueues N matches of ``--deals`` deals, all with one seed (so all have the same
49 turns a deal, every one a bot call), plus ``max(2, N // 10)`` *probe* matches of one deal
in which seat 0 is a bot that never answers (no time bank, no forfeit: it is called, and
times out, every fourth turn; the probes' deadline is the think time + 150 ms so their other
seats never time out).  The probes are enqueued first and are shorter, so every deadline they
measure fires while the N matches run.  Then one worker starts, and the script waits until all
are finished.  It prints, per run:

* ``matches/min`` of the N matches: N / (last finish - first claim), and ``ideal``: N
  finishing in the time their bots' thinking alone takes (49 x deals x think); ``ratio`` is
  the two divided (1.0: the worker adds nothing);
* ``slowdown p50``: each match's own duration / its thinking time; ``start spread`` and
  ``finish spread``: from the first of the N matches to start (finish) to the last (the
  matches are dealt alike, so they would all finish within a move of each other);
* the worker's peak RSS and PSS (``/proc/<pid>/smaps_rollup``, the main process; ``family``
  adds RQ's scheduler child), sampled every 0.2 s;
* database connections the worker held open (peak) and peak busy (not idle), from
  ``pg_stat_activity`` (its ``application_name``);
* CPU per move: the worker process's CPU time (user + system, plus its finished work horses'
  with ``--concurrency 0``) during the run / bot moves played (all of its work: dequeue,
  claims, the referee, HTTP, finishing transactions);
* deadline overshoot p50/p99/max: how long after its deadline each call to the hanging bot
  returned (latency - deadline, as the referee measured it) -- measured while the N matches
  run; ``waves p99``: of each probe's first two and last two timeouts only, which fire while
  the matches start together and while matches dealt alike finish their deals together (the
  tail used to live there: ``arena.core.bookkeeping``) -- and ``call overhead``: a thinking
  bot's call latency - its think time (referee and loopback HTTP both ways, and the bot
  process's own scheduling).

The bots share the machine's cores with the worker, Redis and PostgreSQL: on a small machine
the figures include their CPU contention too.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# RQ takes its key prefix from the environment when first imported (below, before the app
# is built); an explicit one is the bench's own namespace, inherited by the worker.
os.environ.setdefault("RQ_KEY_PREFIX", f"bench-concurrency-{os.getpid()}:rq")

import psycopg
from rq import SimpleWorker, Worker
from sqlalchemy import select

from arena import create_app
from arena.core.models import Bot, Match, MatchResult
from arena.core.queue import get_queue
from arena.core.storage import get_db, upgrade
from arena.ops.procs import descendants, start_arena, stop_all
from arena.play.matches import create_match, enqueue_match
from referee.runner.match import Limits

HERE = Path(__file__).resolve().parent
TURNS_PER_DEAL = 49
"""Turns of a deal when every bot plays its lowest card or passes (13 leads, 12 x 3 passes)."""
APP_NAME = "arena-bench-worker"
PROBE_EXTRA_MS = 150
"""A probe match's per-move deadline is the think time plus this."""
LISTENING = re.compile(r"(\S+) listening on (http://\S+)")


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 2)


# --- processes and measurements ----------------------------------------------------------------


def start_bots(thinks: list[int]) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    args = [sys.executable, str(HERE / "thinking_bots.py"), "--hang", "hang"]
    for ms in thinks:
        args += ["--think", f"think{ms}={ms}"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stderr is not None
    urls: dict[str, str] = {}
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    buf = b""
    deadline = time.monotonic() + 30
    while len(urls) < len(thinks) + 1 and time.monotonic() < deadline:
        if sel.select(timeout=0.2):
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
            urls = dict(LISTENING.findall(buf.decode()))
    sel.close()
    if len(urls) < len(thinks) + 1:
        proc.kill()
        raise SystemExit(f"bot server did not start: {buf.decode()[-500:]}")
    return proc, urls


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of the process, plus its waited-for children's (the
    forking worker's horses)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = [int(x) for x in f.read().rsplit(")", 1)[1].split()[11:15]]
    tick = os.sysconf("SC_CLK_TCK")
    return (fields[0] + fields[2]) / tick, (fields[1] + fields[3]) / tick


def rss_pss_mb(pid: int) -> tuple[float, float]:
    rss = pss = 0.0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024
    except OSError:
        pass
    return rss, pss


@dataclass
class Sampler:
    """Samples the worker's memory and database connections every 0.2 s."""

    pid: int
    pg_url: str
    dbname: str
    peak_rss: float = 0.0
    peak_pss: float = 0.0
    peak_family_pss: float = 0.0
    peak_conns: int = 0
    peak_busy: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            while not self.stop.wait(0.2):
                rss, pss = rss_pss_mb(self.pid)
                family = pss + sum(rss_pss_mb(p)[1] for p in descendants(self.pid))
                self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
                self.peak_family_pss = max(self.peak_family_pss, family)
                row = conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') "
                    "FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
                    (self.dbname, APP_NAME)).fetchone()
                assert row is not None
                self.peak_conns = max(self.peak_conns, int(row[0]))
                self.peak_busy = max(self.peak_busy, int(row[1]))


# --- one run -----------------------------------------------------------------------------------


def run(app: Any, env: dict[str, str], bots: dict[str, list[int]], pg: tuple[str, str],
        think_ms: int, n: int, deals: int, concurrency: int | None,
        profile: str | None = None, probes: int | None = None,
        tree: tuple[str, str | None, str | None] = ("this", None, None)) -> dict[str, Any]:
    """One run; ``tree``: (label, checkout folder, interpreter) of the worker (None: this
    checkout, this interpreter)."""
    probes = max(2, n // 10) if probes is None else probes
    normal_limits = Limits(deadline_ms=max(1000, think_ms * 2), time_bank_ms=0,
                           max_strikes=None, call_deadline_ms=5000)
    probe_limits = Limits(deadline_ms=think_ms + PROBE_EXTRA_MS, time_bank_ms=0, max_strikes=None,
                          call_deadline_ms=5000)
    db = get_db(app)
    thinking = bots[f"think{think_ms}"]
    with db.begin() as s:
        table = [s.get(Bot, b) for b in thinking]
        probe_table = [s.get(Bot, bots["hang"][0]), *table[:3]]
        probe_ids = [create_match(s, bots=probe_table, ruleset="standard", deals=1,  # type: ignore[arg-type]
                                  limits=probe_limits, kind="admin", seed=1, rated=False).id
                     for _ in range(probes)]
        normal_ids = [create_match(s, bots=table, ruleset="standard", deals=deals,  # type: ignore[arg-type]
                                   limits=normal_limits, kind="admin", seed=1).id
                      for _ in range(n)]
    for m in probe_ids + normal_ids:
        assert enqueue_match(app, m)
    wenv = dict(env)
    wenv["WORKER_CONCURRENCY"] = str(n + probes if concurrency is None else concurrency)
    worker = start_arena(["worker", "--no-clock"], env=wenv, name="worker", cwd=tree[1],
                         python=tree[2])
    try:
        queue = get_queue(app).queue
        while not Worker.all(queue=queue):
            if not worker.alive():
                raise SystemExit("the worker exited at start")
            time.sleep(0.05)
        user0, sys0 = cpu_seconds(worker.pid)
        spy = None
        if profile:  # collapsed stacks of the thread holding the GIL (py-spy on PATH): the
            # worker's idle threads wait in system calls that py-spy would count as running
            out = Path(profile) / f"worker-{tree[0]}-think{think_ms}-n{n}-{time.time():.0f}.txt"
            spy = subprocess.Popen(["py-spy", "record", "--pid", str(worker.pid), "--format",
                                    "raw", "--output", str(out), "--rate", "200", "--gil"],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        sampler = Sampler(worker.pid, pg[0], pg[1])
        th = threading.Thread(target=sampler.run, daemon=True)
        th.start()
        ids = probe_ids + normal_ids
        deadline = time.monotonic() + 1800
        while True:
            with db.begin() as s:
                left = s.scalar(select(Match.id).where(Match.id.in_(ids),
                                                       Match.state.not_in(("finished", "failed")))
                                .limit(1))
            if left is None:
                break
            if time.monotonic() > deadline or not worker.alive():
                raise SystemExit("benchmark run did not finish")
            time.sleep(0.2)
        user1, sys1 = cpu_seconds(worker.pid)
        user, system = user1 - user0, sys1 - sys0
        cpu = user + system
        sampler.stop.set()
        th.join()
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
    finally:
        stop_all([worker])
    result = summarise(app, think_ms, n, probes, deals, probe_ids, normal_ids, cpu, sampler,
                       int(wenv["WORKER_CONCURRENCY"]))
    result["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    result["cpu_user_s"], result["cpu_system_s"] = round(user, 2), round(system, 2)
    result["tree"] = tree[0]
    return result


def summarise(app: Any, think_ms: int, n: int, probes: int, deals: int, probe_ids: list[int],
              normal_ids: list[int], cpu: float, sampler: Sampler,
              concurrency: int) -> dict[str, Any]:
    with get_db(app).begin() as s:
        rows = {m.id: (m.state, m.started_at, m.finished_at)
                for m in s.scalars(select(Match).where(Match.id.in_(probe_ids + normal_ids)))}
        logs = {r.match_id: json.loads(gzip.decompress(r.log_gz))
                for r in s.scalars(select(MatchResult)
                                   .where(MatchResult.match_id.in_(probe_ids + normal_ids)))}
    ideal_match_s = TURNS_PER_DEAL * deals * think_ms / 1000
    spans = [(st, f) for m in normal_ids if (st := rows[m][1]) and (f := rows[m][2])]
    first = min(st for st, _ in spans)
    last = max(f for _, f in spans)
    wall = (last - first).total_seconds()
    starts = sorted(st for st, _ in spans)
    finishes = sorted(f for _, f in spans)
    slowdowns = [(f - st).total_seconds() / ideal_match_s for st, f in spans]
    moves = 0
    overhead: list[float] = []
    overshoot: list[float] = []
    in_waves: list[float] = []  # a probe's first two and last two timeouts (see below)
    late_probes = 0
    for m, doc in logs.items():
        deadline_ms = float(think_ms + PROBE_EXTRA_MS)
        mine: list[float] = []
        for d in doc["deals"]:
            for t in d["turns"]:
                if t["latency_ms"] is None:
                    continue
                moves += 1
                if m in probe_ids and t["seat"] == 0:
                    mine.append(t["latency_ms"] - deadline_ms)
                elif t["fault"] is None:
                    overhead.append(t["latency_ms"] - think_ms)
        overshoot += mine
        in_waves += mine[:2] + mine[-2:]
        ended = rows[m][2]
        if m in probe_ids and ended is not None and ended > last:
            late_probes += 1
    return {
        "think_ms": think_ms,
        "n": n,
        "probes": probes,
        "concurrency": concurrency,
        "deals": deals,
        "failed": sum(1 for m in normal_ids + probe_ids if rows[m][0] != "finished"),
        "wall_s": round(wall, 2),
        "ideal_s": round(ideal_match_s, 2),
        "matches_per_min": round(n / wall * 60, 1),
        "ideal_matches_per_min": round(n / ideal_match_s * 60, 1),
        "ratio": round(ideal_match_s / wall, 3),
        "start_spread_s": round((starts[-1] - starts[0]).total_seconds(), 2),
        "finish_spread_s": round((finishes[-1] - finishes[0]).total_seconds(), 2),
        "slowdown_p50": percentile(slowdowns, 0.5),
        "slowdown_max": round(max(slowdowns), 3),
        "worker_rss_mb": round(sampler.peak_rss, 1),
        "worker_pss_mb": round(sampler.peak_pss, 1),
        "worker_family_pss_mb": round(sampler.peak_family_pss, 1),
        "db_connections_peak": sampler.peak_conns,
        "db_connections_busy_peak": sampler.peak_busy,
        "moves": moves,
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_move": round(cpu / moves * 1000, 3) if moves else None,
        "overshoot_samples": len(overshoot),
        "probes_after_last_match": late_probes,
        "overshoot_p50_ms": percentile(overshoot, 0.5),
        "overshoot_p99_ms": percentile(overshoot, 0.99),
        "overshoot_max_ms": round(max(overshoot), 2) if overshoot else None,
        "overshoot_waves_p99_ms": percentile(in_waves, 0.99),
        "call_overhead_p50_ms": percentile(overhead, 0.5),
        "call_overhead_p99_ms": percentile(overhead, 0.99),
    }


# --- setup -------------------------------------------------------------------------------------


def pg_admin(base: str) -> str:
    for user in ("root", "postgres"):
        url = f"postgresql://{user}@{base}/test"
        try:
            with psycopg.connect(url, connect_timeout=3):
                return url
        except Exception:
            continue
    raise SystemExit(f"no PostgreSQL at {base}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10, 50, 100, 200])
    ap.add_argument("--think", type=int, nargs="+", default=[100, 500], help="ms per move")
    ap.add_argument("--deals", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=None,
                    help="WORKER_CONCURRENCY (default: N + probes; 0: RQ's forking worker)")
    ap.add_argument("--probes", type=int, default=None,
                    help="probe matches per run (default max(2, N // 10)); each gives 13 "
                         "deadline samples, so p99 over a few hundred needs 20 or more")
    ap.add_argument("--pg", default="127.0.0.1:5432", help="PostgreSQL host:port (trust)")
    ap.add_argument("--pool-size", type=int, default=None, help="DATABASE_POOL_SIZE")
    ap.add_argument("--max-overflow", type=int, default=None, help="DATABASE_MAX_OVERFLOW")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--profile", default=None, metavar="DIR",
                    help="record the worker with py-spy (collapsed stacks) into DIR")
    ap.add_argument("--against", default=None, metavar="REF",
                    help="also run REF's worker (a git worktree of it, or the checkout in "
                         "folder REF), alternating with ours")
    ap.add_argument("--rounds", type=int, default=1,
                    help="runs of each tree per think time and N (with --against)")
    ap.add_argument("--against-python", default=None, metavar="PATH",
                    help="the interpreter of REF's worker, e.g. a venv made from REF's own "
                         "dependencies (default: this one)")
    args = ap.parse_args()
    trees: list[tuple[str, str | None, str | None]] = [("this", None, None)]
    made = bool(args.against) and not Path(args.against).is_dir()
    other = (worktree_of(args.against) if made else args.against) if args.against else None
    if other is not None:
        trees.append((args.against, other, args.against_python))

    admin = pg_admin(args.pg)
    dbname = f"bench_concurrency_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    user_host = admin.split("://", 1)[1].rsplit("/", 1)[0]
    db_url = f"postgresql+psycopg://{user_host}/{dbname}"
    inst = tempfile.mkdtemp(prefix="arena-bench-")
    app = create_app({"INSTANCE_PATH": inst, "DATABASE_URL": db_url,
                      "ALLOW_PRIVATE_BOT_URLS": True,
                      "ADMIN_TOKEN": "bench-admin-token-0123456789abcdefghij",
                      "RATE_LIMITS_ENABLED": False,
                      "WORKER_CLOCK": False, "HEALTH_DEADLINE_MS": 5000,
                      "QUEUE_NAME": f"bench-concurrency-{os.getpid()}"})
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up on SIGTERM too
    bot_proc: subprocess.Popen[bytes] | None = None
    results: list[dict[str, Any]] = []
    try:
        upgrade(get_db(app))
        bot_proc, urls = start_bots(args.think)
        client = app.test_client()
        bots: dict[str, list[int]] = {}
        for name, url in urls.items():
            for i in range(4 if name != "hang" else 1):
                # One path per seat: a match seats an endpoint once (thinking_bots.py
                # serves every path prefix of its port).
                r = client.post("/api/bots", json={"name": f"{name}-{i}", "url": f"{url}/s{i}"})
                assert r.status_code == 202, r.get_json()
                bots.setdefault(name, []).append(r.get_json()["bot"]["id"])
        with app.app_context():  # the submissions' health checks, as a worker runs them
            SimpleWorker([get_queue(app).queue], connection=get_queue(app).redis).work(
                burst=True, logging_level="WARNING")
        for name, ids in bots.items():
            for b in ids:  # (the hanging bot fails its probe; matches made here seat it)
                check = client.get(f"/api/bots/{b}/check").get_json()
                assert check["state"] == ("failed" if name == "hang" else "passed"), check
        env = dict(os.environ)
        env.update({"DATABASE_URL": f"{db_url}?application_name={APP_NAME}",
                    "REDIS_URL": get_queue(app).url, "QUEUE_NAME": str(app.config["QUEUE_NAME"]),
                    "SECRET_KEY": str(app.config["SECRET_KEY"]), "ALLOW_PRIVATE_BOT_URLS": "1",
                    "ARENA_INSTANCE_PATH": inst, "WORKER_CLOCK": "0"})
        if args.pool_size is not None:
            env["DATABASE_POOL_SIZE"] = str(args.pool_size)
        if args.max_overflow is not None:
            env["DATABASE_MAX_OVERFLOW"] = str(args.max_overflow)
        for think in args.think:
            for n in args.n:
                for rnd in range(args.rounds):
                    order = trees if rnd % 2 == 0 else trees[::-1]
                    for tree in order:
                        res = run(app, env, bots, (admin, dbname), think, n, args.deals,
                                  args.concurrency, args.profile, args.probes, tree)
                        results.append(res)
                        if not args.json:
                            print(line(res), flush=True)
    finally:
        if other is not None and made:
            subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force",
                            other], check=False, capture_output=True)
        if bot_proc is not None:
            bot_proc.kill()
            bot_proc.wait()
        emb = app.extensions.get("arena.embedded_redis")
        if emb is not None:
            emb.stop()
        get_db(app).dispose()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        shutil.rmtree(inst, ignore_errors=True)
    compared = compare(results, args.against) if args.against else []
    if args.json:
        print(json.dumps({"benchmark": "concurrency", "nproc": os.cpu_count(),
                          "results": results, "compared": compared}, indent=2))
    else:
        for c in compared:
            print(f"think {c['think_ms']} ms N={c['n']}: CPU/move this tree "
                  f"{c['this_cpu_ms_per_move']} ms vs {args.against} "
                  f"{c['against_cpu_ms_per_move']} ms (medians of {c['runs']} runs each): "
                  f"ratio {c['ratio']}", flush=True)
    return 0


def worktree_of(ref: str) -> str:
    """A detached git worktree of ``ref`` in a temporary folder (removed by the caller)."""
    folder = tempfile.mkdtemp(prefix="arena-bench-against-")
    os.rmdir(folder)
    subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach", folder, ref],
                   check=True, capture_output=True)
    return folder


def compare(results: list[dict[str, Any]], ref: str) -> list[dict[str, Any]]:
    """Per think time and N: the median CPU per move of each tree and their ratio."""
    out = []
    for think, n in sorted({(r["think_ms"], r["n"]) for r in results}):
        def cpu(tree: str, think: int = think, n: int = n) -> list[float]:
            return [r["cpu_ms_per_move"] for r in results if r["tree"] == tree
                    and r["think_ms"] == think and r["n"] == n and r["cpu_ms_per_move"]]
        ours, theirs = cpu("this"), cpu(ref)
        if not ours or not theirs:
            continue
        a, b = statistics.median(ours), statistics.median(theirs)
        out.append({"think_ms": think, "n": n, "runs": min(len(ours), len(theirs)),
                    "this_cpu_ms_per_move": round(a, 3), "against_cpu_ms_per_move": round(b, 3),
                    "this_runs": ours, "against_runs": theirs, "ratio": round(a / b, 3)})
    return out


def line(r: dict[str, Any]) -> str:
    return (f"[{r['tree']}] think {r['think_ms']:>3} ms  N={r['n']:>3} (+{r['probes']} probes, "
            f"{r['concurrency']} threads): {r['matches_per_min']:7.1f} matches/min vs ideal "
            f"{r['ideal_matches_per_min']:7.1f} (ratio {r['ratio']:.3f}, slowdown p50 "
            f"{r['slowdown_p50']}, start spread {r['start_spread_s']} s, finish spread "
            f"{r['finish_spread_s']} s)  RSS {r['worker_rss_mb']} MB PSS {r['worker_pss_mb']} MB "
            f"(family {r['worker_family_pss_mb']})  DB conns {r['db_connections_peak']} "
            f"(busy {r['db_connections_busy_peak']})  CPU/move {r['cpu_ms_per_move']} ms  "
            f"(user {r['cpu_user_s']} s, system {r['cpu_system_s']} s)  "
            f"overshoot p50 {r['overshoot_p50_ms']} p99 {r['overshoot_p99_ms']} max "
            f"{r['overshoot_max_ms']} ms (waves p99 {r['overshoot_waves_p99_ms']}; "
            f"n={r['overshoot_samples']}, "
            f"{r['probes_after_last_match']} probes ended late)  call overhead p50 "
            f"{r['call_overhead_p50_ms']} p99 {r['call_overhead_p99_ms']} ms  "
            f"failed {r['failed']}  (load {r['loadavg_1m_after']})")


if __name__ == "__main__":
    raise SystemExit(main())
