"""Sending a webhook event: one attempt per job, doubling waits between them, a bounded number.

Each attempt is a queue job (:func:`arena.jobs.bodies.deliver_webhook`), never a web request,
and goes out exactly as a call to a bot does: through :class:`referee.wire.httpbot.BotClient`,
so through the SSRF guard (:mod:`referee.wire.netguard`, ``ALLOW_PRIVATE_BOT_URLS`` as for
bots: the address is checked before any connection, and connected to as checked), under one
hard deadline (``MATCH_CALL_DEADLINE_MS``, the deadline of a bot's ``/start``), and signed
with version 2 of the bots' scheme (:mod:`referee.wire.signing`) under the webhook's own
secret.  A receiver that hangs costs its own delivery one deadline, nobody else anything.

An attempt:

1. *claims* the delivery in one transaction: only a delivery ``pending`` or ``retrying``,
   due, and at the attempt the job names (a job delivered twice, or a retry the sweep
   enqueued again, finds it taken and does nothing); it becomes ``sending``;
2. POSTs the stored payload (the same bytes on every attempt; a fresh signature, timestamp
   and request id each time);
3. records the answer: a 2xx is ``delivered``; anything else waits
   ``WEBHOOK_RETRY_FIRST_S`` doubled per attempt (at most ``WEBHOOK_RETRY_MAX_S``) as
   ``retrying``, until ``WEBHOOK_MAX_ATTEMPTS`` are used up (``failed``).  A URL the guard
   refuses fails at once: retrying cannot make it allowed.

The clock's :func:`sweep` (every ``WEBHOOK_SWEEP_S``) enqueues what is due: retries, and
deliveries whose first job was lost; an attempt whose worker died mid-way (``sending`` long
past its deadline) counts as failed.
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit, urlunsplit

from flask import Flask
from sqlalchemy import select, update

from arena.core.models import utcnow
from arena.core.queue import get_queue
from arena.core.signing import webhook_secret
from arena.core.storage import get_db
from arena.core.webhook_models import Webhook, WebhookDelivery
from referee.wire.httpbot import BotClient, CallResult, Fault
from referee.wire.netguard import NetPolicy

from .events import enqueue, job_id

USER_AGENT = "BigTwoArena-Webhooks/1"
ANSWER_MAX = 16 * 1024
"""Bytes of a receiver's answer read at most (nobody needs more of it)."""
PERMANENT = frozenset({Fault.BAD_URL, Fault.REFUSED_ADDRESS})
"""Faults no retry can mend: the URL, or the address it names, is refused."""
DUE = ("pending", "retrying")
PENDING_JOBS = {"queued", "started", "deferred", "scheduled"}
SWEEP_BATCH = 500


def policy(app: Flask) -> NetPolicy:
    """The bots' policy: private and loopback addresses only where the operator allows bots
    there (``ALLOW_PRIVATE_BOT_URLS``, the local demo and tests)."""
    return NetPolicy(allow_private=bool(app.config["ALLOW_PRIVATE_BOT_URLS"]))


def deadline_s(app: Flask) -> float:
    return int(app.config["MATCH_CALL_DEADLINE_MS"]) / 1000


def split_url(url: str) -> tuple[str, str]:
    """The webhook URL as a client's base and a path, so that the request target is the URL's
    own (``BotClient`` puts a ``/`` between them): ``http://h/a/hook?x=1`` is
    ``("http://h/a?x=1", "hook")``, requested as ``/a/hook?x=1``."""
    parts = urlsplit(url)
    head, _, last = parts.path.rpartition("/")
    return urlunsplit((parts.scheme, parts.netloc, head, parts.query, "")), last


def send(app: Flask, url: str, payload: dict[str, object], secret: str) -> CallResult:
    """One signed POST of ``payload`` to ``url`` (workers only)."""
    base, path = split_url(url)
    with BotClient(base, secrets=(secret.encode("ascii"),), legacy_v1=False,
                   policy=policy(app), max_body=ANSWER_MAX, error_body_max=0,
                   user_agent=USER_AGENT, pool_maxsize=1) as client:
        return client.call(path, payload, deadline_s(app))


def delivered(result: CallResult) -> bool:
    """A 2xx in time is delivered, whatever its body (a receiver owes us no JSON)."""
    return (result.status is not None and 200 <= result.status < 300
            and result.fault is not Fault.TIMEOUT)


