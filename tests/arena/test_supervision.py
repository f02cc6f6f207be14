"""Processes that look after each other (arena.jobs.supervisor), drilled with real processes.

Each test is one fault drill: Redis killed under a worker, a worker SIGKILLed (its clock,
scheduler and work horse must go with it), the clock SIGKILLed (the worker starts another),
two workers on one host and a worker restarted under its old name.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from rq import Worker

from arena.core.queue import QueueService, redis_binary
from arena.jobs.clock import leader_key
from arena.ops.procs import Child, descendants, start_arena, stop_all
from sample_bots.sdk import serve_in_thread

from ..ports import free_port
from .conftest import admin_headers, register, wait_for, worker_env
from .test_matches import counts
from .test_recovery import state

# --- helpers -----------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Running (a zombie is dead: it only waits for its parent to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def clocks_of(pid: int) -> list[int]:
    return [p for p in descendants(pid) if "arena clock" in cmdline(p) and alive(p)]


class PrivateRedis:
    """A redis-server of the test's own on a loopback TCP port (no persistence), which the
    test can kill and start again on the same port."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        r = Redis.from_url(self.url, socket_connect_timeout=1)

        def up() -> bool:
            try:
                return bool(r.ping())
            except Exception:
                return False

        wait_for(up, 30, what="the private redis-server")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def slow_bot() -> Iterator[str]:
    rng = random.Random(2)

    def choose(request: dict[str, Any]) -> str:
        time.sleep(0.1)
        ids: list[str] = [m["id"] for m in request["legal_moves"]]
        return rng.choice(ids)

    server = serve_in_thread(choose, name="slow")
    yield server.url
    server.shutdown()
    server.server_close()


@pytest.fixture
def workers() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    stop_all(started)


def post_match(client: FlaskClient, bots: list[int], deals: int = 1) -> int:
    r = client.post("/api/matches", json={"bots": bots, "deals": deals, "seed": 5},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    match_id: int = r.get_json()["id"]
    return match_id


def finished(app: Flask, match_id: int, timeout_s: float = 90) -> None:
    wait_for(lambda: state(app, match_id).state == "finished", timeout_s,
             what=f"match {match_id} to finish")
    assert counts(app, match_id) == (1, 4)


def start(workers: list[Child], app: Flask, *args: str, **env: str) -> Child:
    child = start_arena(["worker", *args], env={**worker_env(app), **env}, name="worker")
    workers.append(child)
    return child


# --- Redis lost and back ---------------------------------------------------------------------


@pytest.mark.drill
def test_a_worker_waits_for_a_lost_redis_and_resumes(
    app: Flask, client: FlaskClient, four_bots: list[int], private_redis: PrivateRedis,
    workers: list[Child],
) -> None:
    app.config["REDIS_URL"] = private_redis.url
    app.extensions["arena.queue"] = QueueService(app)
    worker = start(workers, app, "--no-clock", WORKER_REDIS_RETRY_MAX_S="1",
                   REDIS_URL=private_redis.url)
    first = post_match(client, four_bots)
    finished(app, first)

    private_redis.kill()
    # Long enough for every part of the worker to run into the dead Redis (its dequeue,
    # heartbeats, scheduler and pubsub thread); without supervision it quits for good.
    time.sleep(5)
    assert worker.alive(), "the worker quit when Redis went away"
    private_redis.start()  # empty: nothing survived
    second = post_match(client, four_bots)
    finished(app, second)
    assert worker.alive()
    # Redis came back empty: the worker registered again.
    r = Redis.from_url(private_redis.url)
    assert len(Worker.all(connection=r)) == 1


# --- children die with the worker; a dead clock is replaced -------------------------------------


@pytest.mark.drill
@pytest.mark.parametrize(("concurrency", "children"), [(0, 3), (8, 2)],
                         ids=["forking-worker", "pool-worker"])
def test_a_killed_worker_takes_its_clock_scheduler_and_horse_with_it(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str], slow_bot: str,
    workers: list[Child], concurrency: int, children: int,
) -> None:
    """RQ's forking worker has a clock, a scheduler and the work horse playing the match; the
    thread pool worker plays it in a thread, so only its clock and scheduler are children."""
    bots = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    bots.append(register(client, "slow", slow_bot)[0])
    match_id = post_match(client, bots, deals=3)
    worker = start(workers, app, WORKER_CLOCK="1", LADDER_ENABLED="0",
                   WORKER_CONCURRENCY=str(concurrency))
    wait_for(lambda: state(app, match_id).state == "running", 60, what="the match to start")

    def family() -> list[int]:
        return [p for p in descendants(worker.pid) if alive(p)]

    kids = wait_for(lambda: (f := family()) and len(f) >= children and clocks_of(worker.pid)
                    and f,
                    60, what="the worker's clock, scheduler and horse")
    os.kill(worker.pid, signal.SIGKILL)
    worker.proc.wait()
    wait_for(lambda: not any(alive(p) for p in kids), 30,
             what=f"the children {kids} of the killed worker to die")


