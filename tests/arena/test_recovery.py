"""Failures of the machinery: a worker killed mid-match, Redis flushed mid-run.

Real worker processes, a real Redis, real bots over HTTP.  A slow in-process bot (it sleeps
on every move) keeps a match running long enough to break things in the middle of it.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis

from arena.core.models import Match
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.jobs.reconcile import reconcile
from arena.ops.procs import Child, descendants
from arena.play.matches import wire_match_id
from arena.play.reseed import attempt_seed
from referee import find_ruleset
from referee.game.cards import mask_texts
from referee.game.state import Deal, DealContext
from referee.runner import log as referee_log
from referee.runner.match import deal_seed
from sample_bots.sdk import serve_in_thread

from .conftest import MARKER, admin_headers, both_backends, register, wait_for
from .test_matches import counts

pytestmark = pytest.mark.drill

SLOW_MOVE_S = 0.08


@pytest.fixture
def settings(settings: dict[str, Any]) -> dict[str, Any]:
    settings["LEASE_S"] = 3.0
    settings["RECONCILE_QUEUED_AFTER_S"] = 0.0
    return settings


@pytest.fixture
def slow_hands() -> list[tuple[str, int, list[str]]]:
    """What the slow bot was shown: match id, deal index and hand of each of its moves."""
    return []


@pytest.fixture
def slow_bot(slow_hands: list[tuple[str, int, list[str]]]) -> Iterator[str]:
    rng = random.Random(1)

    def choose(request: dict[str, Any]) -> str:
        slow_hands.append((request["match_id"], request["deal_index"], request["hand"]))
        time.sleep(SLOW_MOVE_S)
        ids: list[str] = [m["id"] for m in request["legal_moves"]]
        return rng.choice(ids)

    server = serve_in_thread(choose, name="slow")
    yield server.url
    server.shutdown()
    server.server_close()


@pytest.fixture
def table(client: FlaskClient, sample_bots: dict[str, str], slow_bot: str) -> list[int]:
    ids = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    return [*ids, register(client, "slow", slow_bot)[0]]


def state(app: Flask, match_id: int) -> Match:
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None
        s.expunge(m)
        return m


def post_match(client: FlaskClient, bots: list[int], deals: int) -> int:
    r = client.post("/api/matches", json={"bots": bots, "deals": deals, "seed": 5},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    match_id: int = r.get_json()["id"]
    return match_id


@both_backends
def test_worker_killed_mid_match_completes_once(
    app: Flask, client: FlaskClient, table: list[int], start_worker: Callable[[], Child],
    slow_hands: list[tuple[str, int, list[str]]],
) -> None:
    match_id = post_match(client, table, deals=3)
    first = start_worker()
    running = wait_for(lambda: (m := state(app, match_id)).state == "running" and m, 60,
                       what="a worker to claim the match")
    attempt_1 = wire_match_id(app.config, match_id, 1)
    wait_for(lambda: any(mid == attempt_1 for mid, _, _ in slow_hands), 60,
             what="the slow bot's first move of the match")  # well inside the match
    horse_pid = int(str(running.lease_owner).rsplit(":", 1)[1])
    family = [first.pid, *descendants(first.pid)]
    assert horse_pid in family
    for pid in family:  # the worker, its scheduler and the horse running the match: as if
        os.kill(pid, signal.SIGKILL)  # the machine died, with no chance to clean up
    first.proc.wait()
    assert state(app, match_id).state == "running"
    assert counts(app, match_id) == (0, 0)

    start_worker()
    # Nothing happens until the lease runs out; then the reconciler hands the match over.
    assert reconcile(app).total == 0
    wait_for(lambda: reconcile(app).requeued_running == [match_id], 15, every_s=0.5,
             what="the lease to expire")
    assert reconcile(app).total == 0  # the new job is waiting: no second re-enqueue
    done = wait_for(lambda: (m := state(app, match_id)).state == "finished" and m, 90,
                    what="the match to finish on the second worker")
    assert done.attempts == 2
    assert counts(app, match_id) == (1, 4)
    body = client.get(f"/api/matches/{match_id}").get_json()
    assert len(body["rating_changes"]) == 4
    # The second attempt dealt new cards (arena.play.reseed), and its log says which.
    log = client.get(f"/api/matches/{match_id}/log").get_json()
    assert referee_log.verify(log).ok
    assert log["seed"] == body["seed"] == attempt_seed(5, 2) and body["match_seed"] == 5
    [slow] = [x["seat"] for x in body["seats"] if x["bot"]["id"] == table[-1]]
    # Each attempt had its own match id: a bot that answers a repeated request from memory
    # must not replay attempt 1's answers on the retry's new hands.
    ids = [wire_match_id(app.config, match_id, attempt) for attempt in (1, 2)]
    shown = {mid: tuple(sorted(hand)) for mid, deal, hand in slow_hands  # first move, deal 0
             if mid in ids and deal == 0 and len(hand) == 13}
    first, retry = tuple(sorted(hand_of(5, slow))), tuple(sorted(log["deals"][0]["hands"][slow]))
    assert ids[0] != ids[1] and first != retry
    assert shown == {ids[0]: first, ids[1]: retry}  # attempt 1's hand, then the retry's


@both_backends
def test_redis_flushed_mid_run_is_recovered_by_the_reconciler(
    app: Flask, client: FlaskClient, table: list[int], redis: Redis,
    start_worker: Callable[[], Child],
) -> None:
    # Two matches queued before any worker runs; Redis loses them.
    lost = [post_match(client, table, deals=2), post_match(client, table, deals=1)]
    _flush(redis)
    # One job at a time, so that the second match's job still waits in the queue when
    # Redis is flushed again below.
    app.config["WORKER_CONCURRENCY"] = 1
    # A match running while Redis is flushed still finishes (its state is in the database).
    start_worker()
    # The worker is running jobs (a later one finished), and the lost matches are still
    # queued: nothing but the reconciler brings them back.
    probe = get_queue(app).queue.enqueue("time.sleep", 0)
    wait_for(lambda: probe.get_status(refresh=True) == "finished", 60,
             what="the worker to run a job")
    assert [state(app, m).state for m in lost] == ["queued", "queued"]
    report = reconcile(app)
    assert sorted(report.requeued_queued) == lost
    wait_for(lambda: state(app, lost[0]).state == "running", 60, what="a match to start")
    _flush(redis)
    # The second match's job went with the flush; the first finishes regardless.
    wait_for(lambda: state(app, lost[0]).state == "finished", 60, what="the running match")
    assert state(app, lost[1]).state == "queued"
    assert reconcile(app).requeued_queued == [lost[1]]
    start_worker()  # in case the first worker did not survive losing its own keys
    wait_for(lambda: state(app, lost[1]).state == "finished", 60, what="the lost match")
    for m in lost:
        assert counts(app, m) == (1, 4)
    assert reconcile(app).total == 0


def hand_of(seed: int, seat: int) -> list[str]:
    """Seat ``seat``'s hand in deal 0 of a standard match dealt from ``seed``."""
    rules = find_ruleset("standard")
    deal = Deal.new(rules, deal_seed(seed, 0), DealContext(0, None, None))
    return mask_texts(deal.dealt[seat])


