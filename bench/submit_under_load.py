"""``/healthz`` while strangers submit slow bots: the web tier as deployed, side by side with
a baseline of no submissions.

    python bench/submit_under_load.py                       # this checkout
    python bench/submit_under_load.py --code /work/main     # another checkout ("before")
    python bench/submit_under_load.py --postgres            # PostgreSQL, as deployed
    python bench/submit_under_load.py --submissions 50 --window 10 --json

Everything is real and on loopback: gunicorn with ``<code>/deploy/gunicorn.conf.py`` (its
worker and thread counts, ``WEB_CONCURRENCY`` / ``WEB_THREADS`` when set) serving
``arena:create_app()`` from ``--code`` (put first on ``PYTHONPATH``), a fresh SQLite
database (or, with ``--postgres``, a fresh one on the local PostgreSQL), a private Redis,
one ``arena worker`` process (which runs health checks where the code under test queues
them), and two kinds of misbehaving bot servers:

* **slow**: answers every call correctly, but ``GET /`` after 2.5 s and ``/move`` after
  1.5 s (within the health deadlines: the check passes, slowly);
* **trickle**: sends its status line and headers at once, then the body one byte every
  200 ms.

Each phase lasts ``--window`` seconds.  A ``GET /healthz`` probe starts every 50 ms for the
whole window, each on its own connection and thread (open loop: a stalled server shows as
slow probes, not as fewer of them); in the load phases ``--submissions`` threads each
``POST /api/bots`` once at the start of the window (each at a path of its own on the bot
server, so every submission is a distinct endpoint).  Reported per phase: ``/healthz``
p50 / p95 / max and how many probes completed, and the submissions' response times and
status codes.  The figure to compare is the ratio of ``/healthz`` p50 (and p95) under load
to the baseline, measured in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent.parent
PROBE_EVERY_S = 0.05
"""How often a ``/healthz`` probe starts (each in its own thread)."""


# --- misbehaving bots -------------------------------------------------------------------------


def _first_legal(body: bytes) -> bytes:
    request = json.loads(body)
    return json.dumps({"move": request["legal_moves"][0]["id"],
                       "turn": request.get("turn")}).encode()


def make_bot(kind: str) -> ThreadingHTTPServer:
    """A loopback bot server answering under any path prefix (``/b7/move`` is a move)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: object) -> None:
            pass

        def _answer(self, body: bytes, delay_s: float) -> None:
            if kind == "slow":
                time.sleep(delay_s)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if kind == "trickle":
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.2)
            else:
                self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer(json.dumps({"protocol": 1, "name": f"{kind}-bot", "author": "bench",
                                     "version": "1"}).encode(), 2.5)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path.endswith("/move"):
                self._answer(_first_legal(body), 1.5)
            else:
                self._answer(b"{}", 0.0)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # the arena hung up on a trickle: that is the point

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --- the service ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    sock = directory / "redis.sock"
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server not found")
    proc = subprocess.Popen([binary, "--port", "0", "--unixsocket", str(sock),
                             "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                             "--dir", str(directory)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not sock.exists():
        if time.monotonic() > deadline:
            raise SystemExit("redis did not start")
        time.sleep(0.05)
    return proc, f"unix://{sock}?db=0"


class Service:
    """gunicorn (as deployed) + one worker, from the checkout at ``code``."""

    def __init__(self, code: Path, workdir: Path, database_url: str = "") -> None:
        self.code, self.workdir = code, workdir
        self.database_url = database_url or f"sqlite:///{workdir / 'arena.sqlite3'}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        redis, redis_url = start_redis(self.workdir)
        self.procs.append(redis)
        env = dict(os.environ)
        env.update({
            "PYTHONPATH": str(self.code) + os.pathsep + env.get("PYTHONPATH", ""),
            "DATABASE_URL": self.database_url,
            "REDIS_URL": redis_url, "SECRET_KEY": "bench-secret", "ADMIN_TOKEN": "bench-" * 8,
            "ALLOW_PRIVATE_BOT_URLS": "1", "ARENA_INSTANCE_PATH": str(self.workdir),
            "WORKER_CLOCK": "0", "HOST": "127.0.0.1", "PORT": str(self.port),
            "PYTHONUNBUFFERED": "1",
        })
        py = sys.executable
        subprocess.run([py, "-m", "arena", "init-db"], env=env, cwd=self.code, check=True,
                       stdout=subprocess.DEVNULL)
        log = open(self.workdir / "gunicorn.log", "wb")  # noqa: SIM115 - lives with the proc
        self.procs.append(subprocess.Popen(
            [str(Path(py).parent / "gunicorn"), "-c", str(self.code / "deploy" /
                                                          "gunicorn.conf.py"),
             "--access-logfile", "/dev/null", "arena:create_app()"],
            env=env, cwd=self.code, stdout=log, stderr=log, start_new_session=True))
        wlog = open(self.workdir / "worker.log", "wb")  # noqa: SIM115
        self.procs.append(subprocess.Popen([py, "-m", "arena", "worker", "--no-clock"],
                                           env=env, cwd=self.code, stdout=wlog, stderr=wlog,
                                           start_new_session=True))
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(self.base + "/readyz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the web app did not start; see {self.workdir}")
            time.sleep(0.1)

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


# --- measuring --------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1)


def phase(base: str, name: str, window_s: float, bot_url: str | None,
          submissions: int) -> dict[str, Any]:
    stop = threading.Event()
    probes: list[float] = []
    subs: list[tuple[float, int | str]] = []
    lock = threading.Lock()

    def probe_once() -> None:
        t0 = time.perf_counter()
        with contextlib.suppress(requests.RequestException):
            requests.get(base + "/healthz", timeout=60)
        with lock:
            probes.append((time.perf_counter() - t0) * 1000)

    def probe() -> None:
        """Open loop: one probe every PROBE_EVERY_S whatever the earlier ones are doing, so
        a stalled server shows as slow probes, not as fewer probes."""
        started: list[threading.Thread] = []
        t_next = time.monotonic()
        while not stop.is_set():
            t = threading.Thread(target=probe_once, daemon=True)
            t.start()
            started.append(t)
            t_next += PROBE_EVERY_S
            stop.wait(max(0.0, t_next - time.monotonic()))
        for t in started:
            t.join(timeout=90)

    def submit(i: int) -> None:
        t0 = time.perf_counter()
        try:
            r = requests.post(base + "/api/bots", timeout=120,
                              json={"name": f"{name}-{i}", "url": f"{bot_url}/b{i}"})
            status: int | str = r.status_code
        except requests.RequestException as exc:
            status = type(exc).__name__
        with lock:
            subs.append(((time.perf_counter() - t0) * 1000, status))

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    senders = [threading.Thread(target=submit, args=(i,), daemon=True)
               for i in range(submissions if bot_url else 0)]
    for t in senders:
        t.start()
    time.sleep(window_s)
    stop.set()
    prober.join(timeout=120)
    with lock:
        window_probes = list(probes)
    for t in senders:
        t.join(timeout=180)
    statuses: dict[str, int] = {}
    for _, st in subs:
        statuses[str(st)] = statuses.get(str(st), 0) + 1
    times = [ms for ms, _ in subs]
    return {
        "phase": name, "submissions": len(senders),
        "healthz_n": len(window_probes), "healthz_p50_ms": pct(window_probes, 0.5),
        "healthz_p95_ms": pct(window_probes, 0.95),
        "healthz_max_ms": round(max(window_probes), 1) if window_probes else None,
        "submit_p50_ms": pct(times, 0.5), "submit_max_ms": round(max(times), 1) if times
        else None, "submit_status": statuses,
    }


def temp_postgres() -> tuple[str, Any]:
    """A fresh database on the local PostgreSQL (127.0.0.1:5432, trust), and its dropper."""
    import uuid

    import psycopg

    name = f"bench_submit_{uuid.uuid4().hex[:8]}"
    for user in ("root", "postgres"):
        admin = f"postgresql://{user}@127.0.0.1:5432/postgres"
        try:
            with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
        except psycopg.Error:
            continue

        def drop(admin: str = admin) -> None:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        return f"postgresql+psycopg://{user}@127.0.0.1:5432/{name}", drop
    raise SystemExit("no PostgreSQL on 127.0.0.1:5432")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--code", type=Path, default=HERE, help="checkout to serve (default: this)")
    ap.add_argument("--submissions", type=int, default=50)
    ap.add_argument("--window", type=float, default=10.0, help="seconds per phase")
    ap.add_argument("--postgres", action="store_true",
                    help="a fresh database on the local PostgreSQL (as deployed) instead of "
                         "SQLite")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="arena-submit-bench-"))
    db_url, drop = temp_postgres() if args.postgres else ("", None)
    service = Service(args.code.resolve(), workdir, db_url)
    bots = {k: make_bot(k) for k in ("slow", "trickle")}
    rows = []
    try:
        service.start()
        # Warm-up (not measured): the first write, the first Redis connection of each
        # process; the URL is a closed port, so even a synchronous check ends at once.
        for i in range(4):
            requests.post(service.base + "/api/bots", timeout=60,
                          json={"name": f"warm-up-{i}", "url": f"http://127.0.0.1:{free_port()}"})
        rows.append(phase(service.base, "baseline", args.window, None, 0))
        for kind, server in bots.items():
            url = f"http://127.0.0.1:{server.server_address[1]}"
            rows.append(phase(service.base, kind, args.window, url, args.submissions))
    finally:
        service.stop()
        for server in bots.values():
            server.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
        if drop is not None:
            drop()
    base = rows[0]["healthz_p50_ms"] or 1e-9
    base95 = rows[0]["healthz_p95_ms"] or 1e-9
    for r in rows:
        r["p50_vs_baseline"] = round((r["healthz_p50_ms"] or 0) / base, 1)
        r["p95_vs_baseline"] = round((r["healthz_p95_ms"] or 0) / base95, 1)
    if args.json:
        print(json.dumps({"code": str(args.code), "rows": rows}, indent=2))
        return 0
    print(f"code: {args.code}  ({args.submissions} concurrent submissions, "
          f"{args.window:g} s per phase, {'PostgreSQL' if args.postgres else 'SQLite'})")
    print(f"{'phase':<9} {'healthz n':>9} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} "
          f"{'p50 x':>6} {'p95 x':>6} {'submit p50':>10} {'submit max':>10}  statuses")
    for r in rows:
        print(f"{r['phase']:<9} {r['healthz_n']:>9} {r['healthz_p50_ms']!s:>8} "
              f"{r['healthz_p95_ms']!s:>8} {r['healthz_max_ms']!s:>8} "
              f"{r['p50_vs_baseline']:>6} {r['p95_vs_baseline']:>6} "
              f"{r['submit_p50_ms']!s:>10} {r['submit_max_ms']!s:>10}  {r['submit_status']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
