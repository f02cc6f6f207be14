"""RQ's internals the service uses (arena.jobs.rq_adapter), each driven through RQ's own code.

One test per private member: when an RQ release renames one, changes its signature or stops
reading it where the service relies on it, the test named after it fails, instead of a worker
that quietly ignores a stop or dequeues from the wrong queue.  See docs/operations.md,
"Upgrading RQ".
"""

from __future__ import annotations

import datetime as dt
import inspect
import signal
from collections.abc import Iterator

import pytest
from redis import Redis
from rq import Queue, Worker
from rq.job import Job
from rq.utils import utcformat
from rq.worker import BaseWorker, DequeueStrategy

from arena.jobs import rq_adapter
from arena.jobs.threadpool_worker import ThreadPoolWorker


def worker_on(redis: Redis, *names: str) -> tuple[Worker, list[Queue]]:
    queues = [Queue(n, connection=redis) for n in names or ("adapter",)]
    return Worker(queues, connection=redis), queues


@pytest.fixture(autouse=True)
def keep_signal_handlers() -> Iterator[None]:
    """RQ's loop installs its SIGTERM/SIGINT handlers in this (the test) process: undo that."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def test_every_private_member_is_listed_and_exists_on_rqs_base_worker(redis: Redis) -> None:
    worker, _ = worker_on(redis)
    assert set(rq_adapter.PRIVATE_MEMBERS) == {
        "_install_signal_handlers", "_start_scheduler", "_ordered_queues",
        "_dequeue_strategy", "_stop_requested", "_shutdown_requested_date"}
    for member in rq_adapter.PRIVATE_MEMBERS:
        assert hasattr(worker, member), f"rq.worker.BaseWorker has no {member} any more"


def test_install_signal_handlers_is_what_rqs_loop_calls(redis: Redis) -> None:
    assert list(inspect.signature(BaseWorker._install_signal_handlers).parameters) == ["self"]
    worker, _ = worker_on(redis)
    calls: list[str] = []
    original = rq_adapter.signal_installer(worker)

    def install() -> None:
        calls.append("installed")
        original()

    rq_adapter.replace_signal_installer(worker, install)
    worker.work(burst=True)  # an empty queue: the loop starts, installs, finds nothing, ends
    assert calls == ["installed"]
    # and the pool worker's public hook is what RQ's private one calls
    assert issubclass(ThreadPoolWorker, rq_adapter.SignalHookedWorker)
    assert "_install_signal_handlers" not in vars(ThreadPoolWorker)


def test_start_scheduler_takes_what_the_adapter_passes() -> None:
    params = list(inspect.signature(BaseWorker._start_scheduler).parameters)
    assert params == ["self", "burst", "logging_level", "date_format", "log_format"]


def test_ordered_queues_and_dequeue_strategy_order_the_next_dequeue(redis: Redis) -> None:
    worker, (a, _, _) = worker_on(redis, "adapter-a", "adapter-b", "adapter-c")
    assert [q.name for q in rq_adapter.ordered_queues(worker)] == [
        "adapter-a", "adapter-b", "adapter-c"]
    rq_adapter.set_dequeue_strategy(worker, DequeueStrategy.ROUND_ROBIN)
    worker.reorder_queues(reference_queue=a)  # RQ reads the strategy here
    assert [q.name for q in rq_adapter.ordered_queues(worker)] == [
        "adapter-b", "adapter-c", "adapter-a"]


def test_stop_requested_ends_rqs_loop_before_its_next_job(redis: Redis) -> None:
    worker, (q,) = worker_on(redis, "adapter-stop")
    job = q.enqueue("builtins.print", "never run")
    rq_adapter.mark_stop_requested(worker)
    assert worker.work(burst=True) is False  # RQ: "no job was performed"
    assert q.job_ids == [job.id]


def test_shutdown_requested_date_is_what_rq_writes_to_the_workers_hash(redis: Redis) -> None:
    worker, _ = worker_on(redis)
    when = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    rq_adapter.set_shutdown_requested_date(worker, when)
    worker.set_shutdown_requested_date()  # type: ignore[no-untyped-call]
    assert redis.hget(worker.key, "shutdown_requested_date") == utcformat(when).encode()


def test_register_and_unregister_are_what_rq_lists_as_live_workers(redis: Redis) -> None:
    worker, (q,) = worker_on(redis, "adapter-registry")
    with redis.pipeline() as p:
        rq_adapter.register(worker, p)
        p.execute()
    assert worker.key in Worker.all_keys(connection=redis)
    assert worker.key in Worker.all_keys(queue=q)
    with redis.pipeline() as p:
        rq_adapter.unregister(worker, p)
        p.execute()
    assert worker.key not in Worker.all_keys(connection=redis)
    assert worker.key not in Worker.all_keys(queue=q)


def test_scheduler_process_is_the_process_rqs_scheduler_runs_in(redis: Redis) -> None:
    """The scheduler keeper (arena.jobs.supervisor.SchedulerKeeper) reads it to see a dead
    scheduler; RQ's ``start()`` sets it, and RQ's own maintenance reads it the same way."""
    from rq.scheduler import RQScheduler

    assert rq_adapter.SCHEDULER_PRIVATE_MEMBERS == ("_process",)
    scheduler = RQScheduler(["adapter"], connection=redis)
    assert rq_adapter.scheduler_process(scheduler) is None  # never started
    assert "self._process" in inspect.getsource(RQScheduler.start)
    assert "self.scheduler._process" in inspect.getsource(BaseWorker.run_maintenance_tasks)


def test_stop_requested_reads_rqs_loop_flag(redis: Redis) -> None:
    worker, _ = worker_on(redis)
    assert rq_adapter.stop_requested(worker) is False
    rq_adapter.mark_stop_requested(worker)
    assert rq_adapter.stop_requested(worker) is True


def test_delete_job_deletes_a_job_whose_execution_is_half_gone(redis: Redis) -> None:
    """RQ's ``Job.delete`` raises half-way when its execution registry lists an execution
    whose hash is gone (a work horse killed mid-job): the job leaves the scheduled registry
    but its hash stays.  ``delete_job`` finishes the deletion.  When RQ stops raising here,
    the first half of this test fails and the workaround can go."""
    q = Queue("adapter", connection=redis)

    def scheduled_with_a_lost_execution() -> Job:
        job = q.schedule_job(q.create_job("builtins.len", args=("abc",)),
                             dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
        far = dt.datetime.now(dt.UTC).timestamp() + 3600  # not yet expired for cleanup()
        redis.zadd(job.execution_registry.key, {"lost-execution": far})
        return job

    job = scheduled_with_a_lost_execution()
    with pytest.raises(ValueError, match="not found in Redis"):
        Job.fetch(job.id, connection=redis).delete()
    assert job.id not in q.scheduled_job_registry.get_job_ids()  # out of its registry...
    assert Job.fetch(job.id, connection=redis).get_status() == "scheduled"  # ...but kept

    job = scheduled_with_a_lost_execution()
    rq_adapter.delete_job(Job.fetch(job.id, connection=redis))
    assert not Job.exists(job.id, connection=redis)
    assert job.id not in q.scheduled_job_registry.get_job_ids()
    assert not redis.exists(job.execution_registry.key)
