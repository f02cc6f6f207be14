"""Where an uncached render's time goes: every page and API listing of bench/read_path.py,
rendered in this process (Flask's test client, ``READ_CACHE_S=0``), timed and optionally
profiled.

    python bench/read_path.py --seed-only                      # once: prints DATABASE
    python bench/render_time.py --reuse DATABASE               # p50/p95 of every URL
    python bench/render_time.py --reuse DATABASE --only /bots/1 --profile   # where it goes
    python bench/render_time.py --reuse DATABASE --only /tournaments/ --cold  # cache misses

No server, no sockets, no other process: the figure is the app's own work for one request
(routing, SQL round trips to the local PostgreSQL, ORM loading, templates, JSON encoding),
the part a page's code decides.  Columns: wall p50 and p95 (ms), this thread's CPU p50 and
p95 (ms: what the machine's other load inflates least), SQL statements, Python function
calls per render (independent of the load), status.  ``bench/read_path.py`` measures the
same URLs through gunicorn as deployed.  ``--profile`` runs ``pyinstrument`` (``pip install
pyinstrument``) over ``--requests`` renders of each URL and prints its call tree; with
``--cprofile``, ``cProfile`` counting CPU time, sorted by cumulative time.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("REDIS_NAMESPACE", f"bench-render-{os.getpid()}")

import psycopg
import read_path

from arena import create_app


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def target(client: Any, label: str) -> tuple[Any, str, dict[str, str]]:
    """The client, path and headers that a listed URL's ``label`` stands for (a signed-in
    page gets a client of its own, an API token its header: :mod:`read_path`)."""
    return (read_path.client_for(client.application, label, client), read_path.split(label)[0],
            read_path.credentials(label))


def render_caches(cold: bool) -> Callable[[], None]:
    """What to call before each timed render: nothing, or with ``cold`` (``--cold``) a
    function that empties the per-process render caches keyed by what the page shows (the
    tournament page's :data:`arena.routes.tournaments.TOURNAMENT_RENDERS`, which
    ``READ_CACHE_S=0`` does not turn off): a running tournament misses it after every
    finished match, and without ``--cold`` only its hit is timed.  Emptied outside the
    timed span."""
    if not cold:
        return lambda: None
    try:
        from arena.routes.tournaments import TOURNAMENT_RENDERS
    except ImportError:  # a checkout without it: nothing to empty
        return lambda: None
    return TOURNAMENT_RENDERS.clear


def time_url(client: Any, label: str, requests: int,
             clear: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """``requests`` renders of a listed URL one after another (after two to warm up), each
    after ``clear()`` (:func:`render_caches`)."""
    client, path, headers = target(client, label)
    for _ in range(2):
        clear()
        client.get(path, headers=headers)
    lat: list[float] = []
    cpu: list[float] = []
    status = 0
    for _ in range(requests):
        clear()
        t, c = time.perf_counter(), time.thread_time()
        resp = client.get(path, headers=headers)
        resp.get_data()
        lat.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
        status = resp.status_code
    return {"p50": pct(lat, 0.5), "p95": pct(lat, 0.95), "cpu_p50": pct(cpu, 0.5),
            "cpu_p95": pct(cpu, 0.95), "status": status}


def calls_per_render(client: Any, label: str, renders: int = 5,
                     clear: Callable[[], None] = lambda: None) -> int:
    """Python function calls one render makes (``cProfile``'s count): unlike a time, it
    does not depend on what else the machine runs, so two checkouts compare on a busy
    machine."""
    import cProfile
    import pstats

    client, path, headers = target(client, label)
    prof = cProfile.Profile()
    for _ in range(renders):
        clear()
        prof.enable()
        client.get(path, headers=headers).get_data()
        prof.disable()
    return round(pstats.Stats(prof).total_calls / renders)  # type: ignore[attr-defined]


def profile_url(client: Any, label: str, requests: int, use_pyinstrument: bool,
                clear: Callable[[], None] = lambda: None) -> str:
    client, path, headers = target(client, label)
    if use_pyinstrument:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0002)
        profiler.start()
        for _ in range(requests):
            clear()
            client.get(path, headers=headers).get_data()
        profiler.stop()
        return str(profiler.output_text(unicode=False, color=False, show_all=False))
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile(time.thread_time)  # CPU time: what the machine's load leaves out
    for _ in range(requests):
        clear()
        prof.enable()
        client.get(path, headers=headers).get_data()
        prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(60)
    return buf.getvalue()


def settle(app: Any) -> None:
    """As a deployed web worker does once the app is loaded (``post_worker_init`` in
    ``deploy/gunicorn.conf.py``): freeze the process's lifelong objects out of the garbage
    collector's walks (:func:`arena.core.heap.settle_heap`, when the checkout has it).
    Without it a full collection (one every 30-40 renders of a large page) walked ~150,000
    objects for 80-95 ms of CPU inside one render: the p95 of this bench measured the
    collector, not the page."""
    try:
        from arena.core.heap import settle_heap
    except ImportError:  # an older checkout (PYTHONPATH): measured as it would be served
        return
    settle_heap()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reuse", metavar="DATABASE", required=True,
                    help="a database seeded by bench/read_path.py --seed-only")
    ap.add_argument("--requests", type=int, default=60, help="renders per URL")
    ap.add_argument("--only", metavar="SUBSTRING", action="append",
                    help="only the URLs containing this (repeatable)")
    ap.add_argument("--exact", action="store_true", help="--only matches whole paths")
    ap.add_argument("--profile", action="store_true", help="print where the time goes")
    ap.add_argument("--cprofile", action="store_true", help="cProfile, not pyinstrument")
    ap.add_argument("--dump", metavar="FOLDER",
                    help="write each URL's body there (to compare two checkouts' pages)")
    ap.add_argument("--cold", action="store_true",
                    help="empty the render caches (the tournament page's) before every "
                         "render: time the miss, not the hit")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    admin = read_path.admin_url()
    pg_url = f"{admin.rsplit('/', 1)[0]}/{args.reuse}"
    sa_url = "postgresql+psycopg://" + pg_url.split("://", 1)[1]
    app = create_app({"DATABASE_URL": sa_url, "SECRET_KEY": secrets.token_hex(32),
                      "RATE_LIMITS_ENABLED": False, "READ_CACHE_S": 0,
                      "READ_CACHE_SHARED": False,
                      "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13"),
                      "INSTANCE_PATH": f"/tmp/{args.reuse}"})
    with psycopg.connect(pg_url) as conn:
        bots = int(conn.execute("SELECT count(*) FROM bots").fetchone()[0])  # type: ignore[index]
        matches = int(conn.execute(  # type: ignore[index]
            "SELECT count(*) FROM matches WHERE kind = 'ladder'").fetchone()[0])
        tids = {f: int(i) for f, i in conn.execute(
            "SELECT format, min(id) FROM tournaments GROUP BY format")}
    paths = [p for p in read_path.urls(app, tids, bots, matches)  # labels: with suffixes
             if not read_path.split(p)[1]]
    if args.only:
        paths = [p for p in paths if any((o == read_path.split(p)[0]) if args.exact else (o in p)
                                         for o in args.only)]
    client = app.test_client()
    clear = render_caches(args.cold)
    statements = read_path.count_statements(app, paths, clear)
    settle(app)
    rows = []
    for path in paths:
        row = {"path": path, **time_url(client, path, args.requests, clear),
               "statements": statements[path],
               "calls": calls_per_render(client, path, clear=clear)}
        rows.append(row)
        if args.dump:
            Path(args.dump).mkdir(parents=True, exist_ok=True)
            name = path.strip("/").replace("/", "_").replace("?", "_") or "home"
            (Path(args.dump) / name[:120]).write_bytes(read_path.client_for(
                app, path, client).get(read_path.split(path)[0],
                                       headers=read_path.credentials(path)).get_data())
        if not args.json:
            print(f"{path[:54]:54} {row['p50']:8} {row['p95']:8} | cpu {row['cpu_p50']:7} "
                  f"{row['cpu_p95']:7} {row['statements']:4} {row['calls']:7} {row['status']}",
                  flush=True)
        if args.profile:
            print(profile_url(client, path, args.requests, not args.cprofile, clear))
    if args.json:
        print(json.dumps({"bots": bots, "matches": matches, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
