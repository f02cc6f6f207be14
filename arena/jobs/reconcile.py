"""The reconciler: make Redis agree with the database again.

The database says which matches are unfinished; Redis only holds jobs.  After a Redis loss
(flush, restart without persistence, failover), a dead worker or a dead RQ scheduler, some
unfinished matches have no job that will ever run them.  The reconciler acts on the
database's state and enqueues a new job for:

* ``queued`` for longer than ``RECONCILE_QUEUED_AFTER_S``;
* ``running`` with an expired lease (the worker died or lost its database connection: a live
  worker renews its lease every ``LEASE_S / 3``), unless the reconciler itself re-enqueued it
  after the lease expired and less than ``LEASE_S`` ago (that job is on its way to claim it);

in both cases unless the match's current job is *on the queue itself* (the Redis list that
every worker pops, so any live worker will run it).  RQ's registries are not trusted: a job
"scheduled" for a retry runs only if an RQ scheduler is alive to move it onto the queue, and
one "started" by a dead worker runs never; such a job is replaced (and a waiting one deleted,
so that it does not run as well once a scheduler comes back).

A replaced job deleted at once may come back: RQ retries a failed job by writing its status
``scheduled`` *first* and saving the job and its place in the scheduled registry in a
pipeline a moment later (rq 3.0, ``Job.retry``).  A reconcile between the two sees the
match's lease expired and the job "scheduled", enqueues a new job and deletes the old one,
and the worker's pipeline then saves the old job again: scheduled, with no scheduler to run
it, for ever (a flake of tests/arena/test_recovery.py; in production a stale retry that a
scheduler would later run to claim in vain).  So each run also sweeps the queue's scheduled
registry (:func:`_sweep_replaced`): a match job there that is no longer its match's current
job (the database's ``Match.job_id``) is deleted, whenever it got there.

Each re-enqueue bumps ``Match.enqueues`` with a conditional UPDATE (see
:func:`arena.play.matches.enqueue_match`), so two reconcilers running at once enqueue a match
once; and even a duplicate job is harmless (claims are exclusive: a result and its ratings
are stored exactly once).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from flask import Flask
from rq.job import Job
from sqlalchemy import Row, and_, or_, select

from arena.core.idlists import among
from arena.core.models import Match, utcnow
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.jobs.rq_adapter import delete_job
from arena.play.matches import enqueue_match

log = logging.getLogger(__name__)

REPLACED_JOB = {"deferred", "scheduled"}
"""RQ statuses of a replaced job that is deleted: it waits for another RQ process (the
scheduler) and would only claim in vain once that process came back."""


MATCH_JOB = re.compile(r"match-(\d+)-\d+")
"""A match job's id (:func:`arena.play.matches.enqueue_match`): the match's id, then which
enqueue of it."""


@dataclass
class Report:
    requeued_queued: list[int] = field(default_factory=list)
    requeued_running: list[int] = field(default_factory=list)
    swept: list[str] = field(default_factory=list)
    """Replaced jobs found waiting in the scheduled registry and deleted."""

    @property
    def total(self) -> int:
        """Matches re-enqueued (the sweep re-enqueues nothing)."""
        return len(self.requeued_queued) + len(self.requeued_running)

    def __str__(self) -> str:
        return (f"re-enqueued {len(self.requeued_queued)} queued match(es) "
                f"{self.requeued_queued} and {len(self.requeued_running)} abandoned running "
                f"match(es) {self.requeued_running}; deleted {len(self.swept)} replaced "
                f"job(s) {self.swept}")


def reconcile(app: Flask) -> Report:
    db = get_db(app)
    now = utcnow()
    grace = now - dt.timedelta(seconds=float(app.config["RECONCILE_QUEUED_AFTER_S"]))
    handed_out = now - dt.timedelta(seconds=float(app.config["LEASE_S"]))
    report = Report()
    with db.begin() as s:
        queued = s.execute(
            select(Match.id, Match.job_id, Match.enqueues)
            .where(Match.state == "queued", Match.queued_at < grace)
            .order_by(Match.id)
        ).all()
        abandoned = s.execute(
            select(Match.id, Match.job_id, Match.enqueues)
            .where(Match.state == "running", Match.lease_expires_at < now,
                   # not re-enqueued (by us) since the lease expired, or too long ago
                   or_(Match.queued_at <= Match.lease_expires_at,
                       Match.queued_at < handed_out))
            .order_by(Match.id)
        ).all()
    if queued or abandoned:
        _requeue(app, now, queued, abandoned, report)
    report.swept = _sweep_replaced(app)
    if report.total or report.swept:
        log.info("reconcile: %s", report)
    return report


def _requeue(app: Flask, now: dt.datetime, queued: Sequence[Row[int, str | None, int]],
             abandoned: Sequence[Row[int, str | None, int]], report: Report) -> None:
    """Enqueue a new job for each selected match whose job is not on the queue itself."""
    on_queue = _jobs_on_queue(app)
    for match_id, job_id, enqueues in queued:
        if job_id in on_queue:
            continue
        cond = and_(Match.state == "queued", Match.enqueues == enqueues)
        if enqueue_match(app, match_id, only_if=cond):
            report.requeued_queued.append(match_id)
            _delete_if_waiting(app, job_id)
    for match_id, job_id, enqueues in abandoned:
        if job_id in on_queue:
            continue  # a worker will pop it
        cond = and_(Match.state == "running", Match.lease_expires_at < now,
                    Match.enqueues == enqueues)
        if enqueue_match(app, match_id, only_if=cond):
            report.requeued_running.append(match_id)
            _delete_if_waiting(app, job_id)


def _sweep_replaced(app: Flask) -> list[str]:
    """Delete the match jobs waiting in the queue's scheduled registry that are no longer
    their match's current job (one ZRANGE, and one SELECT when it holds match jobs).

    A scheduled job is never run without an RQ scheduler, and a replaced one would only
    claim in vain once one came back; the registry normally holds a few retries at most.
    Redis or the database down: nothing now, the next run tries again."""
    try:
        waiting = get_queue(app).queue.scheduled_job_registry.get_job_ids()
        jobs = {job_id: int(m.group(1)) for job_id in waiting
                if (m := MATCH_JOB.fullmatch(job_id))}
        if not jobs:
            return []
        with get_db(app).begin() as s:
            rows = s.execute(select(Match.id, Match.job_id)
                             .where(among(s, Match.id, set(jobs.values())))).all()
        current: dict[int, str | None] = dict(rows)
    except Exception as exc:
        log.warning("reconcile: cannot sweep the scheduled registry: %s", exc)
        return []
    stale = sorted(job_id for job_id, match_id in jobs.items() if current.get(match_id) != job_id)
    return [job_id for job_id in stale if _delete_if_waiting(app, job_id)]


def _jobs_on_queue(app: Flask) -> set[str]:
    """Ids of the jobs waiting on the queue list itself (one LRANGE).  Redis down: none
    (then every enqueue fails as well, and the next run tries again)."""
    try:
        return set(get_queue(app).queue.get_job_ids())
    except Exception as exc:
        log.warning("reconcile: cannot read the queue: %s", exc)
        return set()


def _delete_if_waiting(app: Flask, job_id: str | None) -> bool:
    """Delete a replaced job if it waits for a scheduler; whether it did."""
    if not job_id:
        return False
    q = get_queue(app)
    try:
        if q.job_status(job_id) in REPLACED_JOB:
            delete_job(Job.fetch(job_id, connection=q.redis))
            return True
    except Exception as exc:  # best effort: a duplicate job would claim in vain
        log.warning("reconcile: could not delete replaced job %s: %s", job_id, exc)
    return False
