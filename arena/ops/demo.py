"""``arena demo``: the whole service on this machine, with the sample bots.

1. A fresh instance folder (SQLite database, schema migrated) and the embedded Redis.
2. The web app on ``127.0.0.1:<port>`` (a threaded server in this process; when the port is
   taken, on a free one, said so: :func:`listen`).  The demo records where it is
   (:mod:`arena.ops.demo_record`), so ``arena`` commands typed in another terminal work on it
   while it runs.
3. Real RQ worker processes (``arena worker``), which run the health checks and play the
   matches, and the live relay (``arena live``) that streams running matches to their pages.
4. Sample bots as their own processes (``python -m sample_bots.NAME --port 0``), registered
   through the API like anyone's bots: each submission answers at once, and the demo waits
   until a worker's health check has admitted the bot.
5. Ladder rounds until ``--matches`` matches were made, with a progress bar; then the
   standings and the URL to open.
5b. A tournament of every sample bot (``--tournament``, default a knockout with duplicate
   play: :mod:`arena.ops.tournament_demo`), with its standings and the tournament page's URL.
6. ``--once``: stop everything and exit (0 when every match finished).  Otherwise the
   showcase table starts (:mod:`arena.ops.showcase`: bots that think 250 ms a move, one
   match after another, to watch on ``/live``; skipped with ``--once``, which would only wait
   for it), then the clock (continuous ladder, health sweep, reconciler), and the demo serves
   until Ctrl-C.

Bot URLs are on loopback, so the demo sets ``ALLOW_PRIVATE_BOT_URLS`` (never on a public
service).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from typing import Any

import requests
from sqlalchemy import func, select
from werkzeug.serving import make_server

from arena import create_app
from arena.core.models import Match, Rating
from arena.core.queue import get_queue
from arena.core.redis_connect import configured_url, redacted
from arena.core.rediskeys import child_env
from arena.core.storage import database_url, get_db, upgrade
from arena.play.ladder import run_round

from . import demo_record
from .procs import Child, start_arena, start_bot, start_relay, stop_all
from .showcase import Showcase, start_showcase

DEMO_BOTS = [
    ("planner", "planner_bot"),
    ("greedy", "greedy_bot"),
    ("random", "random_bot"),
    ("planner-2", "planner_bot"),
    ("greedy-2", "greedy_bot"),
    ("random-2", "random_bot"),
]
"""(name, sample_bots module): two of each sample bot, so rounds have idle bots to choose
from and the matchmaker's preferences show."""

DEMO_TIMEOUT_S = 600.0


def _say(text: str) -> None:
    print(text, flush=True)


def _bar(done: int, total: int, running: int, elapsed: float, width: int = 30) -> str:
    filled = int(width * done / total) if total else width
    return (f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total} matches finished, "
            f"{running} running  {elapsed:5.1f}s")


def _counts(app: Any) -> dict[str, int]:
    with get_db(app).begin() as s:
        rows = s.execute(select(Match.state, func.count()).group_by(Match.state)).all()
    return dict(rows)


def _leader(app: Any, family: str = "classic") -> str:
    with get_db(app).begin() as s:
        top = s.scalars(select(Rating).where(Rating.family == family)
                        .order_by(Rating.rating.desc(), Rating.bot_id).limit(1)).first()
        return "-" if top is None else f"{top.bot.name} ({top.rating:.1f})"


def standings_table(app: Any, family: str = "classic") -> str:
    with get_db(app).begin() as s:
        rows = s.scalars(select(Rating).where(Rating.family == family)
                         .order_by(Rating.rating.desc(), Rating.bot_id)).all()
        lines = [f"{'rank':>4}  {'bot':<12} {'rating':>7} {'games':>5}"]
        for i, r in enumerate(rows, 1):
            lines.append(f"{i:>4}  {r.bot.name:<12} {r.rating:7.1f} {r.games:>5}")
    return "\n".join(lines)


def listen(port: int) -> socket.socket:
    """A listening loopback socket on ``port``, or on a free port when that one is taken
    (saying so: macOS's AirPlay receiver holds 5000, the default).

    The socket is bound here, not by werkzeug's ``make_server``, which answers a taken port
    with ``sys.exit(1)`` instead of an exception; handing it the bound socket (``fd``) also
    leaves no moment in which another program could take the port in between."""
    try:
        return socket.create_server(("127.0.0.1", port))
    except OSError as exc:
        if port == 0:
            raise
        sock = socket.create_server(("127.0.0.1", 0))
        why = "in use by another program" if exc.errno == errno.EADDRINUSE else exc.strerror
        _say(f"port {port} is {why}; serving on the free port {sock.getsockname()[1]} "
             "instead (choose one with --port)")
        return sock


