"""The fleet drill: the production shape on loopback, and whole worker machines killed in it.

What runs (every piece a real process of its own):

* **machines**: ``machines`` worker "machines", each a process group of its own (a new
  session) holding ``workers_per_machine`` ``arena worker --no-clock`` processes and what they
  fork (RQ's scheduler).  Killing a machine is ``killpg(SIGKILL)``: every process of it dies at
  once, with no chance to hand anything back, as when the host loses power.  A supervisor (the
  drill) starts it again.  (A network namespace per machine would isolate more, but a new
  namespace has a loopback of its own, from which the database, Redis and the bots on this
  host's loopback are out of reach without a veth pair, i.e. root changes to the host's
  network: a process group is what can be killed whole here without touching anything else.)
* **web**: ``web_processes`` gunicorns (``deploy/gunicorn.conf.py``, as the ``Procfile`` runs
  it) behind one nginx (``deploy/nginx.conf``, its upstream holding every gunicorn); every
  request of the drill goes through nginx.
* **clock**: one ``arena clock`` (ladder rounds, the reconciler, the health sweep).
* **bots**: real sample bots (``python -m sample_bots.*_bot --think-ms N``) on loopback ports.
* PostgreSQL (a database the caller gives) and a private ``redis-server`` on a unix socket.

The drill registers the bots through nginx, then, while a feeder posts matches through nginx
and the clock runs ladder rounds, kills a machine that is playing (one after the other, round
robin), starts it again, and waits until every match the dead machine was playing
(*orphaned*) has been claimed again, timing each takeover: from the kill to the orphan's new
``started_at``.  That delay is bounded by the settings (:meth:`FleetSettings.takeover_bound_s`):
the dead worker renewed its leases every ``LEASE_S / 3``, so they run out at most ``LEASE_S``
after the kill; the clock runs the reconciler every ``RECONCILE_INTERVAL_S`` (looked at every
``CLOCK_TICK_S``), which enqueues a new job for each match whose lease ran out, and a live
worker pops it at once.  Then the ladder is stopped (the clock restarted with
``LADDER_ENABLED=0``), every match drains, and :func:`audit` counts what was lost or
duplicated and compares the ratings with a recompute (``arena ratings --check``'s).

Used by ``tests/deploy/test_fleet.py`` (correctness only) and ``bench/fleet_drill.py`` (the
figures).  Traffic goes to loopback and a unix socket only.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from redis import Redis
from rq import Queue, Worker
from sqlalchemy import func, select

from arena.core.embedded_redis import EmbeddedRedis
from arena.core.models import Match, MatchResult, MatchSeat, RatingEvent, utcnow
from arena.core.processes import PARENT_PID_ENV
from arena.core.rediskeys import RQ_PREFIX_ENV, rq_prefix_in_use
from arena.core.storage import Database
from arena.jobs.clock import leader_key
from arena.ops.edge import start_gunicorn, start_nginx, wait_http
from arena.ops.procs import Child, start_bot, stop_all
from arena.play.ratings import check_all
from tests.ports import free_port
from tests.waiting import wait_for

ADMIN_TOKEN = "fleet-drill-admin-token-0123456789abcdef"
BOT_MODULES = ("random_bot", "greedy_bot", "planner_bot")
SEATS = 4


# --- settings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetSettings:
    """The drill's shape and the service settings that decide how fast orphans are taken
    over (short, so that a drill of three kills runs in a minute or two)."""

    machines: int = 3
    workers_per_machine: int = 1
    web_processes: int = 2
    bots: int = 8
    think_ms: int = 25
    """Each sample bot waits this long before every move: a match lasts seconds, long
    enough to be killed in the middle."""
    deals: int = 2
    lease_s: float = 6.0
    reconcile_interval_s: float = 1.0
    reconcile_queued_after_s: float = 5.0
    clock_tick_s: float = 0.5
    ladder_interval_s: float = 2.0
    feed_every_s: float = 1.5
    """The feeder posts one match through nginx this often while machines are killed."""

    def takeover_bound_s(self) -> float:
        """The longest a running match of a dead machine waits for another worker to claim
        it: its lease runs out at most ``LEASE_S`` after the kill (it was renewed at most
        ``LEASE_S / 3`` before), the reconciler sees that within ``RECONCILE_INTERVAL_S``
        plus one ``CLOCK_TICK_S``, and a live worker pops the new job at once (plus the
        claim's own time, and on a saturated machine its scheduling delays)."""
        return self.lease_s + self.reconcile_interval_s + self.clock_tick_s

    def env(self) -> dict[str, str]:
        """The settings every arena process of the fleet gets."""
        return {
            "LEASE_S": str(self.lease_s),
            "RECONCILE_INTERVAL_S": str(self.reconcile_interval_s),
            "RECONCILE_QUEUED_AFTER_S": str(self.reconcile_queued_after_s),
            "CLOCK_TICK_S": str(self.clock_tick_s),
            "LADDER_INTERVAL_S": str(self.ladder_interval_s),
            "LADDER_DEALS": str(self.deals),
            "MATCH_DEALS": str(self.deals),
            "LADDER_ENABLED": "1",
            "WORKER_CLOCK": "0",
            # A saturated machine must not fail a well-behaved bot's check.
            "HEALTH_DEADLINE_MS": "10000",
            # The end of the drill stops the machines: quickly.
            "WORKER_SHUTDOWN_GRACE_S": "5",
            "WORKER_HANDBACK_S": "5",
            # Two web processes, one gunicorn worker each (the drill kills workers, not web
            # processes: two keep nginx's balancing honest without the CPU of four).
            "WEB_CONCURRENCY": "1",
            "WEB_THREADS": "4",
            "TRUSTED_PROXY_HOPS": "1",
            "RATE_LIMITS_ENABLED": "0",
            "READ_CACHE_S": "0",
            "ALLOW_PRIVATE_BOT_URLS": "1",
        }


# --- processes -------------------------------------------------------------------------------




def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry))
    return out


