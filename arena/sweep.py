"""The health sweep: enqueue a check of every bot not checked for ``HEALTH_SWEEP_INTERVAL_S``.

The checks themselves run on workers (:func:`arena.jobs.check_bot`); see :mod:`arena.bots`
for how failures pause a bot and a pass restores it.  Job ids are ``check-<bot>-<minute>``,
so a sweep repeated within the same minute does not enqueue a second check.
"""

from __future__ import annotations

import datetime as dt
import logging

from flask import Flask
from sqlalchemy import or_, select

from .models import Bot, utcnow
from .queue import get_queue
from .storage import get_db

log = logging.getLogger(__name__)

CHECK_BOT = "arena.jobs.check_bot"


def due_bots(app: Flask) -> list[int]:
    cutoff = utcnow() - dt.timedelta(seconds=float(app.config["HEALTH_SWEEP_INTERVAL_S"]))
    with get_db(app).begin() as s:
        return list(
            s.scalars(
                select(Bot.id)
                .where(Bot.deleted_at.is_(None), Bot.owner_paused.is_(False),
                       or_(Bot.last_health_at.is_(None), Bot.last_health_at < cutoff))
                .order_by(Bot.id)
            )
        )


def sweep(app: Flask) -> list[int]:
    """Enqueue checks of the bots that are due; returns their ids."""
    q = get_queue(app)
    minute = int(utcnow().timestamp() // 60)
    timeout = int(
        (int(app.config["HEALTH_DEADLINE_MS"]) + int(app.config["HEALTH_DESCRIBE_DEADLINE_MS"]))
        / 1000 + 30
    )
    bots = due_bots(app)
    for bot_id in bots:
        job_id = f"check-{bot_id}-{minute}"
        if q.job_status(job_id) is None:
            q.enqueue(CHECK_BOT, bot_id, job_id=job_id, timeout=timeout, retries=0)
    return bots
