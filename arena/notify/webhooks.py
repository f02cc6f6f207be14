"""The owner's side of webhooks: register one, list them, delete one, send a test event, read
the delivery log.

Who owns a webhook (:class:`Owner`): an **account** (its webhooks hear about every bot the
account owns, as it owns them: a bot adopted later is heard about from then on), or a **bot's
owner token** (that bot only; ``account_id`` NULL).  Each sees and deletes only its own: a
webhook of anyone else is "not found", so nobody learns that it exists.  At most
``WEBHOOKS_PER_OWNER`` live ones each.

The URL passes the SSRF guard's spelling and literal-address checks when it is registered
(the same ones as a bot's URL); names are resolved and checked on every attempt
(:mod:`.delivery`).  The signing secret is shown once, in the answer that made the webhook,
and derived afterwards (:func:`arena.core.signing.webhook_secret`): never stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.core.models import Bot, utcnow
from arena.core.signing import webhook_secret
from arena.core.webhook_models import EVENTS, WEBHOOK_URL_MAX, Webhook, WebhookDelivery
from referee.wire.netguard import GuardError, check_url

from .delivery import policy
from .events import after_commit, new_delivery

TEST = "webhook.test"
SUBSCRIBABLE = tuple(e for e in EVENTS if e != TEST)
"""The events an owner chooses among (the test event always goes)."""


class TooManyWebhooksError(Exception):
    pass


@dataclass(frozen=True)
class Owner:
    """Who acts: an account, or the holder of one bot's owner token."""

    account_id: int | None = None
    bot_id: int | None = None

    def __post_init__(self) -> None:
        if (self.account_id is None) == (self.bot_id is None):
            raise ValueError("an owner is an account or a bot, not both or neither")

    def holds(self, hook: Webhook) -> bool:
        if self.account_id is not None:
            return hook.account_id == self.account_id
        return hook.account_id is None and hook.bot_id == self.bot_id


def url_problem(app: Flask, url: str) -> str:
    """Why the URL is refused (empty: fine): the bots' rules, from the same guard."""
    if not 1 <= len(url) <= WEBHOOK_URL_MAX:
        return f"url must be 1 to {WEBHOOK_URL_MAX} characters"
    try:
        check_url(url, policy(app))
    except GuardError as exc:
        return f"url refused: {exc}"
    return ""


def events_problem(events: list[str]) -> str:
    unknown = sorted(set(events) - set(SUBSCRIBABLE))
    if unknown:
        return f"unknown event {unknown[0]!r}; known: {', '.join(SUBSCRIBABLE)}"
    return ""


def owned(s: Session, owner: Owner) -> list[Webhook]:
    """The owner's live webhooks, oldest first."""
    stmt = select(Webhook).where(Webhook.deleted_at.is_(None))
    if owner.account_id is not None:
        stmt = stmt.where(Webhook.account_id == owner.account_id)
    else:
        stmt = stmt.where(Webhook.account_id.is_(None), Webhook.bot_id == owner.bot_id)
    return list(s.scalars(stmt.order_by(Webhook.id)))


def find(s: Session, owner: Owner, webhook_id: int) -> Webhook | None:
    """The owner's live webhook ``webhook_id``, or None (someone else's is None too)."""
    hook = s.get(Webhook, webhook_id)
    if hook is None or hook.deleted_at is not None or not owner.holds(hook):
        return None
    return hook


def create(app: Flask, s: Session, owner: Owner, url: str,
           events: list[str] | None = None) -> tuple[Webhook, str]:
    """A new webhook (the caller checked the URL and events, and commits) and its secret, to
    show once.  Raises :class:`TooManyWebhooksError`."""
    if len(owned(s, owner)) >= int(app.config["WEBHOOKS_PER_OWNER"]):
        raise TooManyWebhooksError(f"at most {app.config['WEBHOOKS_PER_OWNER']} webhooks; "
                                   "delete one first")
    chosen = sorted(set(events)) if events else list(SUBSCRIBABLE)
    hook = Webhook(account_id=owner.account_id, bot_id=owner.bot_id, url=url,
                   events=" ".join(chosen), secret_generation=1, created_at=utcnow())
    s.add(hook)
    s.flush()
    return hook, webhook_secret(app, hook.id, hook.secret_generation)


def delete(hook: Webhook) -> None:
    """Stop it (the caller commits): deliveries still waiting are cancelled by their jobs."""
    hook.deleted_at = utcnow()


def send_test(app: Flask, s: Session, owner: Owner, hook: Webhook) -> WebhookDelivery:
    """Queue a ``webhook.test`` event for ``hook`` (sent after the caller commits)."""
    if owner.account_id is not None:
        bots = s.execute(select(Bot.id, Bot.name).where(
            Bot.account_id == owner.account_id, Bot.deleted_at.is_(None)).order_by(Bot.id)).all()
    else:
        bots = s.execute(select(Bot.id, Bot.name).where(Bot.id == owner.bot_id)).all()
    row = new_delivery(s, hook, TEST, {
        "message": "a test event, sent because you asked for one: your webhook works",
        "bots": [{"id": b.id, "name": b.name} for b in bots]})
    s.flush()
    after_commit(app, s, [row.id])
    return row


def deliveries(s: Session, hook: Webhook, *, limit: int,
               before: int | None = None) -> list[WebhookDelivery]:
    """The webhook's deliveries, newest first (``before``: an id, for the next page)."""
    stmt = select(WebhookDelivery).where(WebhookDelivery.webhook_id == hook.id)
    if before is not None:
        stmt = stmt.where(WebhookDelivery.id < before)
    return list(s.scalars(stmt.order_by(WebhookDelivery.id.desc()).limit(limit)))


def newest_deliveries(s: Session, hook_ids: list[int],
                      per: int) -> dict[int, list[WebhookDelivery]]:
    """The ``per`` newest deliveries of each webhook, newest first, in one statement (a
    window function numbers each webhook's rows): the page's log costs the same however
    many webhooks it shows."""
    out: dict[int, list[WebhookDelivery]] = {h: [] for h in hook_ids}
    if not hook_ids:
        return out
    numbered = (select(WebhookDelivery.id, func.row_number().over(
        partition_by=WebhookDelivery.webhook_id, order_by=WebhookDelivery.id.desc())
        .label("n")).where(WebhookDelivery.webhook_id.in_(hook_ids)).subquery())
    for d in s.scalars(select(WebhookDelivery).join(numbered, numbered.c.id == WebhookDelivery.id)
                       .where(numbered.c.n <= per)
                       .order_by(WebhookDelivery.webhook_id, WebhookDelivery.id.desc())):
        out[d.webhook_id].append(d)
    return out


def delivery_counts(s: Session, hook_ids: list[int]) -> dict[int, dict[str, int]]:
    """Per webhook, how many deliveries are in each state (one statement)."""
    out: dict[int, dict[str, int]] = {h: {} for h in hook_ids}
    if not hook_ids:
        return out
    for hook_id, state, n in s.execute(
            select(WebhookDelivery.webhook_id, WebhookDelivery.state, func.count())
            .where(WebhookDelivery.webhook_id.in_(hook_ids))
            .group_by(WebhookDelivery.webhook_id, WebhookDelivery.state)):
        out[hook_id][state] = n
    return out


__all__ = ["SUBSCRIBABLE", "TEST", "Owner", "TooManyWebhooksError", "create", "delete",
           "deliveries", "delivery_counts", "events_problem", "find", "newest_deliveries",
           "owned", "send_test", "url_problem"]
