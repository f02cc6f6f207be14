"""Owners' webhooks (issue 21 §4): the JSON API (``/api/webhooks...``) and the account's page
with the delivery log (``/account/webhooks``).

The rules are :mod:`arena.notify.webhooks`; the views only say who asks.  The API takes an
account token (``bots:read`` to read, ``bots:write`` to change: webhooks are about the
account's bots) or a bot's owner token with the bot's id.  A webhook that is not the asker's
is "not found" however it is asked for, so nobody learns another owner's URLs, or that they
exist.  No view ever calls a webhook: "send test event" writes a delivery, and a worker sends
it (:mod:`arena.notify.delivery`).
"""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    Response,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.wrappers import Response as WerkzeugResponse

from arena.accounts import service as accounts
from arena.accounts import sessions
from arena.core.models import MAX_ID, Account
from arena.core.security import bearer_token, token_matches
from arena.core.storage import session
from arena.core.webhook_models import EVENTS, Webhook, WebhookDelivery
from arena.notify import webhooks
from arena.notify.webhooks import Owner
from arena.web import idempotency, welcome
from arena.web.errors import ApiError, error_response
from arena.web.idempotency import idempotent
from arena.web.limits import limited
from arena.web.openapi import operation, page
from arena.web.shapes import from_query
from arena.web.shapes import responses as out
from arena.web.shapes.requests import DeliveriesQuery, Empty, NewWebhook, WebhookOwnerQuery

from .plumbing import FORM_EXPIRED, READ, WRITE, app_object, csrf_ok, get_bot, iso

WEBHOOK_SECRET = "webhook-secret"
"""What :mod:`arena.web.welcome` keeps a new webhook's secret under, for the page after the form."""

bp = Blueprint("webhooks", __name__)

LOG_LINES = 20
"""Deliveries shown per webhook on the page (the API pages through all of them)."""


# --- JSON ------------------------------------------------------------------------------------


def webhook_json(hook: Webhook, counts: dict[str, int] | None = None) -> dict[str, Any]:
    return {"id": hook.id, "url": hook.url, "events": sorted(hook.event_set),
            "account_id": hook.account_id, "bot_id": hook.bot_id,
            "created_at": iso(hook.created_at), "deliveries": counts or {}}


def delivery_json(d: WebhookDelivery) -> dict[str, Any]:
    return {"id": d.id, "event": d.event, "event_id": d.event_id, "state": d.state,
            "attempts": d.attempts,
            "max_attempts": int(current_app.config["WEBHOOK_MAX_ATTEMPTS"]),
            "created_at": iso(d.created_at), "last_attempt_at": iso(d.last_attempt_at),
            "next_attempt_at": iso(d.next_attempt_at), "delivered_at": iso(d.delivered_at),
            "response_status": d.response_status, "latency_ms": d.latency_ms,
            "error": d.error, "payload": d.payload}


def _no_store(resp: Response) -> Response:
    resp.headers["Cache-Control"] = "no-store"
    return resp


def api_owner(scope: str, bot_id: int | None) -> Owner:
    """Who the bearer token is: an account (its token carrying ``scope``), or the owner of bot
    ``bot_id``.  401 without a token or with an unknown one, 403 for a bot token that is not
    ``bot_id``'s or an account token without ``scope``."""
    token = bearer_token()
    if token is None:
        raise ApiError(401, "unauthorized", "send an account token, or a bot's owner token "
                       "with bot_id: Authorization: Bearer <token>")
    if accounts.looks_like_account_token(token):
        use = accounts.use_token(session(), token)
        if use is None:
            raise ApiError(401, "unauthorized", "this account token is unknown or revoked")
        if not use.allows(scope):
            raise ApiError(403, "forbidden", f"this account token lacks the scope {scope}")
        return Owner(account_id=use.account.id)
    if bot_id is None:
        raise ApiError(400, "bot_id_missing", "with a bot's owner token, name the bot: bot_id")
    bot = get_bot(bot_id)
    if not token_matches(token, bot.token_hash):
        raise ApiError(403, "forbidden", "this token does not own this bot")
    return Owner(bot_id=bot.id)


def owned_hook(webhook_id: int, scope: str) -> tuple[Owner, Webhook]:
    """The asker's webhook ``webhook_id``; anyone else's is a 404, as a missing one."""
    token = bearer_token()
    if token is None:
        raise ApiError(401, "unauthorized", "send the webhook owner's token: "
                       "Authorization: Bearer <token>")
    s = session()
    owner: Owner | None = None
    if accounts.looks_like_account_token(token):
        owner = api_owner(scope, None)
    else:
        hook = s.get(Webhook, webhook_id)
        if hook is not None and hook.account_id is None and hook.bot_id is not None:
            bot = get_bot(hook.bot_id, include_deleted=True)
            if token_matches(token, bot.token_hash):
                owner = Owner(bot_id=bot.id)
    found = webhooks.find(s, owner, webhook_id) if owner is not None else None
    if owner is None or found is None:
        raise ApiError(404, "not_found", f"no webhook {webhook_id}")
    return owner, found


