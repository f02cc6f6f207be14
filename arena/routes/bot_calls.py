"""A bot's last calls, for its owner only: the page, signing in and out, and the JSON.

Part of the ``bots`` blueprint (endpoint names ``bots.bot_calls``, ...); the record itself is
:mod:`arena.bots.calls`, the owner's sign-in on a browser :mod:`arena.web.owners`.

* ``GET /bots/<id>/calls``: the page, for a browser signed in as the owner (anyone else gets
  the bot page's sign-in form and a 403);
* ``POST /bots/<id>/owner``: sign in with the owner token (form, CSRF-checked), then the page;
* ``POST /bots/<id>/owner/sign-out``: forget it on this browser;
* ``GET /api/bots/<id>/calls?limit=N``: the same calls as JSON, for the owner token only
  or an account token of the account that owns the bot with the scope ``bots:read``
  (``Authorization: Bearer``; not even the operator's token: the page and the endpoint show
  what the bot said, which is its owner's business).  A browser signed in as that account
  sees the page without the owner token.

Nothing here is cached (``Cache-Control: no-store``): a shared cache must never hand one
owner's calls to anyone else.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from flask import Response, jsonify, redirect, render_template, request, url_for
from redis.exceptions import RedisError
from werkzeug.wrappers import Response as WerkzeugResponse

from arena.bots.calls import last_calls
from arena.core.jsontext import compact_json, indented_json
from arena.core.models import Bot
from arena.core.security import token_matches
from arena.core.storage import session
from arena.web import owners
from arena.web.errors import ApiError
from arena.web.limits import limited
from arena.web.openapi import operation, page
from arena.web.shapes import from_query
from arena.web.shapes import responses as out
from arena.web.shapes.requests import CallsQuery

from .bots import bot_page, bp
from .plumbing import (
    FORM_EXPIRED,
    READ,
    app_object,
    browser_owns,
    csrf_ok,
    get_bot,
    page_not_found,
    require_owner,
)

SIGN_IN_FIRST = "Sign in with the bot's owner token to see its last calls."


def _live_bot(bot_id: int) -> Bot | None:
    bot = session().get(Bot, bot_id)
    return None if bot is None or bot.deleted_at is not None else bot


def _no_store(resp: Response) -> Response:
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _readable(call: dict[str, Any]) -> dict[str, Any]:
    """A call as the page shows it: the request indented for reading (the text autoescaped
    by the template, so a name holding ``<script>`` shows as typed) and its size as sent."""
    body = call["request"]
    if body is None:
        return {**call, "request_text": None, "request_bytes": 0}
    return {**call, "request_text": indented_json(body),
            "request_bytes": len(compact_json(body))}


@bp.get("/bots/<id:bot_id>/calls")
@page("The bot's last calls, for a browser signed in as its owner: exact requests, raw "
      "answers, latency, verdicts (never cached)",
      errors={403: "the bot page, asking to sign in as the owner", 404: "no such bot"})
def bot_calls(bot_id: int) -> tuple[str, int] | str | Response:
    bot = _live_bot(bot_id)
    if bot is None:
        return page_not_found(f"bot {bot_id}")
    if not browser_owns(bot):
        return bot_page(bot_id, owner_errors=[SIGN_IN_FIRST], status=403)
    app = app_object()
    unavailable = False
    try:
        calls = [_readable(c) for c in last_calls(app, session(), bot.id)]
    except RedisError:
        calls, unavailable = [], True
    verdicts = Counter(c["verdict"] for c in calls)
    return _no_store(Response(render_template(
        "bot_calls.html", bot=bot, calls=calls, unavailable=unavailable,
        verdicts=sorted(verdicts.items(), key=lambda x: (x[0] != "ok", x[0])),
        kept=int(app.config["BOT_CALLS_KEPT"]),
        answer_max=int(app.config["BOT_CALLS_ANSWER_MAX"]),
        ttl_days=round(float(app.config["BOT_CALLS_TTL_S"]) / 86400))))


@bp.post("/bots/<id:bot_id>/owner")
@limited("sign_in")
@page("Sign in as the bot's owner on this browser (form: owner_token, csrf_token)",
      answers={303: (None, "signed in: to the bot's calls")},
      errors={403: "the bot page, with the error", 404: "no such bot"})
def bot_owner_sign_in(bot_id: int) -> tuple[str, int] | str | WerkzeugResponse:
    bot = _live_bot(bot_id)
    if bot is None:
        return page_not_found(f"bot {bot_id}")
    if not csrf_ok():
        return bot_page(bot_id, owner_errors=[FORM_EXPIRED], status=403)
    if not token_matches(request.form.get("owner_token", "").strip(), bot.token_hash):
        return bot_page(bot_id, owner_errors=["Owner token: wrong or missing."], status=403)
    owners.sign_in(bot)
    return redirect(url_for("bots.bot_calls", bot_id=bot.id), 303)


@bp.post("/bots/<id:bot_id>/owner/sign-out")
@limited("sign_in")
@page("Sign out as the bot's owner on this browser (form: csrf_token)",
      answers={303: (None, "signed out: to the bot page")},
      errors={403: "the bot page, with the error", 404: "no such bot"})
def bot_owner_sign_out(bot_id: int) -> tuple[str, int] | str | WerkzeugResponse:
    bot = _live_bot(bot_id)
    if bot is None:
        return page_not_found(f"bot {bot_id}")
    if not csrf_ok():
        return bot_page(bot_id, owner_errors=[FORM_EXPIRED], status=403)
    owners.sign_out(bot)
    return redirect(url_for("bots.bot_page", bot_id=bot.id), 303)


@bp.get("/api/bots/<id:bot_id>/calls")
@operation("The bot's last /move calls (its owner token only, not the operator's): the exact "
           "request, the raw answer, latency and verdict, newest first",
           {200: (out.BotCalls, "the calls")}, query=CallsQuery, auth="owner",
           errors={404: "no such bot", 503: "the record of calls cannot be read (Redis)"})
def bot_calls_json(bot_id: int) -> Response:
    query = from_query(CallsQuery)  # before the token: a malformed query is a 400 for all
    bot = get_bot(bot_id)
    require_owner(bot, READ, admin=False)
    app = app_object()
    kept = int(app.config["BOT_CALLS_KEPT"])
    try:
        calls = last_calls(app, session(), bot.id, query.limit or kept)
    except RedisError:
        raise ApiError(503, "unavailable", "the record of calls cannot be read right now "
                       "(Redis does not answer)") from None
    return _no_store(jsonify({"bot_id": bot.id, "kept": kept, "items": calls}))