@pytest.mark.drill
def test_the_worker_starts_its_killed_clock_again(
    app: Flask, four_bots: list[int], workers: list[Child]
) -> None:
    worker = start(workers, app, WORKER_CLOCK="1", LADDER_ENABLED="0",
                   WORKER_CHILD_RESTART_MAX_S="1")
    (clock,) = wait_for(lambda: clocks_of(worker.pid), 60, what="the clock")
    os.kill(clock, signal.SIGKILL)
    (again,) = wait_for(lambda: [p for p in clocks_of(worker.pid) if p != clock], 60,
                        what="a new clock")
    assert again != clock
    wait_for(lambda: not os.path.exists(f"/proc/{clock}"), 30,
             what="the dead clock to be reaped (no zombie)")
    # And it works: a clock leads again (the lock holder is the new clock).
    r = Redis.from_url(str(app.config["REDIS_URL"]))
    wait_for(lambda: (r.get(leader_key(app.config)) or b"").endswith(f":{again}".encode()),
             60, what="the new clock to lead")
    assert worker.alive()


def schedulers_of(pid: int) -> list[int]:
    """RQ's scheduler processes of a worker started with ``--no-clock``: its children (a pool
    worker has no others, its matches play in threads; a forking worker's work horse is
    counted too while it lives)."""
    return [p for p in descendants(pid) if alive(p) and "arena clock" not in cmdline(p)]


def settled(found: Callable[[], list[int]], for_s: float = 2.0) -> list[int] | None:
    """``found()`` when it is one process and still the same one ``for_s`` later, else None:
    a forking worker's work horse (a child too, for the length of a job) can be the only
    new child for a moment before the scheduler starts (CI run D of a58b1c4 saw two)."""
    first = found()
    if len(first) != 1:
        return None
    time.sleep(for_s)
    return first if found() == first else None


@pytest.mark.drill
@pytest.mark.parametrize("concurrency", [8, 0], ids=["pool-worker", "forking-worker"])
def test_the_worker_starts_its_scheduler_again_after_a_redis_outage(
    app: Flask, private_redis: PrivateRedis, workers: list[Child], concurrency: int,
) -> None:
    """RQ's scheduler process exits on its first Redis error (its heartbeat); the worker's
    own loop waits for Redis and goes on.  RQ itself starts a scheduler again only in its
    maintenance pass, every 10 minutes: until then a retry scheduled for 1 s waited for
    minutes.  The worker now starts it again itself, with a bounded back-off."""
    import datetime as dt

    from rq import Queue

    worker = start(workers, app, "--no-clock", REDIS_URL=private_redis.url,
                   WORKER_REDIS_RETRY_MAX_S="1", WORKER_CHILD_RESTART_MAX_S="1",
                   WORKER_CONCURRENCY=str(concurrency))
    (first,) = wait_for(lambda: settled(lambda: schedulers_of(worker.pid)), 60,
                        what="RQ's scheduler")
    private_redis.kill()
    wait_for(lambda: not alive(first), 60, what="the scheduler to die on the Redis error")
    private_redis.start()  # empty, as a restarted Redis without persistence
    (again,) = wait_for(lambda: settled(lambda: [p for p in schedulers_of(worker.pid)
                                                 if p != first]), 60, what="a new scheduler")
    assert worker.alive()
    # And it schedules: a job due in a second is moved onto the queue and run.
    q = Queue(str(app.config["QUEUE_NAME"]), connection=Redis.from_url(private_redis.url))
    job = q.enqueue_in(dt.timedelta(seconds=1), "time.sleep", 0)
    wait_for(lambda: job.get_status(refresh=True) == "finished", 60,
             what="the scheduled job to be moved onto the queue and run")
    # One scheduler in the end (the forking worker's work horse, a child too, exits after
    # its job: counted by schedulers_of while it does; a second scheduler would stay).
    wait_for(lambda: schedulers_of(worker.pid) == [again], 30, what="one scheduler only")


