"""What the queue holds, for the operator: jobs by state and age, failed jobs and their
reasons, and retrying them (``arena queue``, :mod:`arena.ops.queue_cli`), and the same
figures as Prometheus gauges read at each scrape (:class:`QueueCollector`).

Two sources, side by side, because they can disagree and the difference is the news:

* **Redis** (RQ's queue and registries): jobs waiting, started, scheduled (a retry's
  delay), deferred, failed and finished, the age of the oldest waiting job, workers alive.
  Counted with one round trip (``LLEN`` and ``ZCARD`` in a pipeline, no registry clean-up:
  a scrape changes nothing).
* **The database** (the source of truth): matches ``queued`` and ``running`` and the age of
  the oldest queued one, two index range scans (``ix_matches_state_created``) over the
  unfinished matches only, whatever the number of finished ones.  Matches queued in the
  database but missing from Redis (a Redis lost) are the reconciler's to re-enqueue.

Why a command and not ``rq-dashboard``: it would add a second web application (its own
Flask blueprints, templates and scripts) that must be wrapped behind the admin token, and
its buttons act on raw RQ jobs, beside the service's own rules (a failed match job retried
there replays nothing once the database says the match is finished or failed; the
command says so).  ``arena queue`` runs where the operator already has the instance's
settings, adds no page to defend, and is tested on a real Redis.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flask import Flask
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from rq import Queue, Worker
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job
from sqlalchemy import func, select

from .models import Match
from .queue import get_queue
from .storage import get_db

log = logging.getLogger(__name__)

JOB_STATES = ("queued", "started", "scheduled", "deferred", "failed", "finished")
"""The RQ states counted, in the order they are shown."""
MATCH_STATES = ("queued", "running")
"""The unfinished match states counted in the database."""


@dataclass
class QueueReport:
    jobs: dict[str, int]
    """Jobs by RQ state."""
    oldest_queued_s: float | None
    """Age of the job waiting longest (None: none waits)."""
    workers: int
    matches: dict[str, int] = field(default_factory=dict)
    """Unfinished matches by state, in the database."""
    oldest_queued_match_s: float | None = None


def _registries(q: Queue) -> dict[str, Any]:
    return {"started": q.started_job_registry, "scheduled": q.scheduled_job_registry,
            "deferred": q.deferred_job_registry, "failed": q.failed_job_registry,
            "finished": q.finished_job_registry}


def _age(value: Any, now: dt.datetime) -> float | None:
    if not isinstance(value, dt.datetime):
        return None
    when = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return max(0.0, (now - when).total_seconds())


def redis_report(q: Queue) -> QueueReport:
    """Jobs by state, the oldest waiting job's age and the workers, from Redis."""
    regs = _registries(q)
    pipe = q.connection.pipeline(transaction=False)
    pipe.llen(q.key)
    for reg in regs.values():
        pipe.zcard(reg.key)
    pipe.lindex(q.key, 0)
    answers = pipe.execute()
    jobs = {"queued": int(answers[0])}
    jobs.update({name: int(n) for name, n in zip(regs, answers[1:-1], strict=True)})
    head = answers[-1]
    oldest = None
    if head is not None:
        try:
            job = Job.fetch(head.decode() if isinstance(head, bytes) else str(head),
                            connection=q.connection)
            oldest = _age(job.enqueued_at, dt.datetime.now(dt.UTC))
        except NoSuchJobError:
            oldest = None
    return QueueReport(jobs=jobs, oldest_queued_s=oldest,
                       workers=Worker.count(connection=q.connection, queue=q))


def database_report(app: Flask, report: QueueReport) -> None:
    """Add the unfinished matches by state (and the oldest queued one's age) to ``report``."""
    with get_db(app).begin() as s:
        rows = s.execute(select(Match.state, func.count()).where(
            Match.state.in_(MATCH_STATES)).group_by(Match.state)).all()
        counts = {row[0]: int(row[1]) for row in rows}
        first = s.scalar(select(func.min(Match.created_at)).where(Match.state == "queued"))
    report.matches = {state: int(counts.get(state, 0)) for state in MATCH_STATES}
    report.oldest_queued_match_s = _age(first, dt.datetime.now(dt.UTC))