@bp.post("/api/webhooks")
@limited("bot_owner")
@idempotent(secrets=("secret",))
@operation("Register a webhook: the owner's events are POSTed to it, signed (the secret is "
           "shown once)", {201: (out.WebhookCreated, "registered")}, body=NewWebhook,
           auth="owner", errors={409: "WEBHOOKS_PER_OWNER reached",
                                 422: "URL refused by the SSRF guard"},
           description="An account token (bots:write) makes a webhook that hears about every "
                       "bot of the account; a bot's owner token with bot_id, one that hears "
                       "about that bot.  Payload and verification: docs/notifications.md.")
def create_webhook() -> Response:
    body = NewWebhook.from_body()
    owner = api_owner(WRITE, body.bot_id)
    app = app_object()
    url = body.url.strip()
    problem = webhooks.url_problem(app, url)
    if problem:
        raise ApiError(422, "url_refused", problem)
    problem = webhooks.events_problem(body.events or [])
    if problem:
        raise ApiError(400, "bad_events", problem)
    s = session()
    try:
        hook, secret = webhooks.create(app, s, owner, url, body.events)
    except webhooks.TooManyWebhooksError as exc:
        s.rollback()
        raise ApiError(409, "too_many_webhooks", str(exc)) from None
    resp = jsonify({**webhook_json(hook), "secret": secret})
    resp.status_code = 201
    resp.headers["Location"] = url_for("webhooks.webhook_deliveries", webhook_id=hook.id)
    return idempotency.commit(s, _no_store(resp))  # the webhook and its answer, together


@bp.get("/api/webhooks")
@limited("pages")
@operation("The asker's webhooks (an account token with bots:read, or a bot's owner token "
           "and bot_id)", {200: (out.Webhooks, "the webhooks")}, query=WebhookOwnerQuery,
           auth="owner")
def list_webhooks() -> Response:
    query = from_query(WebhookOwnerQuery)
    owner = api_owner(READ, query.bot_id)
    s = session()
    hooks = webhooks.owned(s, owner)
    counts = webhooks.delivery_counts(s, [h.id for h in hooks])
    return _no_store(jsonify({"items": [webhook_json(h, counts[h.id]) for h in hooks]}))


@bp.delete("/api/webhooks/<id:webhook_id>")
@limited("bot_owner")
@operation("Delete a webhook (what it has not been sent yet is cancelled)",
           {204: (None, "deleted")}, auth="owner", errors={404: "no such webhook of yours"})
def delete_webhook(webhook_id: int) -> tuple[str, int]:
    _, hook = owned_hook(webhook_id, WRITE)
    webhooks.delete(hook)
    session().commit()
    return "", 204


@bp.post("/api/webhooks/<id:webhook_id>/test")
@limited("webhook_test")
@idempotent
@operation("Send a test event (webhook.test) to the webhook: a worker sends it",
           {202: (out.WebhookDelivery, "queued: poll the deliveries")}, body=Empty,
           body_required=False, auth="owner", errors={404: "no such webhook of yours"})
def test_webhook(webhook_id: int) -> Response:
    Empty.from_body(optional=True)
    owner, hook = owned_hook(webhook_id, WRITE)
    s = session()
    row = webhooks.send_test(app_object(), s, owner, hook)
    resp = jsonify(delivery_json(row))
    resp.status_code = 202
    # The delivery and its answer in one commit; the job is enqueued after it
    # (arena.notify.events).
    return idempotency.commit(s, _no_store(resp))


@bp.get("/api/webhooks/<id:webhook_id>/deliveries")
@limited("pages")
@operation("The webhook's delivery log, newest first: state, attempts, the answer's status, "
           "latency, the next retry", {200: (out.WebhookDeliveries, "one page")},
           query=DeliveriesQuery, auth="owner", errors={404: "no such webhook of yours"})
def webhook_deliveries(webhook_id: int) -> Response:
    query = from_query(DeliveriesQuery)
    _, hook = owned_hook(webhook_id, READ)
    rows = webhooks.deliveries(session(), hook, limit=query.limit + 1, before=query.before)
    more = len(rows) > query.limit
    rows = rows[:query.limit]
    return _no_store(jsonify({"webhook_id": hook.id, "items": [delivery_json(d) for d in rows],
                              "next_before": rows[-1].id if more and rows else None}))


# --- the account's page ----------------------------------------------------------------------


def _to_sign_in() -> WerkzeugResponse:
    return redirect(url_for("accounts.sign_in"), 303)


def _page(account: Account, *, status: int = 200, errors: list[str] | None = None,
          new_secret: tuple[int, str] | None = None, form: dict[str, str] | None = None,
          note: str = "") -> Response:
    s = session()
    owner = Owner(account_id=account.id)
    hooks = webhooks.owned(s, owner)
    logs = webhooks.newest_deliveries(s, [h.id for h in hooks], LOG_LINES)
    resp = Response(render_template(
        "webhooks.html", account=account, hooks=hooks, logs=logs, events=EVENTS,
        subscribable=webhooks.SUBSCRIBABLE, errors=errors or [], new_secret=new_secret,
        form=form or {}, note=note, max_attempts=int(current_app.config["WEBHOOK_MAX_ATTEMPTS"]),
        cap=int(current_app.config["WEBHOOKS_PER_OWNER"])), status=status)
    return _no_store(resp)