@pytest.mark.drill
def test_a_stopped_worker_stops_its_clock(app: Flask, workers: list[Child]) -> None:
    worker = start(workers, app, WORKER_CLOCK="1", LADDER_ENABLED="0")
    (clock,) = wait_for(lambda: clocks_of(worker.pid), 60, what="the clock")
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.proc.wait(timeout=60) == 0
    wait_for(lambda: not alive(clock), 30, what="the clock to stop with the worker")


# --- names -----------------------------------------------------------------------------------


@pytest.mark.drill
def test_worker_names_do_not_collide_and_a_restart_under_a_name_is_prompt(
    app: Flask, client: FlaskClient, four_bots: list[int], redis: Redis,
    workers: list[Child],
) -> None:
    a = start(workers, app, "--no-clock")
    b = start(workers, app, "--no-clock")
    queue = str(app.config["QUEUE_NAME"])

    def registered() -> list[Worker]:
        return [w for w in Worker.all(connection=redis) if queue in w.queue_names()]

    found = wait_for(lambda: len(r := registered()) == 2 and r, 60, what="two workers")
    host = socket.gethostname().split(".")[0]
    names = sorted(w.name for w in found)
    assert names[0] != names[1]
    assert {n.split(".")[1] for n in names} == {str(a.pid), str(b.pid)}
    assert all(n.startswith(f"{host}.") for n in names)
    stop_all([a, b])

    # A worker killed without unregistering, started again under the same name: it must
    # not wait for the dead registration to expire (RQ keeps it ~8 minutes).
    named = start(workers, app, "--no-clock", "--name", "fixed-name")
    wait_for(lambda: any(w.name == "fixed-name" for w in registered()), 60,
             what="the named worker")
    for pid in [named.pid, *descendants(named.pid)]:
        os.kill(pid, signal.SIGKILL)
    named.proc.wait()
    again = start(workers, app, "--no-clock", "--name", "fixed-name")
    match_id = post_match(client, four_bots)
    # Well inside the ~480 s a dead registration would hold the name, with room for a
    # saturated machine (start-up and a one-deal match took over 60 s once under load).
    finished(app, match_id, 180)
    (w,) = [w for w in registered() if w.name == "fixed-name"]
    assert w.pid == again.pid


PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE)
print(child.pid, child.stdout.readline().decode().strip(), flush=True)
child.wait()
"""
CHILD = """
import os, sys, time
from arena.core.processes import die_with_parent
die_with_parent(os.getppid(), use_prctl=sys.argv[1] == "prctl", watch=sys.argv[1] == "watch")
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("mechanism", ["prctl", "watch"])
def test_a_child_dies_with_its_killed_parent(mechanism: str) -> None:
    """Each mechanism alone: the kernel's death signal, and the portable parent-pid watch."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, mechanism],
                              stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2])
    assert parent.stdout is not None
    pid, ready = parent.stdout.readline().decode().split()
    assert ready == "ready"
    assert alive(int(pid))
    parent.kill()
    parent.wait()
    wait_for(lambda: not alive(int(pid)), 30, what=f"the orphan ({mechanism}) to die")


FORKER = """
import os, signal, sys, time
from arena.core.processes import children_die_with_me
stops = []
signal.signal(signal.SIGTERM, lambda signum, frame: stops.append(signum))  # a flag, as ours
# The stop arrives in the child the moment it exists, before arena's fork hook has run (on a
# busy machine RQ's stop_scheduler can be that quick: its one SIGTERM must not be lost).
os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGTERM))
children_die_with_me()
pid = os.fork()
if pid == 0:
    time.sleep(float(sys.argv[1]))
    os._exit(0)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), stops, flush=True)