def wait_for_check(check_url: str, stop: threading.Event,
                   timeout_s: float = 120.0) -> dict[str, Any] | None:
    """Poll a bot's health check until a worker has run it (None: timed out or stopped)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not stop.is_set():
        body: dict[str, Any] = requests.get(check_url, timeout=30).json()
        if body.get("done"):
            return body
        stop.wait(0.1)
    return None


def _serve(app: Any, port: int) -> tuple[Any, str]:
    """The web app on a loopback port, served by a thread of this process: (server, base)."""
    listener = listen(port)
    server = make_server("127.0.0.1", listener.getsockname()[1], app, threaded=True,
                         fd=listener.fileno())
    listener.close()  # the server holds its own duplicate of the socket
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.port}"


def _child_env(app: Any, inst: str, admin: str, deals: int, redis_url: str) -> dict[str, str]:
    """The environment of the demo's worker, relay and clock processes: this demo's
    instance, database, Redis and secrets."""
    env = dict(os.environ)
    env.update({
        "ARENA_INSTANCE_PATH": inst,
        "DATABASE_URL": database_url(app),
        "REDIS_URL": redis_url,
        "SECRET_KEY": str(app.config["SECRET_KEY"]),
        "ADMIN_TOKEN": admin,
        "ALLOW_PRIVATE_BOT_URLS": "1",
        "LADDER_DEALS": str(deals),
        "PYTHONUNBUFFERED": "1",
        # Its children name the database by its file: the same namespace all the same.
        **child_env(app.config),
    })
    return env


def _start_workers(app: Any, env: dict[str, str], workers: int, base: str,
                   children: list[Child]) -> None:
    """The RQ worker processes and the live relay (pages poll when the relay cannot start)."""
    for i in range(workers):
        children.append(start_arena(["worker", "--no-clock", "--name", f"demo-{i + 1}"],
                                    env=env, name=f"worker-{i + 1}"))
    _say(f"workers: {workers} RQ worker process(es)")
    try:  # the live relay: running matches' pages show the table as it is played
        relay = start_relay({**env, "LIVE_WEB_URL": base})
        children.append(relay)
        app.config["LIVE_URL"] = f"{relay.url}/live"
        _say(f"live: {relay.url}/live/ (running matches and tournaments, pushed)")
    except RuntimeError as exc:  # pages fall back to polling and say so
        _say(f"live relay not started ({exc}); pages poll instead")


def _register_bots(base: str, children: list[Child], stop: threading.Event) -> bool:
    """Start the sample bots, submit each through the API and wait for every health check
    (run by the workers); False, said why, when one could not register or did not pass."""
    submitted: list[tuple[str, str, str]] = []
    for name, module in DEMO_BOTS:
        bot = start_bot(module)
        children.append(bot)
        assert bot.url is not None
        r = requests.post(f"{base}/api/bots", json={"name": name, "url": bot.url},
                          timeout=30)
        if r.status_code != 202:
            _say(f"could not register {name}: {r.status_code} {r.text}")
            return False
        submitted.append((name, bot.url, base + r.json()["check_url"]))
    for name, url, check_url in submitted:  # the workers run the health checks
        check = wait_for_check(check_url, stop)
        if check is None or check["state"] != "passed":
            _say(f"{name} did not pass its health check: {check}")
            return False
        _say(f"bot {name:<10} {url}  registered, health check passed "
             f"({check['move_ms']:.0f} ms)")
    return True


def _play_ladder(app: Any, matches: int, stop: threading.Event) -> int | None:
    """Ladder rounds until ``matches`` matches are made and over, with a progress bar; None
    when they are, else the exit status (1: timed out, 130: stopped)."""
    t0 = time.monotonic()
    created = 0
    tty = sys.stdout.isatty()
    last_line = ""
    while not stop.is_set():
        if created < matches:
            created += len(run_round(app, max_matches=matches - created))
        c = _counts(app)
        done = c.get("finished", 0) + c.get("failed", 0)
        line = _bar(done, matches, c.get("running", 0), time.monotonic() - t0)
        if tty:
            print("\r" + line, end="", flush=True)
        elif line.split("  ")[0] != last_line.split("  ")[0]:
            print(line, flush=True)
        last_line = line
        if done >= matches:
            break
        if time.monotonic() - t0 > DEMO_TIMEOUT_S:
            _say("\ndemo timed out")
            return 1
        time.sleep(0.2)
    if tty:
        print()
    return 130 if stop.is_set() else None


def _keep_going(app: Any, env: dict[str, str], children: list[Child],
                stop: threading.Event, show: Showcase | None) -> int:
    """Without ``--once``: start the clock (continuous ladder), keep the showcase table
    playing, and report until Ctrl-C."""
    children.append(start_arena(["clock"], env=env, name="clock"))
    _say("the ladder keeps going (clock started); Ctrl-C to stop")
    seen = _counts(app).get("finished", 0)
    while not stop.wait(1.0):
        if show is not None:
            with contextlib.suppress(requests.RequestException):
                show.keep_playing()
        finished = _counts(app).get("finished", 0)
        if finished != seen:
            seen = finished
            _say(f"{finished} matches finished; leader: {_leader(app)}")
    return 0


def run_demo(*, once: bool, port: int, matches: int, workers: int, deals: int,
             instance: str | None, tournament: str = "knockout",
             duplicate: bool = True) -> int:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no request log lines
    inst = instance or tempfile.mkdtemp(prefix="arena-demo-")
    admin = secrets.token_urlsafe(24)
    app = create_app({
        "INSTANCE_PATH": inst,
        "ALLOW_PRIVATE_BOT_URLS": True,
        "ADMIN_TOKEN": admin,
        "LADDER_DEALS": deals,
        "RECONCILE_QUEUED_AFTER_S": 20.0,
        "RATE_LIMITS_ENABLED": False,  # one local user registers every sample bot at once
    })
    children: list[Child] = []
    server = None
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        _say(f"instance folder: {inst}" + ("" if instance else " (temporary)"))
        upgrade(get_db(app))
        _say(f"database: {database_url(app)} (migrated)")
        redis_url = get_queue(app).url
        _say(f"redis: {redacted(redis_url)}"
             + ("" if configured_url(app.config) else " (embedded)"))

        server, base = _serve(app, port)
        _say(f"web: {base}")
        recorded = demo_record.write(demo_record.DemoRecord(
            pid=os.getpid(), instance=os.path.abspath(inst), database=database_url(app),
            redis=redis_url, web=base))
        _say(f"other terminals: `arena ...` commands use this demo while it runs (found "
             f"through {recorded}); or set ARENA_INSTANCE_PATH={os.path.abspath(inst)}")

        env = _child_env(app, inst, admin, deals, redis_url)
        _start_workers(app, env, workers, base, children)
        if not _register_bots(base, children, stop):
            return 1

        _say(f"\nladder: {matches} match(es) of {deals} deal(s), "
             f"{app.config['LADDER_RULESETS']} rules")
        status = _play_ladder(app, matches, stop)
        if status is not None:
            return status
        failed = _counts(app).get("failed", 0)
        _say("\nstandings (classic rating family):")
        _say(standings_table(app))
        _say(f"\nopen {base}/ (API: {base}/api/ratings, {base}/api/matches, "
             f"{base}/api/openapi.json)")
        if tournament != "none":
            from .tournament_demo import run_demo_tournament

            _, t_ok = run_demo_tournament(app, base, admin, fmt=tournament, deals=deals,
                                          duplicate=duplicate, stop=stop, say=_say)
            if stop.is_set():
                return 130
            failed = failed or not t_ok
        _say(f"admin token for this demo: {admin}")
        if once:  # the showcase plays for minutes: a run that stops at once skips it
            return 1 if failed else 0
        show = start_showcase(base, admin, children,
                              lambda url: wait_for_check(url, stop), _say)
        return _keep_going(app, env, children, stop, show)
    finally:
        demo_record.remove(os.getpid())
        stop_all(children)
        if server is not None:
            server.shutdown()
        emb = app.extensions.get("arena.embedded_redis")
        if emb is not None:
            emb.stop()
        get_db(app).dispose()
        if instance is None:  # a temp folder of our own
            shutil.rmtree(inst, ignore_errors=True)