@bp.get("/account/webhooks")
@page("Webhooks of the signed-in account: register one, send a test event, and each one's "
      "delivery log (status, attempts, response code, latency, next retry)",
      answers={200: ("text/html", "the page"), 303: (None, "not signed in: to the sign-in")})
def webhooks_page() -> Response | WerkzeugResponse:
    account = sessions.current(session())
    if account is None:
        return _to_sign_in()
    sent = request.args.get("sent", "")
    created = request.args.get("created", "")
    if created.isascii() and created.isdigit() and 0 < int(created) <= MAX_ID:
        secret = welcome.take_once(app_object(), WEBHOOK_SECRET, int(created))
        if secret is not None:
            return _page(account, new_secret=(int(created), secret))
        return _page(account, note=f"Webhook {created} is registered; its secret was shown "
                     "once, when it was created.")
    return _page(account, note="Test event queued: a worker sends it in a moment; reload to "
                 "see how it went." if sent else "")


@bp.post("/account/webhooks")
@limited("bot_owner")
@page("Register a webhook for the account (form: url, event (repeated), csrf_token): its "
      "secret is shown once", answers={200: ("text/html", "the page, with the secret shown "
                                                          "once (when Redis cannot keep it)"),
                                       303: (None, "registered: to the page, which shows the "
                                                   "secret once; not signed in: to the sign-in")},
      errors={400: "the page, with what is wrong", 403: "the form did not come from this site"})
def webhooks_create() -> Response | WerkzeugResponse:
    s = session()
    account = sessions.current(s)
    if account is None:
        return _to_sign_in()
    url = request.form.get("url", "").strip()
    chosen = request.form.getlist("event")
    if not csrf_ok():
        return _page(account, status=403, errors=[FORM_EXPIRED], form={"url": url})
    app = app_object()
    errors = [f"{label}: {problem}." for label, problem in (
        ("URL", webhooks.url_problem(app, url)), ("Events", webhooks.events_problem(chosen)))
        if problem]
    if not errors:
        try:
            hook, secret = webhooks.create(app, s, Owner(account_id=account.id), url, chosen)
        except webhooks.TooManyWebhooksError as exc:
            s.rollback()
            errors.append(f"Webhooks: {exc}.")
    if errors:
        return _page(account, status=400, errors=errors, form={"url": url})
    s.commit()
    # Redirect after POST: a reload must not register the webhook again.  The secret waits
    # for that one page (arena.web.welcome), never in a URL or the cookie.
    if welcome.keep_once(app, WEBHOOK_SECRET, hook.id, secret):
        return redirect(url_for("webhooks.webhooks_page", created=hook.id)
                        + f"#webhook-{hook.id}", 303)
    return _page(account, new_secret=(hook.id, secret))


def _form_hook(webhook_id: int) -> tuple[Account, Webhook] | Response | WerkzeugResponse:
    """The signed-in account and its webhook ``webhook_id`` for a form, or the answer to give
    instead: the sign-in page when signed out, 403 for a form from elsewhere, 404 for a
    webhook that is not the account's."""
    s = session()
    account = sessions.current(s)
    if account is None:
        return _to_sign_in()
    if not csrf_ok():
        return _page(account, status=403, errors=[FORM_EXPIRED])
    hook = webhooks.find(s, Owner(account_id=account.id), webhook_id)
    if hook is None:
        return error_response(404, "not_found", f"no webhook {webhook_id}",
                              page_message=f"there is no webhook {webhook_id}")
    return account, hook


@bp.post("/account/webhooks/<id:webhook_id>/test")
@limited("webhook_test")
@page("Send a test event to one of the account's webhooks (form: csrf_token)",
      answers={303: (None, "queued: back to the page")},
      errors={403: "the form did not come from this site", 404: "no such webhook of yours"})
def webhooks_test(webhook_id: int) -> Response | WerkzeugResponse:
    found = _form_hook(webhook_id)
    if not isinstance(found, tuple):
        return found
    account, hook = found
    s = session()
    webhooks.send_test(app_object(), s, Owner(account_id=account.id), hook)
    s.commit()
    return redirect(url_for("webhooks.webhooks_page", sent=hook.id) + f"#webhook-{hook.id}", 303)


@bp.post("/account/webhooks/<id:webhook_id>/delete")
@limited("bot_owner")
@page("Delete one of the account's webhooks (form: csrf_token)",
      answers={303: (None, "deleted: back to the page")},
      errors={403: "the form did not come from this site", 404: "no such webhook of yours"})
def webhooks_delete(webhook_id: int) -> Response | WerkzeugResponse:
    found = _form_hook(webhook_id)
    if not isinstance(found, tuple):
        return found
    _, hook = found
    webhooks.delete(hook)
    session().commit()
    return redirect(url_for("webhooks.webhooks_page"), 303)