"""


def test_a_stop_signal_that_reaches_a_fresh_fork_ends_it() -> None:
    """RQ's scheduler (a fork) stopped before its handlers are in place: it still stops."""
    out = subprocess.run([sys.executable, "-c", FORKER, "30"], capture_output=True, text=True,
                         timeout=120, cwd=Path(__file__).resolve().parents[2], check=True)
    assert out.stdout.split() == [str(-signal.SIGTERM), "[]"], out


# --- the scheduler keeper's rules, with a stand-in for RQ's scheduler ---------------------------


class FakeProcess:
    """``started=False``: made but not started yet, as RQ's ``_process`` is for a moment
    (not alive, and no exit code)."""

    def __init__(self, pid: int, alive: bool = True, started: bool = True) -> None:
        self.pid, self.alive = pid, alive
        self.exitcode = None if alive or not started else 1

    def is_alive(self) -> bool:
        return self.alive


class FakeScheduler:
    """``acquire_locks(auto_start=True)`` as RQ's: starts a process when the lock is had;
    ``fail`` makes the next calls raise a Redis error."""

    def __init__(self) -> None:
        self._process: FakeProcess | None = FakeProcess(100, alive=False)
        self.calls = 0
        self.fail = 0

    def acquire_locks(self, auto_start: bool = False) -> set[str]:
        import redis.exceptions

        self.calls += 1
        if self.fail:
            self.fail -= 1
            raise redis.exceptions.ConnectionError("Redis is away")
        self._process = FakeProcess(100 + self.calls)
        return {"q"}


class FakeWorker:
    def __init__(self) -> None:
        self.scheduler = FakeScheduler()
        self._stop_requested = False
        self.maintained = 0
        self.torn_down = False

    def run_maintenance_tasks(self) -> None:
        self.maintained += 1

    def teardown(self) -> None:
        self.torn_down = True


def test_the_scheduler_keeper_restarts_a_dead_scheduler_unless_the_worker_is_stopping() -> None:
    from arena.jobs.supervisor import SchedulerKeeper

    keeper = SchedulerKeeper(restart_max_s=0.05, check_s=0.01)
    stopping, failing = FakeWorker(), FakeWorker()
    stopping._stop_requested = True
    failing.scheduler.fail = 2  # Redis still away for two tries
    keeper.start()
    try:
        keeper.watch(stopping)
        assert not keeper._stopping.wait(0.3)
        assert stopping.scheduler.calls == 0 and keeper.restarts == 0  # never while stopping
        keeper.watch(failing)
        wait_for(lambda: keeper.restarts == 1, 30, what="the scheduler to be started again")
        assert failing.scheduler.calls == 3  # two refused by Redis, then started
        assert failing.scheduler._process is not None and failing.scheduler._process.alive
        assert not keeper._stopping.wait(0.2)
        assert keeper.restarts == 1  # alive now: left alone
        failing.run_maintenance_tasks()  # RQ's maintenance still runs (under the lock)
        assert failing.maintained == 1
        # The loop ends: its teardown lets go first, so a scheduler that dies now (stopped
        # by that teardown) is not started again behind it.
        failing.teardown()
        assert failing.torn_down
        failing.scheduler._process = FakeProcess(7, alive=False)
        assert not keeper._stopping.wait(0.3)
        assert keeper.restarts == 1
    finally:
        keeper.stop()


def test_the_scheduler_keeper_leaves_a_scheduler_that_is_still_starting_alone() -> None:
    """RQ sets the scheduler's process before it starts it: not alive, not exited.  Two
    schedulers were found beside one worker in a saturated CI run when the keeper took that
    moment for a death and started another."""
    from arena.jobs.supervisor import SchedulerKeeper

    keeper = SchedulerKeeper(restart_max_s=0.05, check_s=0.01)
    worker = FakeWorker()
    worker.scheduler._process = FakeProcess(100, alive=False, started=False)
    keeper.start()
    try:
        keeper.watch(worker)
        assert not keeper._stopping.wait(0.3)
        assert worker.scheduler.calls == 0 and keeper.restarts == 0
        worker.scheduler._process = FakeProcess(100, alive=False)  # now it has exited
        wait_for(lambda: keeper.restarts == 1, 30, what="the scheduler to be started again")
    finally:
        keeper.stop()