def _flush(redis: Redis) -> None:
    """Flush this run's Redis database (only ours), keeping our claim on it."""
    marker = redis.get(MARKER)
    redis.flushdb()
    if marker is not None:
        redis.set(MARKER, marker, ex=3600)


# --- no RQ scheduler: recovery works from the database ------------------------------------------


def _no_scheduler_worker(app: Flask, concurrency: int | None = None) -> Child:
    from arena.ops.procs import start_arena

    from .conftest import worker_env

    env = {**worker_env(app), "WORKER_RQ_SCHEDULER": "0"}
    if concurrency is not None:
        env["WORKER_CONCURRENCY"] = str(concurrency)
    return start_arena(["worker", "--no-clock"], env=env, name="worker")


def _rq_status(app: Flask, job_id: str | None) -> str | None:
    from arena.core.queue import get_queue

    return get_queue(app).job_status(job_id)


@both_backends
def test_a_retry_scheduled_without_a_scheduler_is_replaced_by_the_reconciler(
    app: Flask, client: FlaskClient, table: list[int]
) -> None:
    """The drill: a work horse dies mid-match, RQ schedules the job's retry, and no RQ
    scheduler runs to move it onto the queue.  The lease runs out; the reconciler must act
    on that (the database), not on RQ's "scheduled"."""
    from arena.ops.procs import stop_all

    match_id = post_match(client, table, deals=3)
    worker = _no_scheduler_worker(app, concurrency=0)  # RQ's forking worker: a horse to kill
    try:
        running = wait_for(lambda: (m := state(app, match_id)).state == "running" and m, 60,
                           what="a worker to claim the match")
        horse = int(str(running.lease_owner).rsplit(":", 1)[1])
        assert horse in descendants(worker.pid)
        os.kill(horse, signal.SIGKILL)
        wait_for(lambda: _rq_status(app, running.job_id) == "scheduled", 60,
                 what="RQ to schedule the retry")
        wait_for(lambda: reconcile(app).requeued_running == [match_id], 30, every_s=0.5,
                 what="the reconciler to replace the scheduled retry")
        # The stale retry is gone: deleted at once, or, when the worker's pipeline saved it
        # again just after that (test below), by the next run's sweep.
        wait_for(lambda: reconcile(app).total == 0 and _rq_status(app, running.job_id) is None,
                 30, every_s=0.5, what="the stale retry to be deleted")
        done = wait_for(lambda: (m := state(app, match_id)).state == "finished" and m, 90,
                        what="the match to finish")
        assert done.attempts == 2
        assert counts(app, match_id) == (1, 4)
        assert reconcile(app).total == 0
    finally:
        stop_all([worker])