def report(app: Flask) -> QueueReport:
    out = redis_report(get_queue(app).queue)
    database_report(app, out)
    return out


# --- failed jobs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FailedJob:
    id: str
    func: str
    args: tuple[Any, ...]
    ended_at: dt.datetime | None
    reason: str
    """The last line of the exception (its type and message)."""


def reason_of(exc_info: str | None) -> str:
    lines = [x for x in (exc_info or "").strip().splitlines() if x.strip()]
    return lines[-1].strip()[:300] if lines else "(no reason recorded)"


def failed_jobs(q: Queue, limit: int = 50) -> list[FailedJob]:
    """The newest failed jobs (at most ``limit``), newest first."""
    ids = q.failed_job_registry.get_job_ids(0, max(0, limit - 1), desc=True)
    out = []
    for job in Job.fetch_many(ids, connection=q.connection):
        if job is None:
            continue
        result = job.latest_result()
        exc = result.exc_string if result is not None else None
        out.append(FailedJob(job.id, job.func_name or "", tuple(job.args), job.ended_at,
                             reason_of(exc or job.exc_info)))
    return out


def retry(q: Queue, job_ids: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Put failed jobs back on the queue; yields each id and what happened."""
    registry = q.failed_job_registry
    for job_id in job_ids:
        try:
            registry.requeue(job_id)
            yield job_id, "requeued"
        except (InvalidJobOperation, NoSuchJobError):
            yield job_id, "not a failed job"


def all_failed_ids(q: Queue) -> list[str]:
    return list(q.failed_job_registry.get_job_ids())


# --- Prometheus ------------------------------------------------------------------------------


class QueueCollector(Collector):
    """The report as gauges, read at each scrape (Redis and database failures are reported
    as ``arena_metrics_source_up{source=...} 0``, never as a failed scrape)."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def describe(self) -> Iterable[Any]:
        return []  # collected at scrape time only; nothing to check at registration

    def collect(self) -> Iterable[Any]:
        up = GaugeMetricFamily("arena_metrics_source_up",
                               "Whether the source of the queue gauges answered this scrape.",
                               labels=["source"])
        t0 = time.perf_counter()
        try:
            rep = redis_report(get_queue(self.app).queue)
            up.add_metric(["redis"], 1)
        except Exception as exc:
            log.warning("metrics: the queue could not be read from Redis: %s", exc)
            up.add_metric(["redis"], 0)
            rep = None
        if rep is not None:
            jobs = GaugeMetricFamily("arena_queue_jobs", "RQ jobs by state (Redis).",
                                     labels=["state"])
            for state in JOB_STATES:
                jobs.add_metric([state], rep.jobs.get(state, 0))
            yield jobs
            yield GaugeMetricFamily("arena_queue_oldest_job_age_seconds",
                                    "Age of the job waiting longest on the queue (0: none).",
                                    value=rep.oldest_queued_s or 0.0)
            yield GaugeMetricFamily("arena_queue_workers", "RQ workers registered on the "
                                    "queue.", value=rep.workers)
        holder = rep if rep is not None else QueueReport({}, None, 0)
        try:
            database_report(self.app, holder)
            up.add_metric(["database"], 1)
            matches = GaugeMetricFamily("arena_matches", "Unfinished matches by state "
                                        "(the database).", labels=["state"])
            for state in MATCH_STATES:
                matches.add_metric([state], holder.matches.get(state, 0))
            yield matches
            yield GaugeMetricFamily("arena_matches_oldest_queued_age_seconds",
                                    "Age of the match queued longest (0: none).",
                                    value=holder.oldest_queued_match_s or 0.0)
        except Exception as exc:
            log.warning("metrics: matches could not be counted: %s", exc)
            up.add_metric(["database"], 0)
        yield up
        yield GaugeMetricFamily("arena_metrics_collect_seconds",
                                "Time this scrape spent reading Redis and the database.",
                                value=time.perf_counter() - t0)
