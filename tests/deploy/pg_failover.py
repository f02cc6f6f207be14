"""The PostgreSQL failover drill: the primary dies under a playing arena, the standby is
promoted, and the arena carries on by itself.

Every piece is a real process on loopback: a primary and a streaming standby of the
drill's own (:class:`tests.deploy.pgpair.PgPair`, synchronous by default), a private
``redis-server`` on a unix socket, the web app (gunicorn with ``deploy/gunicorn.conf.py``),
one pool worker (``arena worker --no-clock``), the clock (``arena clock``: the reconciler)
and sample bots (``random_bot --think-ms``).  Every arena process is given one
``DATABASE_URL``, libpq's multi-host form with the primary first and
``target_session_attrs=read-write``; the schema is made by ``arena init-db`` through it.

The drill registers the bots, posts ``matches`` matches, and once some are finished and
others running it SIGKILLs the primary (postmaster and backends at once: its machine
died), waits ``promote_after_s`` and promotes the standby (``pg_ctl promote``), as failover
tooling would.  It measures from the promotion: the first match that finished after the
kill (a result stored on the new primary), the web app's first 200 on a page that reads
the database, and every match finished; and it checks what must hold: every match
finished with one result and one rating event per seat, the ratings equal a recompute
(``arena ratings --check``, run through the same URL), every result committed before the
kill still there, and the web app, worker and clock the processes that were started.

``lag_s`` (asynchronous standby only) stops the standby's streaming that long before the
kill: the commits of that moment never reach it and are lost with the primary, as with a standby
that lags.  The matches whose finish was lost are ``running`` again on the new primary,
under a lease nobody renews; the reconciler re-enqueues them when it runs out and they are
played again.

Used by ``tests/deploy/test_pg_failover.py`` (correctness) and ``bench/pg_failover_drill.py``
(the figures).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from arena.core.embedded_redis import EmbeddedRedis
from arena.core.models import Match, MatchResult, MatchSeat, RatingEvent
from arena.core.processes import PARENT_PID_ENV
from arena.core.storage import Database
from arena.ops.edge import GUNICORN_CONF, ROOT
from arena.ops.procs import Child, stop_all
from arena.play.ratings import check_all

from .pgpair import PgPair, free_port

ADMIN_TOKEN = "pg-failover-drill-admin-0123456789abcdef"
SEATS = 4


@dataclass(frozen=True)
class DrillSettings:
    matches: int = 12
    concurrency: int = 8
    """The worker's ``WORKER_CONCURRENCY``."""
    bots: int = 4
    think_ms: int = 20
    deals: int = 1
    promote_after_s: float = 3.0
    """From the kill to ``pg_ctl promote`` (the failover tooling's detection time)."""
    synchronous: bool = True
    lag_s: float = 0.0
    """Asynchronous only: the standby stops streaming this long before the kill."""
    lease_s: float = 15.0
    reconcile_interval_s: float = 2.0
    reconcile_queued_after_s: float = 10.0
    timeout_s: float = 600.0
    """The longest wait for any one step (generous: only a broken party reaches it)."""

    def env(self) -> dict[str, str]:
        return {
            "WORKER_CONCURRENCY": str(self.concurrency), "WORKER_CLOCK": "0",
            "LEASE_S": str(self.lease_s), "RECONCILE_INTERVAL_S": str(self.reconcile_interval_s),
            "RECONCILE_QUEUED_AFTER_S": str(self.reconcile_queued_after_s),
            "CLOCK_TICK_S": "0.5", "LADDER_ENABLED": "0", "MATCH_DEALS": str(self.deals),
            "HEALTH_DEADLINE_MS": "10000", "HEALTH_SWEEP_INTERVAL_S": "3600",
            "RATE_LIMITS_ENABLED": "0", "READ_CACHE_S": "0", "READYZ_CACHE_S": "0",
            "ALLOW_PRIVATE_BOT_URLS": "1", "WEB_CONCURRENCY": "1", "WEB_THREADS": "4",
            "WORKER_SHUTDOWN_GRACE_S": "5", "WORKER_HANDBACK_S": "5",
        }


