"""Events for owners' webhooks: written with the change they report, sent after its commit.

Whoever changes something an owner hears about (a bench, :mod:`arena.bots.bench`; a bot back,
:func:`arena.bots.service.apply_check`; a tournament starting or finishing,
:mod:`arena.tournaments.service`; a forfeit, :func:`arena.jobs.bodies.finish`) calls
:func:`emit` *inside* its transaction.  ``emit`` finds the webhooks that hear about those
bots and writes one :class:`~arena.core.webhook_models.WebhookDelivery` row each, in that same
transaction, and asks the session to enqueue their jobs *after* it commits:

* a change that rolls back leaves no delivery and enqueues nothing: nobody is told about
  what did not happen;
* a commit whose enqueue is lost (Redis down, the process killed right after the commit)
  loses nothing: the row is ``pending`` and the clock's sweep (:func:`arena.notify.delivery.sweep`)
  enqueues it.

The enqueue rides on SQLAlchemy's ``after_commit`` session event, so a caller does nothing
more than call :func:`emit`; ``after_rollback`` drops what was waiting.  No web request ever
calls a webhook: the job (:func:`arena.jobs.bodies.deliver_webhook`) does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from flask import Flask
from sqlalchemy import and_, event, or_, select
from sqlalchemy.orm import Session

from arena.core.models import Bot, utcnow
from arena.core.queue import get_queue
from arena.core.webhook_models import EVENTS, Webhook, WebhookDelivery

log = logging.getLogger(__name__)

DELIVER = "arena.jobs.bodies.deliver_webhook"
"""The job that makes one attempt (by dotted path: this room does not import ``jobs``)."""
PENDING_KEY = "arena.notify.pending"
"""Where a session keeps the deliveries to enqueue once it commits (``Session.info``)."""


def iso(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def job_id(delivery_id: int, attempt: int) -> str:
    """One job id per attempt: a retry is a new job, a repeat of the same attempt is not."""
    return f"webhook-{delivery_id}-{attempt}"


def job_timeout(app: Flask) -> int:
    """RQ timeout of one attempt: the call's deadline and a margin for the database."""
    return int(int(app.config["MATCH_CALL_DEADLINE_MS"]) / 1000) + 30


def enqueue(app: Flask, delivery_id: int, attempt: int) -> bool:
    """Put one attempt on the queue; False when Redis is down (the sweep tries again)."""
    try:
        get_queue(app).enqueue(DELIVER, delivery_id, attempt,
                               job_id=job_id(delivery_id, attempt),
                               timeout=job_timeout(app), retries=0)
    except Exception as exc:
        log.warning("webhook delivery %s not enqueued (the sweep will): %s", delivery_id, exc)
        return False
    return True


# --- after the commit, never before ----------------------------------------------------------


def after_commit(app: Flask, s: Session, delivery_ids: Iterable[int]) -> None:
    """Enqueue the first attempt of each delivery once ``s`` commits (never if it rolls back)."""
    s.info.setdefault(PENDING_KEY, []).extend((app, d) for d in delivery_ids)


@event.listens_for(Session, "after_commit")
def _enqueue_committed(s: Session) -> None:
    for app, delivery_id in s.info.pop(PENDING_KEY, ()):
        enqueue(app, delivery_id, 1)


@event.listens_for(Session, "after_rollback")
def _forget_rolled_back(s: Session) -> None:
    s.info.pop(PENDING_KEY, None)


# --- emitting --------------------------------------------------------------------------------


def new_delivery(s: Session, hook: Webhook, kind: str, data: Mapping[str, Any]) -> WebhookDelivery:
    """One event for one webhook, ``pending`` and due now (the caller's transaction)."""
    now = utcnow()
    event_id = uuid.uuid4().hex
    payload = {"event": kind, "id": event_id, "created_at": iso(now), "webhook_id": hook.id,
               "data": dict(data)}
    row = WebhookDelivery(webhook_id=hook.id, event=kind, event_id=event_id, payload=payload,
                          state="pending", attempts=0, created_at=now, next_attempt_at=now,
                          error="")
    s.add(row)
    return row


def listeners(s: Session, bots: list[Any]) -> list[Webhook]:
    """The live webhooks that hear about ``bots`` (rows with ``id`` and ``account_id``): the
    accounts' that own them, and those registered with one of their owner tokens."""
    accounts = {b.account_id for b in bots if b.account_id is not None}
    ids = {b.id for b in bots}
    hears = [and_(Webhook.account_id.is_(None), Webhook.bot_id.in_(ids))]
    if accounts:
        hears.append(Webhook.account_id.in_(accounts))
    return list(s.scalars(select(Webhook).where(Webhook.deleted_at.is_(None), or_(*hears))
                          .order_by(Webhook.id)))


def _theirs(hook: Webhook, bots: list[Any]) -> list[Any]:
    if hook.account_id is not None:
        return [b for b in bots if b.account_id == hook.account_id]
    return [b for b in bots if b.id == hook.bot_id]


def emit(app: Flask, s: Session, kind: str, *, bot_ids: Iterable[int],
         data: Mapping[str, Any]) -> list[int]:
    """Tell the owners of ``bot_ids`` that ``kind`` happened (inside the caller's
    transaction; sent after it commits).  Each webhook gets ``data`` plus ``bots``: the
    bots of its owner among them, never another owner's.  Returns the deliveries' ids."""
    if kind not in EVENTS:
        raise ValueError(f"unknown event {kind!r}")
    wanted = sorted(set(bot_ids))
    if not wanted:
        return []
    bots = list(s.execute(select(Bot.id, Bot.name, Bot.account_id)
                          .where(Bot.id.in_(wanted)).order_by(Bot.id)))
    if not bots:
        return []
    made = []
    for hook in listeners(s, bots):
        theirs = _theirs(hook, bots)
        if kind not in hook.event_set or not theirs:
            continue
        made.append(new_delivery(s, hook, kind, {
            **data, "bots": [{"id": b.id, "name": b.name} for b in theirs]}))
    if not made:
        return []
    s.flush()
    ids = [d.id for d in made]
    after_commit(app, s, ids)
    return ids


__all__ = ["DELIVER", "after_commit", "emit", "enqueue", "iso", "job_id", "job_timeout",
           "listeners", "new_delivery"]
