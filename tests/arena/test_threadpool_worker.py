"""The thread pool worker: many matches at once in one ``arena worker`` process.

Real worker processes on the real Redis and databases, real bots over loopback HTTP.  The
bots here are in-process servers (one thread per connection) that sleep on every move, so a
match lasts long enough to overlap with others, to be killed, stopped or timed out in the
middle; they count how many moves they are answering at once, which is how a test sees that
one process plays many matches at the same time (a one-at-a-time worker never has more than
one move in flight).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from rq import Worker
from rq.job import Job
from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry
from sqlalchemy import func, select

from arena.core.models import Match, RatingEvent
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.jobs.reconcile import reconcile
from arena.ops.procs import Child, descendants, start_arena, stop_all
from arena.play.matches import PLAY_MATCH
from arena.play.ratings import check
from sample_bots.sdk import serve_in_thread

from .conftest import admin_headers, both_backends, register, wait_for, worker_env
from .test_matches import counts

MOVE_S = 0.1
"""How long the test bots think on every move."""


class CountingBot:
    """Four bot servers (one endpoint per seat: one endpoint never sits in two seats) that
    think ``MOVE_S`` per move and record, together, the most moves in flight."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.servers = [serve_in_thread(self.choose, name=f"counting-{i}") for i in range(4)]
        self.urls = [server.url for server in self.servers]

    def choose(self, request: dict[str, Any]) -> str:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(MOVE_S)
            # The lowest play (or a pass): every deal ends, and takes ~50 turns.
            ids: list[str] = [m["id"] for m in request["legal_moves"]]
            return "pass" if "pass" in ids else ids[0]
        finally:
            with self.lock:
                self.in_flight -= 1

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


@pytest.fixture
def settings(settings: dict[str, Any]) -> dict[str, Any]:
    settings.update({"LEASE_S": 3.0, "RECONCILE_QUEUED_AFTER_S": 0.0,
                     "WORKER_CONCURRENCY": 32, "MATCH_JOB_RETRIES": 0})
    return settings


@pytest.fixture
def bot() -> Iterator[CountingBot]:
    b = CountingBot()
    yield b
    b.close()


@pytest.fixture
def table(client: FlaskClient, bot: CountingBot) -> list[int]:
    return [register(client, f"slow-{i}", url)[0] for i, url in enumerate(bot.urls)]


@pytest.fixture
def pool(app: Flask) -> Iterator[Callable[[], Child]]:
    """Start an ``arena worker`` (its log goes to the test's captured output)."""
    children: list[Child] = []

    def start() -> Child:
        child = start_arena(["worker", "--no-clock"], env=worker_env(app), name="pool",
                            quiet=False)
        children.append(child)
        return child

    yield start
    stop_all(children)