@dataclass
class Figures:
    """What one run measured (seconds from the promotion unless said otherwise)."""

    matches: int
    finished_at_kill: int
    running_at_kill: int
    killed_processes: int
    promote_s: float
    """``pg_ctl promote`` itself (until the standby takes writes)."""
    first_result_s: float | None
    """From the promotion to the first match seen finished that was not at the kill."""
    first_web_200_s: float | None
    """From the promotion to the web app's first 200 on ``GET /api/matches/<id>``."""
    web_errors_in_gap: int
    """Answers other than 200 (or no answer) from the kill to the first 200 after it."""
    all_done_s: float
    """From the promotion to every match finished."""
    lost_commits: int
    """Matches finished before the kill (as read then) that the new primary does not have
    finished: 0 with a synchronous standby."""
    replays: int
    """Claims beyond each match's first (a match whose stored finish was lost is one)."""
    store_retries: int
    """Worker log lines of a finished match waiting for the database to store its result."""
    lease_renewal_failures: int
    problems: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in vars(self).items()}


def start_logged(argv: list[str], env: dict[str, str], log: Path, name: str) -> Child:
    """``argv`` in a session of its own, its output appended to ``log``; it dies with this
    process (``ARENA_PARENT_PID``)."""
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**env, PARENT_PID_ENV: str(os.getpid())},
                                start_new_session=True)
    return Child(name, proc)


