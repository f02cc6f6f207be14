"""Gunicorn settings for the web process (``Procfile``: ``web: gunicorn -c deploy/gunicorn.conf.py
"arena:create_app()"``).  Every value can be overridden by the environment variable named.

Threads, not only processes: submitting a bot waits for its health check (a few seconds at
most), which must not hold a whole process.

Runaway requests: with gthread workers, gunicorn's ``timeout`` (``WEB_TIMEOUT``) only acts on
a worker whose main loop is blocked; it does not end one request that spins or waits.  So each
worker process runs a per-request watchdog (:mod:`arena.web.request_deadline`,
``WEB_REQUEST_TIMEOUT_S``, then ``WEB_REQUEST_GRACE_S``), and the web process limits every SQL
statement on PostgreSQL to the same deadline (``DATABASE_STATEMENT_TIMEOUT_MS``).

Control socket: gunicorn (25.1+) opens one for ``gunicornc`` at a fixed default path
(``~/.gunicorn/gunicorn.ctl``), which several instances on one host would overwrite.  Each
instance gets its own, named after its bind address (``WEB_CONTROL_SOCKET``: a path, or
``off``).
"""

import glob
import os
import re
import shutil
import tempfile

# --- metrics: multiprocess mode (before anything imports prometheus_client) ------------------
#
# gunicorn's workers are processes: each keeps its metrics in files of one folder, which
# /metrics adds up (arena/core/metrics.py).  prometheus_client picks its mode when a process
# first imports it, so the folder is set here, in the master, before on_starting imports the
# app; the workers inherit it.  Emptied at start: an earlier run's files would be added in.

# Nothing of arena is imported before this: importing any of it imports prometheus_client.

_metrics_given = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
_metrics_dir = _metrics_given or tempfile.mkdtemp(prefix="arena-gunicorn-metrics-")
os.makedirs(_metrics_dir, exist_ok=True)
for _stale in glob.glob(os.path.join(_metrics_dir, "*.db")):
    os.remove(_stale)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = _metrics_dir

# --- logs ------------------------------------------------------------------------------------
#
# LOG_FORMAT=json: gunicorn's own lines and the app's are JSON lines on stderr, and the app
# writes one line per request with its request id (arena/web/observe.py) instead of
# gunicorn's access log.  text (the default): as before, with the access log.

from arena.core.logs import gunicorn_logconfig, log_format_from_env  # noqa: E402

log_format = log_format_from_env()
logconfig_dict = gunicorn_logconfig(log_format)

bind = f"{os.environ.get('HOST', '0.0.0.0')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "8"))
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = 20
keepalive = 5
max_requests = 2000  # recycle workers now and then
max_requests_jitter = 200
accesslog = None if log_format == "json" else "-"
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# The app is built in each worker (not preloaded): every process opens its own database
# pool and Redis connection.
preload_app = False

# --- runaway requests ------------------------------------------------------------------------

request_timeout_s = float(os.environ.get("WEB_REQUEST_TIMEOUT_S", "30"))
request_grace_s = float(os.environ.get("WEB_REQUEST_GRACE_S", "5"))
if request_timeout_s > 0:
    # Read by the app built in each worker (arena.core.config: DATABASE_STATEMENT_TIMEOUT_MS).
    os.environ.setdefault("DATABASE_STATEMENT_TIMEOUT_MS", str(int(request_timeout_s * 1000)))


# --- the database, before any worker starts ----------------------------------------------------


def on_starting(server):  # type: ignore[no-untyped-def]
    """Wait for the database (and check it is at this code's schema) in the master, as
    ``arena serve``, ``worker`` and ``clock`` do (:mod:`arena.ops.startup`): started with or
    before PostgreSQL, or before the release's migration, the workers would otherwise answer
    500s; now the master waits (``STARTUP_DB_WAIT_S``) or exits with one clear line."""
    from arena import create_app
    from arena.core.metrics import mark_process_dead
    from arena.ops.cli_app import DatabaseNotReady
    from arena.ops.startup import wait_for_database

    try:
        wait_for_database(create_app(), what="gunicorn")
    except DatabaseNotReady as exc:
        server.log.error("Error: %s", exc.format_message())
        raise SystemExit(1) from None
    # The master's app was for that check only: its pool's gauges are not the service's.
    mark_process_dead(os.getpid())


def on_exit(server):  # type: ignore[no-untyped-def]
    """The metrics folder this server made for itself goes with it."""
    if not _metrics_given:
        shutil.rmtree(_metrics_dir, ignore_errors=True)


def child_exit(server, worker):  # type: ignore[no-untyped-def]
    """A worker is gone (recycled after max_requests, killed, crashed): its live gauges stop
    counting and its counters are folded into the folder's archive (arena/core/metrics.py)."""
    from arena.core.metrics import mark_process_dead

    mark_process_dead(worker.pid)


def post_worker_init(worker):  # type: ignore[no-untyped-def]
    from arena.core.heap import settle_heap
    from arena.core.logs import set_process
    from arena.web import request_deadline

    set_process("web")

    request_deadline.install(request_timeout_s, request_grace_s)
    # The app is loaded: take its ~200,000 lifelong objects out of the garbage collector's
    # walks, whose full passes otherwise stall every request of the process for 50-140 ms
    # (arena/core/heap.py).
    worker.log.info("heap settled: %d objects frozen out of the collector's walks",
                    settle_heap())


def pre_request(worker, req):  # type: ignore[no-untyped-def]
    from arena.web import request_deadline

    request_deadline.request_started(f"{req.method} {req.path}")


def post_request(worker, req, environ, resp):  # type: ignore[no-untyped-def]
    from arena.web import request_deadline

    request_deadline.request_ended()


# --- control socket (one per instance) -------------------------------------------------------


def _control_socket(given: str) -> str:
    if given:
        return given
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = runtime if runtime and os.path.isdir(runtime) else os.path.expanduser("~/.gunicorn")
    tag = re.sub(r"[^A-Za-z0-9]+", "-", bind).strip("-")
    if bind.endswith(":0"):  # any free port: the address says nothing, the pid does
        tag += f"-{os.getpid()}"
    return os.path.join(base, f"arena-{tag}.ctl")


_control = os.environ.get("WEB_CONTROL_SOCKET", "")
if _control.lower() in ("off", "0", "no", "false", "none"):
    control_socket_disable = True
else:
    control_socket = _control_socket(_control)
