"""The service's Prometheus metrics: every one defined here, once, with its labels.

Why here, in ``core``: every room that records something (the web's caches and limits, the
worker's matches and bot calls, the clock, the relay, the database pool in ``core`` itself)
imports this module, and ``core`` is the one room they all may import.  Nothing here knows a
bot: no label holds a URL, a bot id, a match id or anything else a visitor can make
unbounded.  ``route`` is a URL *rule* (``/api/bots/<id:bot_id>``), never the path asked for;
``call``, ``outcome``, ``fault``, ``cause``, ``duty``, ``purpose``, ``result``, ``limit``,
``reason`` and ``state`` take a few fixed values each (docs/operations.md, "Metrics", lists
them all).

Processes and where their metrics are read (docs/operations.md, "Metrics"):

* **gunicorn** (several worker processes): *multiprocess mode*.  ``deploy/gunicorn.conf.py``
  sets ``PROMETHEUS_MULTIPROC_DIR`` before anything imports ``prometheus_client`` (the
  client chooses its mode when a process first imports it), empties that folder at start
  and marks each dead worker's files (``child_exit``); ``/metrics`` then adds up every
  worker's files (:func:`exposition`).
* **arena worker, clock, live relay**: one process each (the pool worker plays its matches
  in threads), each serving its own registry on its own port (:func:`serve_port`,
  ``WORKER_METRICS_PORT``, ``CLOCK_METRICS_PORT``, ``LIVE_METRICS_PORT``, on
  ``METRICS_HOST``).  RQ's forking worker (``WORKER_CONCURRENCY=0``) plays each job in a
  forked work horse whose memory dies with it: ``arena worker`` then runs in multiprocess
  mode over a folder of its own (:func:`needs_private_multiprocess`), so its horses' calls
  are counted too.

Gauges say how they add up across processes (``multiprocess_mode``): ``livesum`` for what
each live process holds (matches running, connections in use).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
)
from prometheus_client import multiprocess as _multiprocess
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.registry import Collector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
PRIVATE_ENV = "ARENA_METRICS_PRIVATE_DIR"
"""Set (to the folder) by ``arena worker`` when it made its multiprocess folder itself."""

# --- buckets ---------------------------------------------------------------------------------

REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0)
"""A page renders in a few milliseconds (29 ms uncached p95 at 1M matches); 30 s is the
request deadline."""
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0,
                15.0)
"""A bot's call: bots think up to the 1 s deadline plus their time bank (10 s)."""
OVERSHOOT_BUCKETS = (0.0005, 0.001, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.03, 0.05,
                     0.1, 0.25, 0.5, 1.0)