def post_match(client: FlaskClient, bots: list[int], deals: int, seed: int = 5) -> int:
    r = client.post("/api/matches", json={"bots": bots, "deals": deals, "seed": seed},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    match_id: int = r.get_json()["id"]
    return match_id


def matches(app: Flask, ids: list[int]) -> dict[int, Match]:
    with get_db(app).begin() as s:
        rows = s.scalars(select(Match).where(Match.id.in_(ids))).all()
        for m in rows:
            s.expunge(m)
        return {m.id: m for m in rows}


def states(app: Flask, ids: list[int]) -> list[str]:
    found = matches(app, ids)
    return [found[i].state for i in ids]


def all_finished(app: Flask, ids: list[int]) -> bool:
    return all(s == "finished" for s in states(app, ids))


def job(app: Flask, job_id: str | None) -> Job:
    assert job_id
    return Job.fetch(job_id, connection=get_queue(app).redis)


def assert_ratings_exact(app: Flask, ids: list[int]) -> None:
    """One result and four rating events per match, and the stored ratings equal a full
    recompute from the stored results (a rating applied twice would differ)."""
    for m in ids:
        assert counts(app, m) == (1, 4), m
    with get_db(app).begin() as s:
        assert s.scalar(select(func.count()).select_from(RatingEvent)) == 4 * len(ids)
        assert check(s, "classic", initial=1500.0, k=32.0) == []


def kill_family(child: Child) -> None:
    """SIGKILL the worker and everything it started, as if the machine had died."""
    family = [child.pid, *descendants(child.pid)]
    for pid in family:
        os.kill(pid, signal.SIGKILL)
    child.proc.wait()


# --- many at once -----------------------------------------------------------------------------


@pytest.mark.drill
@both_backends
def test_one_worker_process_plays_many_matches_at_once(
    app: Flask, client: FlaskClient, bot: CountingBot, table: list[int],
    pool: Callable[[], Child], redis: Redis,
) -> None:
    ids = [post_match(client, table, deals=1, seed=n) for n in range(16)]
    worker = pool()
    wait_for(lambda: all_finished(app, ids), 300, every_s=0.25, what="16 matches to finish")
    # Many moves were in flight at once: the matches overlapped in one process.
    assert bot.most_in_flight >= 8, bot.most_in_flight
    found = matches(app, ids)
    assert {str(m.lease_owner).rsplit(":", 1)[1] for m in found.values()} == {str(worker.pid)}
    assert all(m.attempts == 1 for m in found.values())
    assert_ratings_exact(app, ids)
    # RQ's view agrees: every job finished with its outcome, nothing left started or failed.
    q = get_queue(app).queue
    for m in found.values():
        j = job(app, m.job_id)
        # The job's thread records RQ's outcome after the match's transaction commits.
        wait_for(lambda j=j: j.get_status() != "started", 60, every_s=0.1,
                 what=f"RQ's outcome of {j.id}")
        assert j.get_status() == "finished" and j.return_value() == "finished"
    # The registrations' health checks ran through the same queue before the matches.
    finished = {j for j in FinishedJobRegistry(queue=q).get_job_ids() if j.startswith("match-")}
    assert finished == {m.job_id for m in found.values()}
    assert StartedJobRegistry(queue=q).get_job_ids() == []
    assert FailedJobRegistry(queue=q).get_job_ids() == []


@pytest.mark.drill
@both_backends
def test_duplicate_deliveries_in_one_pool_store_one_result(
    app: Flask, client: FlaskClient, table: list[int], pool: Callable[[], Child],
) -> None:
    """Four deliveries of each match run at once in threads of one process: one plays it."""
    ids = [post_match(client, table, deals=1, seed=n) for n in range(6)]
    q = get_queue(app)
    extra = {m: [f"dup-{m}-{k}" for k in range(3)] for m in ids}
    for m, job_ids in extra.items():
        for job_id in job_ids:
            q.enqueue(PLAY_MATCH, m, job_id=job_id, timeout=600, retries=0)
    pool()
    wait_for(lambda: all_finished(app, ids), 300, every_s=0.25, what="the matches to finish")
    found = matches(app, ids)
    for m in ids:
        deliveries = [found[m].job_id, *extra[m]]
        wait_for(lambda d=deliveries: all(job(app, j).get_status() == "finished"  # type: ignore[misc]
                                          for j in d), 60, what="every delivery to end")
        outcomes = sorted(str(job(app, j).return_value()) for j in deliveries)
        assert outcomes.count("finished") == 1, outcomes
        assert set(outcomes) <= {"finished", "held by another worker", "already finished"}
        assert found[m].attempts == 1
    assert_ratings_exact(app, ids)


# --- killed, stopped --------------------------------------------------------------------------


@pytest.mark.drill
@both_backends
def test_sigkill_mid_pool_loses_no_result_and_applies_no_rating_twice(
    app: Flask, client: FlaskClient, table: list[int], pool: Callable[[], Child],
) -> None:
    # Short matches finish while long ones still play.
    ids = [post_match(client, table, deals=1 if n < 4 else 3, seed=n) for n in range(12)]
    first = pool()

    def midway() -> bool:
        st = states(app, ids)
        return st.count("finished") >= 2 and st.count("running") >= 3

    wait_for(midway, 300, every_s=0.05, what="some matches finished and some running")
    kill_family(first)
    after_kill = matches(app, ids)
    done = [m for m in ids if after_kill[m].state == "finished"]
    cut = [m for m in ids if after_kill[m].state == "running"]
    assert len(done) >= 2 and len(cut) >= 3
    for m in done:
        assert counts(app, m) == (1, 4)
    # (A finishing transaction whose COMMIT was already on its way to PostgreSQL when the
    # process died still commits: such a match finishes after the kill on its first attempt.)

    pool()
    # The cut matches' leases run out (nobody renews them); the reconciler hands them over.
    def recovered() -> bool:
        reconcile(app)
        return all_finished(app, ids)

    wait_for(recovered, 300, every_s=0.5, what="every match to finish after the kill")
    found = matches(app, ids)
    for m in done:
        assert found[m].attempts == 1
    replayed = [m for m in cut if found[m].attempts == 2]
    assert all(found[m].attempts in (1, 2) for m in cut) and replayed
    assert_ratings_exact(app, ids)


@pytest.mark.drill
def test_sigterm_lets_running_matches_finish_and_takes_no_more(
    app: Flask, client: FlaskClient, table: list[int], pool: Callable[[], Child],
) -> None:
    app.config["WORKER_CONCURRENCY"] = 4
    app.config["WORKER_SHUTDOWN_GRACE_S"] = 300.0
    ids = [post_match(client, table, deals=1, seed=n) for n in range(6)]
    worker = pool()
    wait_for(lambda: states(app, ids).count("running") == 4, 120, every_s=0.05,
             what="four matches running")
    # RQ sees one worker with four executions (`rq info` shows them all).
    (registered,) = Worker.all(queue=get_queue(app).queue)
    assert len(registered.get_current_executions(refresh=True)) == 4
    assert registered.get_state() == "busy"
    os.kill(worker.pid, signal.SIGTERM)
    assert worker.proc.wait(timeout=300) == 0
    found = matches(app, ids)
    playing = [m for m in ids if found[m].state == "finished"]
    waiting = [m for m in ids if found[m].state == "queued"]
    assert len(playing) == 4 and len(waiting) == 2
    for m in playing:
        assert counts(app, m) == (1, 4)
        assert job(app, found[m].job_id).get_status() == "finished"
    for m in waiting:  # never taken: their jobs still wait in the queue for another worker
        assert found[m].attempts == 0
        assert job(app, found[m].job_id).get_status() == "queued"


@pytest.mark.drill
def test_sigterm_past_the_grace_hands_running_matches_back(
    app: Flask, client: FlaskClient, table: list[int], pool: Callable[[], Child],
) -> None:
    app.config["WORKER_SHUTDOWN_GRACE_S"] = 0.5
    app.config["WORKER_HANDBACK_S"] = 120.0
    ids = [post_match(client, table, deals=3, seed=n) for n in range(4)]
    worker = pool()
    wait_for(lambda: states(app, ids).count("running") == 4, 120, every_s=0.05,
             what="four matches running")
    before = matches(app, ids)
    os.kill(worker.pid, signal.SIGTERM)
    assert worker.proc.wait(timeout=120) == 0
    handed = matches(app, ids)
    for m in ids:
        assert handed[m].state == "queued" and "handed back" in handed[m].error
        assert handed[m].enqueues == before[m].enqueues + 1  # re-enqueued at once, new job id
        assert job(app, handed[m].job_id).get_status() == "queued"
        old = job(app, before[m].job_id)
        assert old.get_status() == "finished" and "handed back" in str(old.return_value())
        assert old.id in FinishedJobRegistry(queue=get_queue(app).queue).get_job_ids()
        assert counts(app, m) == (0, 0)
    pool()
    wait_for(lambda: all_finished(app, ids), 300, every_s=0.25, what="the handed-back matches")
    assert all(m.attempts == 2 for m in matches(app, ids).values())
    assert_ratings_exact(app, ids)


# --- timeouts ---------------------------------------------------------------------------------


def _tiny_budget(app: Flask) -> None:
    """Matches created from now on get an RQ job timeout of 3 s (no time bank, 250 ms
    courtesy calls, no per-turn allowance, no margin), far less than they take to play."""
    app.config.update({"MATCH_TIME_BANK_MS": 0, "MATCH_CALL_DEADLINE_MS": 250,
                       "MATCH_TURNS_PER_DEAL_BOUND": 0, "MATCH_JOB_TIMEOUT_MARGIN_S": 0})


def _normal_budget(app: Flask) -> None:
    app.config.update({"MATCH_TIME_BANK_MS": 10_000, "MATCH_CALL_DEADLINE_MS": 5000,
                       "MATCH_TURNS_PER_DEAL_BOUND": 200, "MATCH_JOB_TIMEOUT_MARGIN_S": 120})


@pytest.mark.drill
def test_a_match_past_its_timeout_stops_itself_and_the_pool_goes_on(
    app: Flask, client: FlaskClient, table: list[int], pool: Callable[[], Child],
) -> None:
    _tiny_budget(app)
    late = post_match(client, table, deals=3)
    _normal_budget(app)
    pool()
    m = matches(app, [late])[late]
    assert job(app, m.job_id).timeout == 3
    wait_for(lambda: job(app, m.job_id).get_status() == "failed", 120,
             what="the overlong match's job to fail")
    failed = job(app, m.job_id)
    q = get_queue(app).queue
    assert m.job_id in FailedJobRegistry(queue=q).get_job_ids()
    assert m.job_id not in StartedJobRegistry(queue=q).get_job_ids()
    assert "JobBudgetExceededError" in str(failed.latest_result().exc_string)  # type: ignore[union-attr]
    stopped = matches(app, [late])[late]
    assert stopped.state == "queued" and stopped.lease_token is None
    assert "budget" in stopped.error and counts(app, late) == (0, 0)
    # The same worker process goes on playing.
    fine = post_match(client, table, deals=1)
    wait_for(lambda: all_finished(app, [fine]), 120, what="the next match")
    assert counts(app, fine) == (1, 4)


@pytest.mark.drill
@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_job_stuck_past_its_timeout_is_given_up_without_hanging_the_pool(
    app: Flask, client: FlaskClient, table: list[int], pool: Callable[[], Child],
    database_url: str,
) -> None:
    """A job blocked where it cannot stop itself (its claim waits on a row lock held by
    someone else) is recorded as failed at timeout + grace; the pool plays on; when the job
    wakes up it sees it was given up and hands the match back without playing."""
    import psycopg

    app.config["WORKER_TIMEOUT_GRACE_S"] = 1.0
    _tiny_budget(app)
    stuck = post_match(client, table, deals=1)
    _normal_budget(app)
    locker = psycopg.connect(database_url.replace("postgresql+psycopg", "postgresql"))
    try:
        locker.execute("SELECT id FROM matches WHERE id = %s FOR UPDATE", (stuck,))
        pool()
        other = post_match(client, table, deals=1)
        m = matches(app, [stuck])[stuck]
        wait_for(lambda: job(app, m.job_id).get_status() == "failed", 120,
                 what="the stuck job to be given up")
        assert "after its timeout" in str(job(app, m.job_id).latest_result().exc_string)  # type: ignore[union-attr]
        q = get_queue(app).queue
        assert m.job_id in FailedJobRegistry(queue=q).get_job_ids()
        assert m.job_id not in StartedJobRegistry(queue=q).get_job_ids()
        wait_for(lambda: all_finished(app, [other]), 120, what="the pool to play on")
        assert matches(app, [stuck])[stuck].attempts == 0  # still blocked in its claim
    finally:
        locker.rollback()
        locker.close()
    # Unblocked, the given-up job claims, sees it was abandoned, and hands the match back.
    wait_for(lambda: "abandoned" in matches(app, [stuck])[stuck].error, 120,
             what="the woken job to hand the match back")
    back = matches(app, [stuck])[stuck]
    # Every execution blocked on the lock claims once when it wakes, sees it was given up and
    # hands back: one, or more where RQ retried the job while the lock was held (seen on a
    # loaded machine under pytest-xdist); none of them played.
    assert back.state == "queued" and back.attempts >= 1 and counts(app, stuck) == (0, 0)
    assert reconcile(app).requeued_queued == [stuck]
    wait_for(lambda: all_finished(app, [stuck]), 120, what="the match to be played again")
    assert_ratings_exact(app, [stuck, other])


@pytest.mark.drill
def test_burst_mode_plays_the_queue_then_exits(
    app: Flask, client: FlaskClient, table: list[int], bot: CountingBot,
) -> None:
    ids = [post_match(client, table, deals=1, seed=n) for n in range(4)]
    child = start_arena(["worker", "--burst", "--no-clock"], env=worker_env(app),
                        name="burst", quiet=False)
    try:
        assert child.proc.wait(timeout=300) == 0
    finally:
        stop_all([child])
    assert all_finished(app, ids)  # it waited for the running matches before leaving
    assert bot.most_in_flight >= 2
    assert_ratings_exact(app, ids)


# --- RQ bookkeeping of a long job ---------------------------------------------------------------


def test_heartbeats_keep_a_long_job_out_of_the_registry_cleanup(redis: Redis,
                                                                 settings: dict[str, Any]) -> None:
    """The main thread renews each running execution's entry in the started registry, so
    RQ's maintenance (run by any worker) never takes a long job for an abandoned one."""
    from rq import Queue

    from arena.jobs.threadpool_worker import ThreadPoolWorker

    q = Queue(str(settings["QUEUE_NAME"]), connection=redis)
    q.enqueue("time.sleep", 3, job_timeout=60)
    worker = ThreadPoolWorker([q], connection=redis, concurrency=2)
    worker.register_birth()
    try:
        found = worker._dequeue(None)
        assert found is not None
        worker._start(*found)
        (run,) = worker.running()
        registry = StartedJobRegistry(queue=q)
        member = run.execution.composite_key
        first = redis.zscore(registry.key, member)
        assert first is not None
        time.sleep(2)
        worker._beat(worker.running())
        renewed = redis.zscore(registry.key, member)
        assert renewed is not None and renewed >= first + 1
        # Maintenance at a moment when the first heartbeat would have expired.
        registry.cleanup(timestamp=first + 0.5)
        assert run.job.get_status() == "started"
        assert run.thread is not None
        run.thread.join(30)
        assert run.job.get_status() == "finished"
        assert registry.get_job_ids() == []
        assert run.job.id in FinishedJobRegistry(queue=q).get_job_ids()
    finally:
        worker.register_death()


# --- the collector ------------------------------------------------------------------------------


FREEZE_PROBE = """
import gc
from arena import create_app
from arena.core.queue import get_queue
from arena.core import bookkeeping
from arena.jobs.worker import make_worker
app = create_app()
before = gc.get_freeze_count()
make_worker(app, get_queue(app))
print(before, gc.get_freeze_count(), bookkeeping.gate.slots, *gc.get_threshold())
"""


def test_a_pool_worker_takes_its_start_up_heap_out_of_the_collectors_walks(app: Flask) -> None:
    """A full garbage collection holds the interpreter while it walks every tracked object:
    with the start-up heap in the walk, each one stalled every match's deadline for 50-140 ms
    (bench/concurrency.py).  The worker freezes what it holds for good before it plays."""
    import subprocess
    import sys

    env = {**worker_env(app), "WORKER_GC_THRESHOLDS": "9000,30,200",
           "WORKER_BOOKKEEPING_SLOTS": "3"}
    out = subprocess.run([sys.executable, "-c", FREEZE_PROBE], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    before, after, slots, *thresholds = (int(x) for x in out.split())
    assert before == 0
    assert after > 50_000  # the imported service: SQLAlchemy, RQ, Flask, the rules' tables
    assert thresholds == [9000, 30, 200]  # and collects young objects less often
    assert slots == 3  # and lets that many threads do bookkeeping at once (arena.core.bookkeeping)


def test_gc_thresholds_are_read_strictly() -> None:
    from arena.core.heap import gc_thresholds

    assert gc_thresholds("") == ()
    assert gc_thresholds("10000,20,100") == (10000, 20, 100)
    assert gc_thresholds(" 5000 ") == (5000,)
    for bad in ("0", "1,2,3,4", "a,b", "-1", "700,,10"):
        with pytest.raises(ValueError, match="WORKER_GC_THRESHOLDS"):
            gc_thresholds(bad)


def test_settle_heap_still_lets_cycles_made_later_be_collected() -> None:
    """Freezing must not turn later garbage into a leak (nor switch the collector off): a
    cycle made after it is collected."""
    import gc
    import weakref

    from arena.core.heap import settle_heap

    class Node:
        other: Any = None

    settle_heap()
    try:
        assert gc.isenabled()
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
