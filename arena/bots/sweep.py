"""The health sweep: check again every admitted bot not checked for ``HEALTH_SWEEP_INTERVAL_S``
(paused ones too: that is how a bot paused for failed checks, forfeits or faults returns),
and re-enqueue the submission / URL-change / re-check checks whose job was lost.

The checks themselves run on workers (:func:`arena.jobs.bodies.check_bot`); see
:mod:`arena.bots.service` for how failures pause a bot and a pass restores it.  Sweep job ids are
``check-<bot>-sweep-<time of its last check>``: the id names *the check that follows the last
one*, so a sweep repeated before that check ran enqueues nothing more, and the check after it
gets a new id however short ``HEALTH_SWEEP_INTERVAL_S`` is.  (Ids used to carry the minute,
which checked a bot at most once a minute whatever the setting said.)  Bots still waiting
for their first check, or rejected by it, are not swept (their
owner changes the URL or asks for a re-check).

A benched bot (:mod:`arena.bots.bench`) is not checked while its bench lasts (no check could
return it), and is checked at once when the bench has ended, however recent its last check.
"""

from __future__ import annotations

import datetime as dt
import logging

from flask import Flask
from sqlalchemy import and_, func, or_, select

from arena.core.models import Bot, HealthCheck, utcnow
from arena.core.queue import get_queue
from arena.core.storage import get_db

from .bench import BENCH
from .service import CHECK_BOT, check_timeout

log = logging.getLogger(__name__)


def due_bots(app: Flask) -> list[int]:
    """Admitted bots not checked for an interval, and benched bots whose bench has just
    ended; never a bot whose bench still lasts.  One statement."""
    now = utcnow()
    cutoff = now - dt.timedelta(seconds=float(app.config["HEALTH_SWEEP_INTERVAL_S"]))
    newest_bench = (select(func.max(HealthCheck.id)).where(HealthCheck.bot_id == Bot.id,
                                                          HealthCheck.purpose == BENCH)
                    .correlate(Bot).scalar_subquery())
    ends = (select(HealthCheck.finished_at).where(HealthCheck.id == newest_bench)
            .correlate(Bot).scalar_subquery())
    with get_db(app).begin() as s:
        return list(
            s.scalars(
                select(Bot.id)
                .where(Bot.deleted_at.is_(None), Bot.owner_paused.is_(False),
                       Bot.check_state == "passed",
                       or_(Bot.health_paused.is_(False), ends.is_(None), ends <= now),
                       or_(Bot.last_health_at.is_(None), Bot.last_health_at < cutoff,
                           and_(Bot.health_paused.is_(True), ends.is_not(None),
                                Bot.last_health_at < ends)))
                .order_by(Bot.id)
            )
        )


def lost_checks(app: Flask) -> list[tuple[int, int]]:
    """(bot, check) of client-requested checks not done after
    ``HEALTH_CHECK_REQUEUE_AFTER_S`` whose job Redis does not hold (queued or running)."""
    cutoff = utcnow() - dt.timedelta(seconds=float(app.config["HEALTH_CHECK_REQUEUE_AFTER_S"]))
    with get_db(app).begin() as s:
        rows = s.execute(select(HealthCheck.bot_id, HealthCheck.id)
                         .where(HealthCheck.state != "done", HealthCheck.purpose != "sweep",
                                HealthCheck.at < cutoff)
                         .order_by(HealthCheck.id)).all()
    q = get_queue(app)
    return [(b, c) for b, c in rows
            if q.job_status(f"check-{b}-{c}") not in PENDING]


PENDING = {"queued", "started", "deferred", "scheduled"}
"""RQ statuses of a check that has not run to its end yet: not enqueued a second time."""


def last_checks(app: Flask, bot_ids: list[int]) -> dict[int, str]:
    """Each bot's last check time as an id part (milliseconds since the epoch; 0: never)."""
    if not bot_ids:
        return {}
    with get_db(app).begin() as s:
        rows = s.execute(select(Bot.id, Bot.last_health_at).where(Bot.id.in_(bot_ids))).all()
    out = {}
    for bot_id, at in rows:
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=dt.UTC)
        out[bot_id] = "0" if at is None else str(int(at.timestamp() * 1000))
    return out


def sweep(app: Flask) -> list[int]:
    """Enqueue checks of the bots that are due, and lost checks again; returns the bots."""
    q = get_queue(app)
    minute = int(utcnow().timestamp() // 60)
    bots = due_bots(app)
    last = last_checks(app, bots)
    for bot_id in bots:
        job_id = f"check-{bot_id}-sweep-{last.get(bot_id, '0')}"
        if q.job_status(job_id) not in PENDING:
            q.enqueue(CHECK_BOT, bot_id, job_id=job_id, timeout=check_timeout(app), retries=0)
    for bot_id, check_id in lost_checks(app):
        log.info("health check %s of bot %s was lost; enqueued again", check_id, bot_id)
        # A fresh job id: RQ keeps a finished or failed job's id for a while.
        q.enqueue(CHECK_BOT, bot_id, check_id, job_id=f"check-{bot_id}-{check_id}-{minute}",
                  timeout=check_timeout(app), retries=0)
    return bots