"""Deadline overshoot: 1-10 ms is normal under load (p99 6.7 ms at 100 matches in one
process, docs/operations.md); fine buckets there, so the p99 is read, not guessed."""
SHORT_BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Waits that are usually nothing and at worst a few seconds (a bookkeeping slot: 5 s)."""
MATCH_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 1200.0, 3600.0)
"""A ladder match lasts 100-170 s with bots thinking 500 ms."""

# --- web -------------------------------------------------------------------------------------

HTTP_REQUEST_SECONDS = Histogram(
    "arena_http_request_duration_seconds",
    "Time from a request's arrival in the app to its answer, by URL rule, method and status "
    "class.",
    ["route", "method", "status"], buckets=REQUEST_BUCKETS)
READ_CACHE_LOOKUPS = Counter(
    "arena_read_cache_lookups_total",
    "Cacheable GETs by how they were answered: hit (this process's memory), shared_hit "
    "(another process's render, from Redis), miss (rendered).",
    ["result"])
RATE_LIMIT_REFUSALS = Counter(
    "arena_rate_limit_refusals_total",
    "Requests refused with 429 by a rate limit, by class of limit.",
    ["limit"])

# --- database --------------------------------------------------------------------------------

DB_UNAVAILABLE = Counter(
    "arena_db_unavailable_total",
    "Web requests answered 503 because the database could not be reached (an outage, a "
    "failover: connection-class errors only), by URL rule.",
    ["route"])

DB_POOL_IN_USE = Gauge(
    "arena_db_pool_connections_in_use",
    "Database connections checked out of the pool now.",
    multiprocess_mode="livesum")
DB_POOL_MAX = Gauge(
    "arena_db_pool_connections_max",
    "Most connections the pool may hand out (DATABASE_POOL_SIZE + DATABASE_MAX_OVERFLOW).",
    multiprocess_mode="livesum")

# --- matches ---------------------------------------------------------------------------------

MATCHES_RUNNING = Gauge(
    "arena_matches_running",
    "Matches this process is playing now.",
    multiprocess_mode="livesum")
MATCH_JOBS = Counter(
    "arena_match_jobs_total",
    "Match jobs run, by outcome: finished, failed (gave up after MATCH_MAX_ATTEMPTS), "
    "not_played (finished or held elsewhere already), lease_lost, handed_back, abandoned, "
    "error (raised: RQ retries it).",
    ["outcome"])
MATCH_SECONDS = Histogram(
    "arena_match_duration_seconds",
    "Time from a match's claim to its stored result.",
    buckets=MATCH_BUCKETS)

# --- bot calls -------------------------------------------------------------------------------

BOT_CALLS = Counter(
    "arena_bot_calls_total",
    "Calls to bots, by call (describe, start, move, end), outcome (ok, timeout, no_answer, "
    "http_error, malformed, illegal, failed) and fault (the fault's code, docs/protocol.md; "
    "none when ok).",
    ["call", "outcome", "fault"])
BOT_CALL_SECONDS = Histogram(
    "arena_bot_call_duration_seconds",
    "How long a bot's call took (answered or not), by call.",
    ["call"], buckets=CALL_BUCKETS)
DEADLINE_OVERSHOOT = Histogram(
    "arena_bot_call_deadline_overshoot_seconds",
    "How far past its deadline a timed-out call returned (the referee's lateness in "
    "noticing: the interpreter's and the machine's load), by call.",
    ["call"], buckets=OVERSHOOT_BUCKETS)
TIME_BANK_DRAW = Histogram(
    "arena_bot_time_bank_draw_seconds",
    "Time drawn from a seat's time bank by one move (its call's time past the per-move "
    "deadline); moves within the deadline draw nothing and are not observed.",
    buckets=CALL_BUCKETS)
TIME_BANK_EMPTIED = Counter(
    "arena_bot_time_bank_emptied_total",
    "Seats whose time bank ran out during a match.")
BOT_FORFEITS = Counter(
    "arena_bot_forfeits_total",
    "Seats that forfeited a match (MATCH_MAX_STRIKES strikes).")

# --- health ----------------------------------------------------------------------------------

HEALTH_CHECKS = Counter(
    "arena_health_checks_total",
    "Health checks run, by purpose (submit, url_change, recheck, sweep) and result "
    "(passed, failed).",
    ["purpose", "result"])
BOT_PAUSES = Counter(
    "arena_bot_pauses_total",
    "Bots paused (taken off the ladder), by cause: failed_checks, forfeits, fault_rate.",
    ["cause"])

# --- worker ----------------------------------------------------------------------------------

BOOKKEEPING_WAIT = Histogram(
    "arena_bookkeeping_slot_wait_seconds",
    "How long a thread waited for a bookkeeping slot (only threads that had to wait).",
    buckets=SHORT_BUCKETS)
BOOKKEEPING_WENT_AHEAD = Counter(
    "arena_bookkeeping_slot_timeouts_total",
    "Threads that waited WORKER_BOOKKEEPING_WAIT_S for a slot in vain and went ahead "
    "without one.")
WORKER_JOBS_RUNNING = Gauge(
    "arena_worker_jobs_running",
    "Jobs a pool worker runs now.",
    multiprocess_mode="livesum")
WORKER_JOB_SLOTS = Gauge(
    "arena_worker_job_slots",
    "Jobs a pool worker may run at once (WORKER_CONCURRENCY).",
    multiprocess_mode="livesum")
WORKER_JOBS_ABANDONED = Counter(
    "arena_worker_jobs_abandoned_total",
    "Jobs a pool worker gave up on (stuck WORKER_TIMEOUT_GRACE_S past their timeout).")

# --- clock -----------------------------------------------------------------------------------

CLOCK_LEADER = Gauge(
    "arena_clock_leader",
    "1 while this clock holds the leader lock (does the periodic work), else 0.",
    multiprocess_mode="livesum")
CLOCK_DUTY_SECONDS = Histogram(
    "arena_clock_duty_duration_seconds",
    "How long one run of a clock duty took, by duty (reconcile, health, tournaments, "
    "ladder).",
    ["duty"], buckets=SHORT_BUCKETS)
CLOCK_DUTY_FAILURES = Counter(
    "arena_clock_duty_failures_total",
    "Runs of a clock duty that raised, by duty.",
    ["duty"])

# --- live relay ------------------------------------------------------------------------------

LIVE_VIEWERS = Gauge(
    "arena_live_viewers",
    "Open live streams (viewers) of this relay.",
    multiprocess_mode="livesum")
LIVE_CHANNELS = Gauge(
    "arena_live_channels",
    "Matches and tournaments this relay watches now.",
    multiprocess_mode="livesum")
LIVE_EVENTS = Counter(
    "arena_live_events_relayed_total",
    "Events the relay read from Redis (each is sent to every viewer of its match).")
LIVE_LAG = Histogram(
    "arena_live_event_lag_seconds",
    "Time from an event's arrival in Redis (its stream id) to the relay reading it.",
    buckets=SHORT_BUCKETS)
LIVE_REFUSED = Counter(
    "arena_live_streams_refused_total",
    "Live streams refused, by reason: busy (503: a LIVE_MAX_* bound), per_ip (429), "
    "not_live (404).",
    ["reason"])
LIVE_CUT_OFF = Counter(
    "arena_live_viewers_cut_off_total",
    "Viewers cut off for falling LIVE_VIEWER_QUEUE events behind (they reconnect and "
    "resume).")


# --- helpers ---------------------------------------------------------------------------------


def status_class(status: int) -> str:
    """``404`` -> ``"4xx"``: the status label (a class, so its values are five)."""
    return f"{max(1, min(5, status // 100))}xx"


@contextmanager
def timed(histogram: Any) -> Iterator[None]:
    """Observe the block's wall time in ``histogram`` (a metric or a labelled child)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        histogram.observe(time.perf_counter() - t0)