def wait_until(what: str, check: Any, timeout_s: float, every_s: float = 0.1) -> Any:
    """The first truthy ``check()``; fails after ``timeout_s``.  A database or HTTP error
    counts as not yet (the gap of a failover); any other error fails at once."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        try:
            value = check()
            if value:
                return value
        except (DBAPIError, requests.RequestException) as exc:
            last = f" (last error: {str(exc).splitlines()[0][:200] if str(exc) else exc!r})"
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}{last}")
        time.sleep(every_s)


class Drill:
    """One run (module docstring): :meth:`run` returns the figures, :meth:`stop` stops
    everything; the logs are in ``folder`` (removed by :meth:`cleanup`)."""

    def __init__(self, settings: DrillSettings, folder: Path | None = None) -> None:
        if settings.lag_s and settings.synchronous:
            raise ValueError("lag_s needs an asynchronous standby (a synchronous one holds "
                             "every commit until it has it)")
        self.s = settings
        self.dir = folder or Path(tempfile.mkdtemp(prefix="arena-pgfailover-"))
        self.pair = PgPair(synchronous=settings.synchronous)
        self.redis = EmbeddedRedis(self.dir / "redis")
        self.children: list[Child] = []
        self.bot_urls: list[str] = []
        self.base = ""
        self.reader: Database | None = None
        self.http = requests.Session()
        self.env: dict[str, str] = {}

    # --- processes -------------------------------------------------------------------
    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.pair.start(timeout_s=self.s.timeout_s)
        self.redis.start()
        env = {k: v for k, v in os.environ.items()
               if k not in ("PROMETHEUS_MULTIPROC_DIR", "WORKER_METRICS_PORT",
                            "CLOCK_METRICS_PORT", "REDIS_SENTINELS")}
        env.update(self.s.env())
        env.update({
            "DATABASE_URL": self.pair.url(), "REDIS_URL": self.redis.url,
            "QUEUE_NAME": f"pgfailover-{uuid.uuid4().hex[:8]}",
            "REDIS_NAMESPACE": f"pgfailover-{uuid.uuid4().hex[:8]}",
            "SECRET_KEY": uuid.uuid4().hex + uuid.uuid4().hex, "ADMIN_TOKEN": ADMIN_TOKEN,
            "ARENA_INSTANCE_PATH": str(self.dir / "instance"), "LOG_FORMAT": "text",
        })
        self.env = env
        # The schema, through the multi-host URL, as a release would make it.
        migrate = subprocess.run([sys.executable, "-m", "arena", "init-db"], env=env, cwd=ROOT,
                                 capture_output=True, text=True, timeout=self.s.timeout_s,
                                 check=False)
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr
        # The drill's own reads, through the same URL and pool settings as the arena's.
        self.reader = Database(self.pair.url(), connect_timeout_s=5)
        for i in range(self.s.bots):
            port = free_port()
            bot = start_logged([sys.executable, "-m", "sample_bots.random_bot", "--host",
                                "127.0.0.1", "--port", str(port), "--think-ms",
                                str(self.s.think_ms)], env, self.dir / f"bot-{i}.log", "bot")
            self.children.append(bot)
            self.bot_urls.append(f"http://127.0.0.1:{port}")
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.web = start_logged(
            [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF), "arena:create_app()"],
            {**env, "HOST": "127.0.0.1", "PORT": str(port)}, self.dir / "web.log", "web")
        self.worker = start_logged([sys.executable, "-m", "arena", "worker", "--no-clock"], env,
                                   self.dir / "worker.log", "worker")
        self.clock = start_logged([sys.executable, "-m", "arena", "clock"], env,
                                  self.dir / "clock.log", "clock")
        self.children += [self.web, self.worker, self.clock]
        wait_until("the web app", lambda: self.alive()
                   and self.http.get(f"{self.base}/healthz", timeout=5).ok, self.s.timeout_s)

    def alive(self) -> bool:
        """True; fails at once if an arena process exited by itself."""
        for c in (self.web, self.worker, self.clock):
            assert c.alive(), f"{c.name} exited by itself: see {self.dir / (c.name + '.log')}"
        return True

    def stop(self) -> None:
        stop_all(self.children)
        self.http.close()
        if self.reader is not None:
            self.reader.dispose()
        with contextlib.suppress(Exception):
            self.redis.stop()
        self.pair.stop()

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- the API ---------------------------------------------------------------------
    def register(self) -> list[int]:
        ids: list[int] = []
        for i, url in enumerate(self.bot_urls):
            r = self.http.post(f"{self.base}/api/bots", json={"name": f"pg-{i}", "url": url},
                               timeout=60)
            assert r.status_code == 202, r.text
            ids.append(int(r.json()["bot"]["id"]))

        def passed() -> bool:
            self.alive()
            states = [self.http.get(f"{self.base}/api/bots/{b}/check", timeout=30).json()
                      for b in ids]
            failed = [c for c in states if c["done"] and c["state"] != "passed"]
            assert not failed, failed
            return all(c["state"] == "passed" for c in states)

        wait_until("the bots' health checks", passed, self.s.timeout_s, every_s=0.25)
        return ids

    def post(self, bots: list[int], seed: int) -> int:
        r = self.http.post(f"{self.base}/api/matches", timeout=60,
                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                           json={"bots": bots, "deals": self.s.deals, "seed": seed})
        assert r.status_code == 202, r.text
        return int(r.json()["id"])

    # --- the database ----------------------------------------------------------------
    def db(self) -> Database:
        assert self.reader is not None, "start() first"
        return self.reader

    def states(self) -> dict[int, str]:
        with self.db().begin() as s:
            return dict(s.execute(select(Match.id, Match.state)).all())

    # --- the run ---------------------------------------------------------------------
    def run(self) -> Figures:
        self.start()
        bots = self.register()
        table = bots[:SEATS]
        posted = [self.post(table, seed) for seed in range(self.s.matches)]
        before = max(1, self.s.matches // 6)

        def some_done_some_running() -> bool:
            self.alive()
            st = self.states()
            return (sum(st[m] == "finished" for m in posted) >= before
                    and any(st[m] == "running" for m in posted))

        wait_until("some matches finished and others running", some_done_some_running,
                   self.s.timeout_s, every_s=0.1)
        if self.s.lag_s:
            self.pair.detach_standby()
            time.sleep(self.s.lag_s)
        at_kill = self.states()
        finished_before = {m for m, st in at_kill.items() if st == "finished"}
        killed = self.pair.kill_primary()
        t_kill = time.monotonic()
        web = WebWatch(f"{self.base}/api/matches/{posted[0]}", t_kill)
        web.start()
        try:
            time.sleep(max(0.0, self.s.promote_after_s - (time.monotonic() - t_kill)))
            t0 = time.monotonic()
            self.pair.promote(timeout_s=self.s.timeout_s)
            t_promote = time.monotonic()
            promote_s = t_promote - t0
            lost = finished_before - {m for m, st in self.states().items() if st == "finished"}

            def new_result() -> float | None:
                st = self.states()
                fresh = [m for m in posted if st.get(m) == "finished"
                         and m not in finished_before]
                return time.monotonic() if fresh else None

            first_result = wait_until("a match to finish after the promotion", new_result,
                                      self.s.timeout_s, every_s=0.05)
            wait_until("the web app to answer again", lambda: web.first_200 is not None,
                       self.s.timeout_s, every_s=0.05)
            wait_until("every match to finish",
                       lambda: self.alive() and all(self.states().get(m) == "finished"
                                                    for m in posted),
                       self.s.timeout_s, every_s=0.25)
            all_done = time.monotonic()
        finally:
            web.stop()
        problems = self.audit(posted)
        worker_log = (self.dir / "worker.log").read_text(errors="replace")
        return Figures(
            matches=len(posted),
            finished_at_kill=len(finished_before),
            running_at_kill=sum(1 for st in at_kill.values() if st == "running"),
            killed_processes=len(killed), promote_s=promote_s,
            first_result_s=first_result - t_promote,
            first_web_200_s=None if web.first_200 is None else web.first_200 - t_promote,
            web_errors_in_gap=web.errors, all_done_s=all_done - t_promote,
            lost_commits=len(lost), replays=self.replays(),
            store_retries=worker_log.count("database unreachable while storing the result"),
            lease_renewal_failures=worker_log.count("renewing"),
            problems=problems)

    def replays(self) -> int:
        with self.db().begin() as s:
            return int(s.scalar(select(func.coalesce(func.sum(Match.attempts - 1), 0))
                                .where(Match.attempts > 1)) or 0)

    def audit(self, posted: list[int]) -> list[str]:
        """What is wrong at the end (empty: nothing lost, nothing stored twice)."""
        with self.db().begin() as s:
            states = dict(s.execute(select(Match.id, Match.state)).all())
            results = dict(s.execute(select(MatchResult.match_id, func.count())
                                     .group_by(MatchResult.match_id)).all())
            events = dict(s.execute(select(RatingEvent.match_id, func.count())
                                    .group_by(RatingEvent.match_id)).all())
            seats = dict(s.execute(select(MatchSeat.match_id, func.count())
                                   .group_by(MatchSeat.match_id)).all())
        problems = [f"match {m} missing" for m in posted if m not in states]
        problems += [f"match {m}: {st}, {results.get(m, 0)} result(s), "
                     f"{events.get(m, 0)} rating event(s) for {seats.get(m, 0)} seats"
                     for m, st in sorted(states.items())
                     if (st, results.get(m, 0), events.get(m, 0)) != ("finished", 1, seats[m])]
        _, differences = check_all(self.db(), initial=1500.0, k=32.0)
        problems += differences
        # The operator's check, through the multi-host URL.
        check = subprocess.run([sys.executable, "-m", "arena", "ratings", "--check"],
                               env=self.env, cwd=ROOT, capture_output=True, text=True,
                               timeout=self.s.timeout_s, check=False)
        if check.returncode != 0 or "equal the recompute" not in check.stdout:
            problems.append(f"arena ratings --check: {check.returncode} {check.stdout[-500:]}"
                            f"{check.stderr[-500:]}")
        problems += [f"{c.name} (pid {c.pid}) died: it should have reconnected by itself"
                     for c in (self.web, self.worker, self.clock) if not c.alive()]
        return problems


class WebWatch:
    """``GET url`` every 0.1 s from the kill on, until the first 200: counts the other
    answers and when that 200 came (monotonic)."""

    def __init__(self, url: str, since: float) -> None:
        self.url = url
        self.since = since
        self.first_200: float | None = None
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="web-watch")
        self._http = requests.Session()

    def _run(self) -> None:
        while not self._stop.is_set() and self.first_200 is None:
            try:
                status = self._http.get(self.url, timeout=30).status_code
            except requests.RequestException:
                status = 0
            if status == 200:
                self.first_200 = time.monotonic()
            else:
                self.errors += 1
                self._stop.wait(0.1)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self._http.close()
