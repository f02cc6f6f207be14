"""The reconciler: make Redis agree with the database again.

The database says which matches are unfinished; Redis only holds jobs.  After a Redis loss
(flush, restart without persistence, failover) or a dead worker, some unfinished matches have
no job that will ever run them.  The reconciler finds them and enqueues a new job:

* ``queued`` for longer than ``RECONCILE_QUEUED_AFTER_S`` with no live job (the job id
  stored on the match is unknown to Redis, or its job failed, stopped or finished without
  claiming the match);
* ``running`` with an expired lease (the worker died or lost its database connection: a live
  worker renews its lease every ``LEASE_S / 3``), unless its newest job is still waiting
  in the queue (it was re-enqueued already).

Each re-enqueue bumps ``Match.enqueues`` with a conditional UPDATE (see
:func:`arena.matches.enqueue_match`), so two reconcilers running at once enqueue a match
once; and even a duplicate job is harmless (claims are exclusive).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from flask import Flask
from sqlalchemy import and_, select

from .matches import enqueue_match
from .models import Match, utcnow
from .queue import get_queue
from .storage import get_db

log = logging.getLogger(__name__)

LIVE_JOB = {"queued", "started", "deferred", "scheduled"}
"""RQ statuses of a job that will still claim its match (or is running it)."""
WAITING_JOB = {"queued", "deferred", "scheduled"}
"""RQ statuses of a job that has not started yet."""


@dataclass
class Report:
    requeued_queued: list[int] = field(default_factory=list)
    requeued_running: list[int] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.requeued_queued) + len(self.requeued_running)

    def __str__(self) -> str:
        return (f"re-enqueued {len(self.requeued_queued)} queued match(es) "
                f"{self.requeued_queued} and {len(self.requeued_running)} abandoned running "
                f"match(es) {self.requeued_running}")


def reconcile(app: Flask) -> Report:
    db, q = get_db(app), get_queue(app)
    now = utcnow()
    grace = now - dt.timedelta(seconds=float(app.config["RECONCILE_QUEUED_AFTER_S"]))
    report = Report()
    with db.begin() as s:
        queued = s.execute(
            select(Match.id, Match.job_id, Match.enqueues)
            .where(Match.state == "queued", Match.queued_at < grace)
            .order_by(Match.id)
        ).all()
        abandoned = s.execute(
            select(Match.id, Match.job_id, Match.enqueues)
            .where(Match.state == "running", Match.lease_expires_at < now)
            .order_by(Match.id)
        ).all()
    for match_id, job_id, enqueues in queued:
        if q.job_status(job_id) in LIVE_JOB:
            continue
        cond = and_(Match.state == "queued", Match.enqueues == enqueues)
        if enqueue_match(app, match_id, only_if=cond):
            report.requeued_queued.append(match_id)
    for match_id, job_id, enqueues in abandoned:
        if q.job_status(job_id) in WAITING_JOB:
            continue  # already re-enqueued; its job has not started yet
        cond = and_(Match.state == "running", Match.lease_expires_at < now,
                    Match.enqueues == enqueues)
        if enqueue_match(app, match_id, only_if=cond):
            report.requeued_running.append(match_id)
    if report.total:
        log.info("reconcile: %s", report)
    return report