def retry_wait_s(app: Flask, attempts: int) -> float:
    """The wait after the ``attempts``-th failed attempt: doubling from the first."""
    cfg = app.config
    first, cap = float(cfg["WEBHOOK_RETRY_FIRST_S"]), float(cfg["WEBHOOK_RETRY_MAX_S"])
    return min(cap, first * float(2 ** min(max(attempts - 1, 0), 40)))


def problem(result: CallResult) -> str:
    if result.fault is Fault.HTTP_STATUS:
        return f"answered HTTP {result.status}"
    return f"{result.fault}: {result.detail}"[:300]


def record(app: Flask, d: WebhookDelivery, result: CallResult, now: dt.datetime) -> None:
    """What an attempt's answer makes of the delivery (see the module docstring)."""
    d.response_status = result.status
    d.latency_ms = round(result.latency_s * 1000)
    if delivered(result):
        d.state, d.delivered_at, d.error, d.next_attempt_at = "delivered", now, "", None
        return
    d.error = problem(result)
    if result.fault in PERMANENT or d.attempts >= int(app.config["WEBHOOK_MAX_ATTEMPTS"]):
        d.state, d.next_attempt_at = "failed", None
        return
    d.state = "retrying"
    d.next_attempt_at = now + dt.timedelta(seconds=retry_wait_s(app, d.attempts))


def claim(app: Flask, delivery_id: int, attempt: int) -> tuple[str, dict[str, object], str] | str:
    """Take the delivery for attempt number ``attempt``: (url, payload, secret), or why not."""
    now = utcnow()
    with get_db(app).begin() as s:
        d = s.get(WebhookDelivery, delivery_id, with_for_update=True)
        if d is None:
            return "no such delivery"
        if d.state not in DUE or d.attempts != attempt - 1:
            return f"not this attempt ({d.state}, {d.attempts} made)"
        if d.next_attempt_at is not None and d.next_attempt_at > now:
            return "not due yet"
        hook = s.get(Webhook, d.webhook_id)
        if hook is None or hook.deleted_at is not None:
            d.state, d.next_attempt_at = "cancelled", None
            return "cancelled: the webhook was deleted"
        d.state, d.attempts, d.last_attempt_at, d.next_attempt_at = "sending", attempt, now, None
        return hook.url, dict(d.payload), webhook_secret(app, hook.id, hook.secret_generation)


def attempt(app: Flask, delivery_id: int, number: int) -> str:
    """The body of :func:`arena.jobs.bodies.deliver_webhook`: one attempt, recorded."""
    claimed = claim(app, delivery_id, number)
    if isinstance(claimed, str):
        return claimed
    url, payload, secret = claimed
    result = send(app, url, payload, secret)
    with get_db(app).begin() as s:
        d = s.get(WebhookDelivery, delivery_id, with_for_update=True)
        if d is None or d.state != "sending" or d.attempts != number:
            return "superseded"
        record(app, d, result, utcnow())
        return d.state


def _recover_lost(app: Flask, now: dt.datetime) -> None:
    """Attempts whose worker died mid-way (``sending`` long past the deadline) count as
    failed: retried, or failed for good when they were the last."""
    stale = now - dt.timedelta(seconds=deadline_s(app) + 60)
    last = int(app.config["WEBHOOK_MAX_ATTEMPTS"])
    lost = (WebhookDelivery.state == "sending", WebhookDelivery.last_attempt_at < stale)
    with get_db(app).begin() as s:
        s.execute(update(WebhookDelivery).where(*lost, WebhookDelivery.attempts >= last)
                  .values(state="failed", error="the worker sending it was lost"))
        s.execute(update(WebhookDelivery).where(*lost, WebhookDelivery.attempts < last)
                  .values(state="retrying", next_attempt_at=now,
                          error="the worker sending it was lost"))


def sweep(app: Flask) -> list[int]:
    """Enqueue every delivery whose next attempt is due and not on the queue already;
    returns their ids.  Run by the clock."""
    now = utcnow()
    _recover_lost(app, now)
    with get_db(app).begin() as s:
        rows = s.execute(select(WebhookDelivery.id, WebhookDelivery.attempts)
                         .where(WebhookDelivery.state.in_(DUE),
                                WebhookDelivery.next_attempt_at <= now)
                         .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
                         .limit(SWEEP_BATCH)).all()
    q = get_queue(app)
    sent = []
    for delivery_id, made in rows:
        if q.job_status(job_id(delivery_id, made + 1)) in PENDING_JOBS:
            continue
        if enqueue(app, delivery_id, made + 1):
            sent.append(delivery_id)
    return sent


__all__ = ["attempt", "claim", "delivered", "policy", "record", "retry_wait_s", "send",
           "split_url", "sweep"]
