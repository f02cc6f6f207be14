"""Webhook tables (same declarative ``Base`` as :mod:`arena.core.models`; migration 0012).

An owner registers a webhook (:class:`Webhook`): an account (``account_id``: the webhook
hears about every bot the account owns, now and later) or a bot's owner token (``bot_id``,
``account_id`` NULL: that bot only).  Every event that concerns one of its bots becomes one
:class:`WebhookDelivery` row, written in the transaction of the change itself (a rolled-back
change leaves no row, so it notifies nobody), then sent by a queue job
(:mod:`arena.notify.delivery`)::

    pending ──attempt──▶ sending ──2xx──▶ delivered
       ▲                   │ └──(attempts used up, or the URL refused)──▶ failed
       └──── retrying ◀────┘  (next_attempt_at: doubling back-off)
    (webhook deleted before it was sent) ──▶ cancelled

Nothing about the webhook's signing secret is stored but ``secret_generation``: the secret is
derived from the server key (:func:`arena.core.signing.webhook_secret`), as bots' are.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, utcnow

EVENTS = {
    "bot.benched": "one of the owner's bots was benched (failed checks, forfeits or faults)",
    "bot.back": "a benched bot is healthy again and back in the ladder",
    "tournament.starting": "a tournament one of the owner's bots entered has started",
    "tournament.finished": "a tournament one of the owner's bots entered has finished (or was "
                           "cancelled)",
    "match.forfeited": "one of the owner's bots forfeited a match",
    "webhook.test": "the owner asked for a test event (\"send test event\")",
}
"""Every event a webhook can hear, with what it means (docs/notifications.md)."""

DELIVERY_STATES = ("pending", "sending", "retrying", "delivered", "failed", "cancelled")
WEBHOOK_URL_MAX = 2000
EVENT_NAMES_MAX = 200


class Webhook(Base):
    """An owner's webhook: where to POST events, and which ones."""

    __tablename__ = "webhooks"

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int | None] = mapped_column(ForeignKey("accounts.id"), index=True,
                                                   default=None)
    bot_id: Mapped[int | None] = mapped_column(ForeignKey("bots.id"), index=True,
                                               default=None)
    """Set for a webhook registered with a bot's owner token (then ``account_id`` is NULL)."""
    url: Mapped[str] = mapped_column(String(WEBHOOK_URL_MAX))
    events: Mapped[str] = mapped_column(String(EVENT_NAMES_MAX))
    """Space-separated names from :data:`EVENTS` (``webhook.test`` always goes)."""
    secret_generation: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[dt.datetime | None] = mapped_column(default=None)

    @property
    def event_set(self) -> frozenset[str]:
        return frozenset(self.events.split())


class WebhookDelivery(Base):
    """One event for one webhook, and what became of sending it."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        # The owner's log, newest first.
        Index("ix_webhook_deliveries_webhook_id_id", "webhook_id", "id"),
        # The clock's sweep: what is due.
        Index("ix_webhook_deliveries_state_next", "state", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id"))
    event: Mapped[str] = mapped_column(String(40))
    event_id: Mapped[str] = mapped_column(String(32), unique=True)
    """The payload's ``id``: the same on every attempt, so a receiver can drop repeats."""
    payload: Mapped[dict[str, Any]] = mapped_column()
    state: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    last_attempt_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    response_status: Mapped[int | None] = mapped_column(Integer, default=None)
    latency_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    error: Mapped[str] = mapped_column(String(300), default="")


__all__ = ["DELIVERY_STATES", "EVENTS", "Webhook", "WebhookDelivery"]