def test_a_queued_match_whose_job_waits_for_a_scheduler_is_enqueued_again(
    app: Flask, client: FlaskClient, table: list[int]
) -> None:
    """The other member of the family: a match given back (``queued``) after an error,
    whose retry is scheduled; no scheduler runs."""
    import datetime as dt

    from rq.job import Job

    from arena.core.queue import get_queue
    from arena.ops.procs import stop_all

    match_id = post_match(client, table, deals=1)
    job_id = state(app, match_id).job_id
    q = get_queue(app)
    job = Job.fetch(str(job_id), connection=q.redis)
    q.queue.remove(job)
    q.queue.schedule_job(job, dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
    assert _rq_status(app, job_id) == "scheduled"
    assert reconcile(app).requeued_queued == [match_id]
    assert _rq_status(app, job_id) is None
    assert reconcile(app).total == 0  # the new job is on the queue
    worker = _no_scheduler_worker(app)
    try:
        wait_for(lambda: state(app, match_id).state == "finished", 90, what="the match")
        assert counts(app, match_id) == (1, 4)
    finally:
        stop_all([worker])


def test_a_replaced_retry_that_rq_saves_after_the_reconciler_deleted_it_is_swept(
    app: Flask, client: FlaskClient, four_bots: list[int]
) -> None:
    """The flake of the test above, replayed step by step.  RQ retries a failed job by
    writing its status ``scheduled`` at once and saving the job and its registry entry in a
    pipeline a moment later (``Job.retry``).  A reconcile in between sees the lease expired
    and the job scheduled: it enqueues a new job and deletes the old one, which the
    worker's pipeline then saves again, scheduled for ever with no scheduler.  The next run
    sweeps it; a scheduled job that is still its match's own is left alone."""
    import datetime as dt

    from rq.job import Job
    from sqlalchemy import update

    from arena.core.models import utcnow

    match_id = post_match(client, four_bots, deals=1)
    old_job = str(state(app, match_id).job_id)
    long_ago = utcnow() - dt.timedelta(seconds=60)
    with get_db(app).begin() as s:  # a worker claimed it; its horse died, the lease ran out
        s.execute(update(Match).where(Match.id == match_id).values(
            state="running", lease_token="dead", lease_expires_at=long_ago + dt.timedelta(
                seconds=30), queued_at=long_ago))
    q = get_queue(app)
    job = Job.fetch(old_job, connection=q.redis)
    q.queue.remove(job)  # the worker took it off the queue
    with q.redis.pipeline() as pipe:  # the worker, seeing its horse dead: RQ's retry
        job.retry(q.queue, pipe)
        assert _rq_status(app, old_job) == "scheduled"  # written now, not in the pipeline
        assert reconcile(app).requeued_running == [match_id]  # a reconcile at that moment
        assert _rq_status(app, old_job) is None
        pipe.execute()  # the worker's pipeline saves the replaced job again
    assert _rq_status(app, old_job) == "scheduled"
    new_job = state(app, match_id).job_id
    assert new_job != old_job and new_job in q.queue.get_job_ids()

    report = reconcile(app)
    assert report.swept == [old_job] and report.total == 0
    assert _rq_status(app, old_job) is None
    assert reconcile(app).swept == []

    # The match's own job waiting for a retry is not swept.
    app.config["RECONCILE_QUEUED_AFTER_S"] = 3600.0
    with get_db(app).begin() as s:
        s.execute(update(Match).where(Match.id == match_id).values(
            state="queued", lease_token=None, lease_expires_at=None, queued_at=utcnow()))
    current = Job.fetch(str(new_job), connection=q.redis)
    q.queue.remove(current)
    q.queue.schedule_job(current, dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
    report = reconcile(app)
    assert report.swept == [] and report.total == 0
    assert _rq_status(app, new_job) == "scheduled"
