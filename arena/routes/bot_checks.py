""""Check now": the owner asks, from the bot page, for a health check of the bot.

Part of the ``bots`` blueprint (endpoint ``bots.bot_check_now``).  ``POST /bots/<id>/check``
takes a browser signed in as the bot's owner (:mod:`arena.web.owners`) and a CSRF token; it
writes a queued check and enqueues the real check job (:func:`arena.jobs.bodies.check_bot`,
as ``POST /api/bots/<id>/check`` does), then sends the browser back to the bot page (303),
which shows the check running.  It is limited like a URL change (the ``url_change`` class:
every check is a call to the bot) and per bot (:func:`arena.bots.bench.recheck_wait_s`).
A check that passes returns an unhealthy bot once its bench is over (:mod:`arena.bots.bench`).
"""

from __future__ import annotations

from flask import Response, redirect, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from arena.bots import service as bot_service
from arena.bots.bench import in_words, recheck_wait_s
from arena.core.models import Bot
from arena.core.storage import session
from arena.web import owners
from arena.web.limits import limited
from arena.web.openapi import page

from .bots import bot_page, bp
from .plumbing import FORM_EXPIRED, app_object, csrf_ok, page_not_found

SIGN_IN_TO_CHECK = "Sign in with the bot's owner token to ask for a check."


@bp.post("/bots/<id:bot_id>/check")
@limited("url_change")  # each check is an outbound call to the bot: limited like a URL change
@limited("bot_owner")
@page("Check now (the owner, signed in on this browser; form: csrf_token): a health check is "
      "queued, then the bot page", answers={303: (None, "queued: to the bot page")},
      errors={403: "the bot page, with the error", 404: "no such bot",
              409: "the bot page: a check was asked for moments ago"})
def bot_check_now(bot_id: int) -> tuple[str, int] | str | Response | WerkzeugResponse:
    s = session()
    bot = s.get(Bot, bot_id)
    if bot is None or bot.deleted_at is not None:
        return page_not_found(f"bot {bot_id}")
    if not csrf_ok():
        return bot_page(bot_id, check_errors=[FORM_EXPIRED], status=403)
    if not owners.is_owner(bot):
        return bot_page(bot_id, check_errors=[SIGN_IN_TO_CHECK], status=403)
    app = app_object()
    wait = recheck_wait_s(app, s, bot)
    if wait > 0:
        return bot_page(bot_id, check_errors=[
            f"A check was asked for moments ago; ask again {in_words(wait)}."], status=409)
    check = bot_service.recheck(s, bot)
    bot_id, check_id = bot.id, check.id
    s.commit()  # the row first: a worker always finds it (a lost job: the sweep requeues it)
    bot_service.enqueue_check(app, bot_id, check_id)
    return redirect(url_for("bots.bot_page", bot_id=bot_id), 303)