MACHINE_INIT = """
import os, subprocess, sys
from arena.core.processes import PARENT_PID_ENV, die_with_parent_from_env
die_with_parent_from_env()  # the drill's process: the machine goes if the drill dies
env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}  # and its workers go with it
workers = [subprocess.Popen(sys.argv[2:], env=env) for _ in range(int(sys.argv[1]))]
sys.exit(max(w.wait() for w in workers))
"""
"""A machine's "init": starts its workers as its children, in its process group."""


class Machine:
    """One worker "machine": ``workers`` ``arena worker`` processes (and what they fork) in a
    process group of their own.  A process can join only a group of its own session, so the
    machine has an init (:data:`MACHINE_INIT`) that leads a new session and starts the
    workers; a process group is killed whole whoever leads it."""

    def __init__(self, name: str, env: dict[str, str], workers: int, log_dir: Path) -> None:
        self.name = name
        self.env = env
        self.workers = workers
        self.log = log_dir / f"{name}.log"
        self.init: subprocess.Popen[bytes] | None = None
        self.pgid = 0
        self.boots = 0

    def start(self) -> None:
        """Boot: the init leads a new session (``pgid`` is its pid) and starts the workers.
        Everything dies with the drill's process if it dies (``ARENA_PARENT_PID``)."""
        with self.log.open("ab") as out:
            self.init = subprocess.Popen(
                [sys.executable, "-c", MACHINE_INIT, str(self.workers),
                 sys.executable, "-m", "arena", "worker", "--no-clock"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env={**self.env, PARENT_PID_ENV: str(os.getpid())}, start_new_session=True)
        self.pgid = self.init.pid
        self.boots += 1

    def alive(self) -> bool:
        return self.init is not None and self.init.poll() is None

    def pids(self) -> set[int]:
        return set(group_members(self.pgid)) if self.pgid else set()

    def kill(self) -> set[int]:
        """SIGKILL every process of the machine at once; returns their pids.  Waits until
        none is left (RQ's scheduler children included)."""
        pids = self.pids()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        if self.init is not None:
            self.init.wait()
        wait_for(lambda: not group_members(self.pgid), 60, every_s=0.05,
                 what=f"every process of {self.name} to die")
        return pids

    def stop(self, grace_s: float = 30.0) -> None:
        """An orderly shutdown (SIGTERM to the group, SIGKILL after ``grace_s``)."""
        if not self.pgid or not group_members(self.pgid):
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while group_members(self.pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        if self.init is not None:
            self.init.wait()


def start_logged(args: list[str], env: dict[str, str], log: Path, name: str) -> Child:
    """``python -m arena <args>`` in a session of its own, its output appended to ``log``."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "arena", *args], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, env={**env, PARENT_PID_ENV: str(os.getpid())},
            start_new_session=True)
    return Child(name, proc)


# --- the fleet -------------------------------------------------------------------------------


@dataclass
class Fleet:
    """Every process of the drill, started by :func:`fleet` and stopped when it ends."""

    settings: FleetSettings
    env: dict[str, str]
    runtime: Path
    db: Database
    nginx_url: str
    redis: Redis
    machines: list[Machine] = field(default_factory=list)
    children: list[Child] = field(default_factory=list)
    clock: Child | None = None
    bot_urls: list[str] = field(default_factory=list)
    bot_ids: list[int] = field(default_factory=list)
    http: requests.Session = field(default_factory=requests.Session)

    # -- the API, through nginx --

    def get(self, path: str) -> Any:
        """GET through nginx; a 502/503/504 or a timeout (a web process too slow on a
        saturated machine) is tried again for a while."""
        def attempt() -> requests.Response | None:
            try:
                r = self.http.get(f"{self.nginx_url}{path}", timeout=30)
            except requests.RequestException:
                return None
            return None if r.status_code in (502, 503, 504) else r

        r: requests.Response = wait_for(attempt, 120, every_s=1.0, what=f"GET {path}")
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        return r.json()

    def post(self, path: str, body: dict[str, Any], *, admin: bool = False,
             session: requests.Session | None = None) -> Any:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"} if admin else {}
        r = (session or self.http).post(f"{self.nginx_url}{path}", json=body, headers=headers,
                                        timeout=30)
        assert r.status_code in (200, 201, 202), (path, r.status_code, r.text[:300])
        return r.json()

    def register_bots(self) -> None:
        """Submit every bot through nginx; their health checks run on the machines."""
        for i, url in enumerate(self.bot_urls):
            body = self.post("/api/bots", {"name": f"fleet-{i}", "url": url})
            self.bot_ids.append(int(body["bot"]["id"]))
        for bot_id in self.bot_ids:
            check = wait_for(functools.partial(self.check_done, bot_id), 180, every_s=0.25,
                             what=f"the check of bot {bot_id}")
            assert check["state"] == "passed", check

    def machines_up(self) -> bool:
        """True; fails at once (not at a wait's end) if a machine died by itself."""
        for m in self.machines:
            assert m.alive(), f"{m.name} exited by itself: see {m.log}"
        return True

    def serving(self, machine: Machine) -> bool:
        """Whether every worker of the machine has booted: registered with RQ, taking jobs."""
        pids = machine.pids()
        queue = Queue(self.env["QUEUE_NAME"], connection=self.redis)
        up = [w for w in Worker.all(connection=self.redis, queue=queue) if w.pid in pids]
        return len(up) >= machine.workers

    def all_serving(self) -> bool:
        """Every machine has booted, and the clock leads (it runs the reconciler)."""
        return (self.machines_up() and all(self.serving(m) for m in self.machines)
                and bool(self.redis.exists(leader_key(self.env))))

    def check_done(self, bot_id: int) -> dict[str, Any] | None:
        """The bot's health check once it is done (None before)."""
        self.machines_up()
        check: dict[str, Any] = self.get(f"/api/bots/{bot_id}/check")
        return check if check["done"] else None

    def start_clock(self, *, ladder: bool) -> None:
        if self.clock is not None:
            self.clock.stop(grace_s=30)
        env = {**self.env, "LADDER_ENABLED": "1" if ladder else "0"}
        self.clock = start_logged(["clock"], env, self.runtime / "clock.log", "clock")

    # -- the database --

    def running_on(self, pids: set[int], started_within_s: float | None = None
                   ) -> dict[int, int]:
        """Matches running under a lease of one of ``pids`` (claimed in the last
        ``started_within_s`` if given): id -> attempts."""
        query = select(Match.id, Match.attempts, Match.lease_owner).where(
            Match.state == "running")
        if started_within_s is not None:
            query = query.where(
                Match.started_at > utcnow() - dt.timedelta(seconds=started_within_s))
        with self.db.begin() as s:
            rows = s.execute(query).all()
        return {m: attempts for m, attempts, owner in rows
                if owner and int(str(owner).rsplit(":", 1)[1]) in pids}

    def reclaimed(self, orphans: dict[int, int]) -> dict[int, dt.datetime]:
        """Of the orphans (id -> attempts when orphaned), those claimed again since: id ->
        the new claim's ``started_at``."""
        with self.db.begin() as s:
            rows = s.execute(select(Match.id, Match.attempts, Match.started_at)
                             .where(Match.id.in_(list(orphans)))).all()
        return {m: started for m, attempts, started in rows
                if attempts > orphans[m] and started is not None}

    def answered_by(self) -> dict[str, int]:
        """Requests per web process, from nginx's access log (its last field,
        ``$upstream_addr``, names the gunicorn that answered)."""
        counts: dict[str, int] = {}
        log = self.runtime / "nginx" / "logs" / "access.log"
        for line in log.read_text().splitlines():
            upstream = line.rsplit(" ", 1)[-1]
            if upstream != "-":  # answered by nginx itself
                counts[upstream] = counts.get(upstream, 0) + 1
        return counts

    def finished(self, ids: list[int]) -> bool:
        with self.db.begin() as s:
            states = s.scalars(select(Match.state).where(Match.id.in_(ids))).all()
        return all(state == "finished" for state in states)

    def unfinished(self) -> int:
        with self.db.begin() as s:
            return int(s.scalar(select(func.count()).select_from(Match)
                                .where(Match.state != "finished")) or 0)


@contextlib.contextmanager
def fleet(settings: FleetSettings, database_url: str,
          runtime: Path | None = None) -> Iterator[Fleet]:
    """Start the whole fleet on loopback (bots, Redis, web, nginx, machines, clock), with
    the bots registered; stop every process at the end.  ``database_url``: a migrated,
    empty database of the caller's."""
    runtime = runtime or Path(tempfile.mkdtemp(prefix="arena-fleet-"))
    runtime.mkdir(parents=True, exist_ok=True)
    redis = EmbeddedRedis(runtime / "redis")
    redis.start()
    env = {**os.environ, **settings.env(),
           "DATABASE_URL": database_url, "REDIS_URL": redis.url,
           "QUEUE_NAME": f"fleet-{uuid.uuid4().hex[:8]}",
           "REDIS_NAMESPACE": f"fleet-{uuid.uuid4().hex[:8]}",
           "SECRET_KEY": uuid.uuid4().hex + uuid.uuid4().hex, "ADMIN_TOKEN": ADMIN_TOKEN,
           "ARENA_INSTANCE_PATH": str(runtime / "instance"),
           # RQ's keys where this process (importing arena put it in its environment) looks.
           RQ_PREFIX_ENV: rq_prefix_in_use()}
    for key in ("PROMETHEUS_MULTIPROC_DIR", "WORKER_METRICS_PORT", "CLOCK_METRICS_PORT"):
        env.pop(key, None)
    db = Database(database_url)
    f = Fleet(settings, env, runtime, db, "", Redis.from_url(redis.url))
    try:
        # The heavy Python processes boot side by side while the bots start one by one.
        webs = [start_gunicorn(host="127.0.0.1", port=free_port(), env=env)
                for _ in range(settings.web_processes)]
        f.children.extend(webs)
        for i in range(settings.machines):
            machine = Machine(f"machine-{i}", env, settings.workers_per_machine, runtime)
            machine.start()
            f.machines.append(machine)
        f.start_clock(ladder=True)
        for i in range(settings.bots):
            bot = start_bot(BOT_MODULES[i % len(BOT_MODULES)],
                            args=["--think-ms", str(settings.think_ms)])
            f.children.append(bot)
            assert bot.url is not None
            f.bot_urls.append(bot.url)
        for web in webs:
            wait_http(f"{web.url}/healthz", timeout_s=180, child=web)
        # nginx's port is picked right before it binds: picked at the start, it stayed free
        # for the minutes the processes above take to boot on a saturated machine, and a
        # second CI run's drill took it (this drill's requests then reached that run's fleet).
        nport = free_port()
        f.nginx_url = f"http://127.0.0.1:{nport}"
        nginx = start_nginx(listen_host="127.0.0.1", listen_port=nport,
                            upstream=[str(w.url).removeprefix("http://") for w in webs],
                            runtime_dir=runtime / "nginx")
        f.children.append(nginx)
        wait_http(f"{f.nginx_url}/healthz", timeout_s=60, child=nginx)
        f.register_bots()
        yield f
    finally:
        for machine in f.machines:
            machine.stop()
        if f.clock is not None:
            f.children.append(f.clock)
        stop_all(f.children)
        f.http.close()
        f.redis.close()
        db.dispose()
        redis.stop()


# --- the drill -------------------------------------------------------------------------------


@dataclass
class Kill:
    machine: str
    processes: int
    orphans: dict[int, int]
    """Matches the machine was playing: id -> attempts at the kill."""
    takeover_s: dict[int, float] = field(default_factory=dict)
    """Orphan id -> seconds from the kill to its new claim."""


class Feeder:
    """Posts a match through nginx every ``every_s`` (the first four bots' table, so the
    ladder keeps the others) until stopped."""

    def __init__(self, f: Fleet, every_s: float, seed: int = 1) -> None:
        self.fleet = f
        self.every_s = every_s
        self.rng = random.Random(seed)
        self.ids: list[int] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="feeder")

    def _run(self) -> None:
        table = self.fleet.bot_ids[:SEATS]
        with requests.Session() as session:
            while not self._stop.wait(self.every_s):
                body = {"bots": self.rng.sample(table, SEATS), "deals": self.fleet.settings.deals,
                        "seed": self.rng.getrandbits(31)}
                try:
                    self.ids.append(int(self.fleet.post("/api/matches", body, admin=True,
                                                        session=session)["id"]))
                except (AssertionError, requests.RequestException) as exc:
                    self.errors.append(str(exc))

    def __enter__(self) -> Feeder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


def kill_one(f: Fleet, machine: Machine, *, restart_after_s: float = 0.5) -> Kill:
    """Once every machine is up and ``machine`` plays a match, kill it whole, boot it again
    (as its supervisor would), wait until another worker has claimed every match it was
    playing, and then until those have finished.

    Each kill is an incident of its own: had the next kill come while the last victim was
    still booting (~30 s on a saturated machine), kills would have outrun the boots and left
    no machine standing; and an orphan killed again and again is marked failed at its
    ``MATCH_MAX_ATTEMPTS``-th claim (the guard against a match that kills its worker)."""
    wait_for(f.all_serving, 300, every_s=0.2, what="every machine and the clock to be up")
    # A match claimed just now is surely still being played a moment later, at the kill.
    wait_for(lambda: f.machines_up() and f.running_on(machine.pids(), started_within_s=1.0),
             180, every_s=0.1, what=f"{machine.name} to start a match")
    at = utcnow()
    pids = machine.kill()
    orphans = f.running_on(pids)  # nothing of the machine can change them any more
    kill = Kill(machine.name, len(pids), orphans)
    time.sleep(restart_after_s)
    machine.start()

    def all_taken_over() -> bool:
        for m, started in f.reclaimed(orphans).items():
            kill.takeover_s.setdefault(m, (started - at).total_seconds())
        return len(kill.takeover_s) == len(orphans)

    if not orphans:  # its matches all ended between the look and the kill (a slow machine)
        return kill
    wait_for(all_taken_over, 60 + 10 * f.settings.takeover_bound_s(), every_s=0.1,
             what=f"the orphans of {machine.name} ({sorted(orphans)}) to be taken over")
    wait_for(lambda: f.finished(list(orphans)), 300, every_s=0.2,
             what=f"the orphans of {machine.name} to finish")
    return kill


@dataclass
class Audit:
    matches: int
    admin: int
    ladder: int
    finished: int
    lost: int
    duplicated: int
    replays: int
    """Claims beyond each match's first (an orphan's takeover is one)."""
    rating_problems: list[str]


def audit(f: Fleet, posted: list[int]) -> Audit:
    """Count what the drill lost (a match posted but missing, not finished, without its
    result or, rated, without a rating event per seat) or duplicated (more than one result,
    or more rating events than seats), and compare the ratings with a recompute."""
    with f.db.begin() as s:
        states = dict(s.execute(select(Match.id, Match.state)).all())
        kinds = dict(s.execute(select(Match.id, Match.kind)).all())
        attempts = dict(s.execute(select(Match.id, Match.attempts)).all())
        rated = set(s.scalars(select(Match.id).where(Match.rated.is_(True))))
        results = dict(s.execute(select(MatchResult.match_id, func.count())
                                 .group_by(MatchResult.match_id)).all())
        events = dict(s.execute(select(RatingEvent.match_id, func.count())
                                .group_by(RatingEvent.match_id)).all())
        seats = dict(s.execute(select(MatchSeat.match_id, func.count())
                               .group_by(MatchSeat.match_id)).all())
    lost = sum(1 for m in posted if m not in states) + sum(
        1 for m, state in states.items() if state != "finished" or results.get(m, 0) == 0
        or (m in rated and events.get(m, 0) < seats.get(m, 0)))
    duplicated = sum(1 for m in states
                     if results.get(m, 0) > 1 or events.get(m, 0) > seats.get(m, 0))
    _, problems = check_all(f.db, initial=1500.0, k=32.0)
    return Audit(
        matches=len(states), admin=sum(1 for k in kinds.values() if k == "admin"),
        ladder=sum(1 for k in kinds.values() if k == "ladder"),
        finished=sum(1 for state in states.values() if state == "finished"),
        lost=lost, duplicated=duplicated, replays=sum(a - 1 for a in attempts.values() if a > 1),
        rating_problems=problems)


@dataclass
class DrillReport:
    settings: FleetSettings
    kills: list[Kill]
    audit: Audit
    posted: int
    feed_errors: list[str]
    """POSTs of the feeder that failed (nginx or gunicorn too slow on a saturated machine:
    not a lost match, which is one whose POST was answered)."""
    answered_by: dict[str, int]
    """Requests per web process (nginx's access log)."""
    seconds: float

    @property
    def takeovers(self) -> list[float]:
        return sorted(t for k in self.kills for t in k.takeover_s.values())

    def lines(self) -> list[str]:
        a, t = self.audit, self.takeovers
        s = self.settings
        kills = ", ".join(f"{k.machine}: {k.processes} processes, {len(k.orphans)} orphans"
                          for k in self.kills)
        out = [
            f"fleet: {s.machines} machines x {s.workers_per_machine} worker process(es), "
            f"{s.web_processes} web processes behind nginx, 1 clock, {s.bots} sample bots "
            f"(think {s.think_ms} ms), PostgreSQL",
            f"settings: LEASE_S={s.lease_s:g} RECONCILE_INTERVAL_S={s.reconcile_interval_s:g} "
            f"CLOCK_TICK_S={s.clock_tick_s:g} -> takeover bound {s.takeover_bound_s():g} s",
            f"kills: {len(self.kills)} ({kills})",
            f"matches: {a.matches} ({a.admin} posted through nginx, {a.ladder} ladder), "
            f"finished {a.finished}, lost {a.lost}, duplicated {a.duplicated}, "
            f"replays {a.replays}",
            f"web: requests per gunicorn {sorted(self.answered_by.values())}, "
            f"failed posts {len(self.feed_errors)}",
            f"orphans: {len(t)}, takeover p50 {statistics.median(t) if t else 0:.2f} s, "
            f"max {max(t, default=0):.2f} s (bound {s.takeover_bound_s():g} s)",
            "ratings: " + ("equal the recompute" if not a.rating_problems
                           else f"{len(a.rating_problems)} differences"),
            f"drill: {self.seconds:.0f} s",
        ]
        return out


def run_drill(f: Fleet, kills: int = 3,
              progress: Callable[[str], None] = lambda line: None) -> DrillReport:
    """Kill machines (round robin) while matches are posted and ladder rounds run, until
    ``kills`` kills have orphaned matches (one whose matches all ended at the very moment
    counts, and another follows), then stop the ladder, let everything finish and audit."""
    t0 = time.monotonic()
    done: list[Kill] = []
    with Feeder(f, f.settings.feed_every_s) as feeder:
        while sum(1 for k in done if k.orphans) < kills:
            assert len(done) < 3 * kills, "kills keep missing every match"
            kill = kill_one(f, f.machines[len(done) % len(f.machines)])
            progress(f"kill {len(done) + 1}: {kill.machine} ({kill.processes} processes), "
                     f"{len(kill.orphans)} orphans taken over in "
                     f"{', '.join(f'{t:.2f}' for t in sorted(kill.takeover_s.values()))} s")
            done.append(kill)
    posted = list(feeder.ids)
    # The operator turns the ladder off, so that the drill ends: everything left drains.
    f.start_clock(ladder=False)
    wait_for(lambda: f.machines_up() and f.unfinished() == 0, 300, every_s=0.5,
             what="every match to finish")
    for m in posted:  # what the public API says, through nginx
        assert f.get(f"/api/matches/{m}")["state"] == "finished", m
    return DrillReport(f.settings, done, audit(f, posted), len(posted), feeder.errors,
                       f.answered_by(), time.monotonic() - t0)


def cleanup(runtime: Path) -> None:
    shutil.rmtree(runtime, ignore_errors=True)