def multiprocess_dir() -> str | None:
    """The folder of multiprocess mode, when this process runs in it."""
    return os.environ.get(MULTIPROC_ENV) or None


def registry(extra: Iterable[Collector] = ()) -> CollectorRegistry:
    """What this process exposes: its own metrics, or in multiprocess mode every process's
    files added up, plus ``extra`` collectors (read at each scrape)."""
    folder = multiprocess_dir()
    if folder is None and not extra:
        return REGISTRY
    reg = CollectorRegistry(auto_describe=True)
    if folder is not None:
        reg.register(_Folded(folder))
    else:
        reg.register(_Forward(REGISTRY))
    for collector in extra:
        reg.register(collector)
    return reg


class _Forward(Collector):
    """Another registry's metrics, collected into this one."""

    def __init__(self, inner: CollectorRegistry) -> None:
        self.inner = inner

    def collect(self) -> Iterable[Any]:
        return self.inner.collect()


def exposition(extra: Iterable[Collector] = ()) -> tuple[bytes, str]:
    """The text format of :func:`registry` and its content type."""
    return generate_latest(registry(extra)), CONTENT_TYPE_LATEST


def serve_port(host: str, port: int, extra: Iterable[Collector] = ()) -> int | None:
    """Serve this process's metrics on ``host:port`` from a daemon thread (``port`` 0: no
    server; returns the port served)."""
    if port <= 0:
        return None
    server, _thread = start_http_server(port, addr=host, registry=registry(extra))
    bound: int = server.server_port
    return bound


class _Folded(Collector):
    """Every process's files added up (``prometheus_client``'s own collector), read under a
    shared lock of the folder, which :func:`mark_process_dead` takes exclusively while it
    folds a dead process's files into the archive: a scrape sees them before or after,
    never twice or not at all (either would look like a counter reset)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.inner = _multiprocess.MultiProcessCollector(None, path=folder)  # type: ignore[no-untyped-call]

    def collect(self) -> Iterable[Any]:
        with _folder_lock(self.folder, fcntl.LOCK_SH):
            return list(self.inner.collect())  # type: ignore[no-untyped-call]


@contextmanager
def _folder_lock(folder: str, mode: int) -> Iterator[None]:
    fd = os.open(os.path.join(folder, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # releases the lock


def mark_process_dead(pid: int) -> None:
    """A process of this folder died (a gunicorn worker, a work horse): its live gauges
    (matches running, connections in use) no longer count, and its counters and histograms,
    which are history, are added into the folder's archive files and its own files removed.
    Without the folding a folder would hold two files per process that ever lived (gunicorn
    recycles its workers every ``max_requests``; the forking worker forks a horse per job),
    and every scrape would read them all."""
    folder = multiprocess_dir()
    if folder is None:
        return
    with _folder_lock(folder, fcntl.LOCK_EX):
        _multiprocess.mark_process_dead(pid, folder)  # type: ignore[no-untyped-call]
        for kind in ("counter", "histogram"):
            dead = os.path.join(folder, f"{kind}_{pid}.db")
            if not os.path.exists(dead):
                continue
            archive = MmapedDict(os.path.join(folder, f"{kind}_archive.db"))  # type: ignore[no-untyped-call]
            try:
                for key, value, timestamp, _ in MmapedDict.read_all_values_from_file(dead):  # type: ignore[no-untyped-call]
                    old, _ = archive.read_value(key)  # type: ignore[no-untyped-call]
                    archive.write_value(key, old + value, timestamp)  # type: ignore[no-untyped-call]
            finally:
                archive.close()  # type: ignore[no-untyped-call]
            os.remove(dead)


def fresh_multiprocess_dir(folder: str | None) -> str:
    """The multiprocess folder for a new server (gunicorn's master), emptied: files of an
    earlier run would be added to this one's.  ``folder`` None: a new temporary one."""
    path = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="arena-metrics-"))
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    return str(path)


def needs_private_multiprocess(concurrency: int, port: int) -> bool:
    """Whether ``arena worker`` must run in multiprocess mode over a folder of its own:
    RQ's forking worker with metrics on, not already in multiprocess mode."""
    return concurrency <= 0 and port > 0 and multiprocess_dir() is None


def remove_private_dir() -> None:
    """Remove this process's private multiprocess folder (``arena worker``, at its exit)."""
    folder = multiprocess_dir()
    if folder is not None and os.environ.get(PRIVATE_ENV) == folder:
        shutil.rmtree(folder, ignore_errors=True)
