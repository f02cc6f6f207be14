"""Challenges: an owner plays one of its bots now (``POST /api/challenges``, the form at
``/challenges/new`` and on the bot page's owner corner), the challenge's page and JSON
(queue position, then the live match), and a bot's opt-out (``POST /bots/<id>/challenges``,
or ``PATCH /api/bots/<id>`` with ``accepts_challenges``).

The rules, the limits and the share of the workers challenges may hold are
:mod:`arena.play.challenges`; this module only asks who is asking.  The API takes the
challenger's owner token, an account token of its account (``bots:write``) or the
operator's; the form takes a browser signed in as the bot's owner (its account, or its owner
token on the bot page) and a CSRF token, and redirects after the POST to the challenge's page.
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
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload
from werkzeug.wrappers import Response as WerkzeugResponse

from arena.accounts import service as accounts
from arena.accounts import sessions as account_sessions
from arena.core.models import MAX_ID, Bot, Challenge, ChallengeOpponent, utcnow
from arena.core.storage import session
from arena.play import challenges
from arena.web import owners
from arena.web.errors import ApiError
from arena.web.idempotency import idempotent
from arena.web.limits import limited
from arena.web.openapi import operation, page
from arena.web.shapes import responses as out
from arena.web.shapes.requests import NewChallenge
from referee import preset_names

from .bots import bot_page
from .plumbing import (
    FORM_EXPIRED,
    WRITE,
    app_object,
    browser_owns,
    csrf_ok,
    get_bot,
    get_or_404,
    iso,
    page_not_found,
    require_owner,
)

bp = Blueprint("challenges", __name__)

SIGN_IN_TO_CHALLENGE = ("Sign in as the bot's owner (your account, or its owner token on the "
                        "bot page) to challenge with it.")


def _loaded() -> list[Any]:
    return [selectinload(Challenge.bot),
            selectinload(Challenge.opponents).selectinload(ChallengeOpponent.bot),
            selectinload(Challenge.match)]


def challenge_json(s: Session, ch: Challenge) -> dict[str, Any]:
    app = app_object()
    match_url = (url_for("matches.match_page", match_id=ch.match_id)
                 if ch.match_id is not None else None)
    return {
        "id": ch.id,
        "state": challenges.state_of(ch),
        "bot": {"id": ch.bot.id, "name": ch.bot.name},
        "opponents": [{"id": o.bot.id, "name": o.bot.name} for o in ch.opponents],
        "mode": ch.mode,
        "ruleset": ch.ruleset,
        "deals": ch.deals,
        "rated": ch.rated,
        "reason": ch.reason,
        "created_at": iso(ch.created_at),
        "started_at": iso(ch.started_at),
        "queue_position": challenges.queue_position(s, app, ch),
        "slots": {"used": challenges.active(s), "of": challenges.slots(app)},
        "match_id": ch.match_id,
        "match_url": match_url,
        "url": url_for("challenges.challenge_page", challenge_id=ch.id),
    }


def _make(bot: Bot, wanted: challenges.Wanted) -> int:
    """Store the challenge, commit, start it if a slot is free; its id.  Raises
    :class:`arena.play.challenges.RefusedError`."""
    s = session()
    try:
        ch = challenges.create_challenge(s, current_app.config, bot, wanted)
    except challenges.RefusedError:
        s.rollback()
        raise
    challenge_id = ch.id
    s.commit()
    challenges.dispatch(app_object())
    return challenge_id


def _fresh(challenge_id: int) -> Challenge:
    s = session()
    s.expire_all()  # the dispatch committed on a connection of its own
    return get_or_404(Challenge, challenge_id, "challenge", options=_loaded())


# --- JSON ------------------------------------------------------------------------------------


@bp.post("/api/challenges")
@limited("challenges")
@idempotent
@operation("Challenge: play one of your bots now against bots you name, or a random set near "
           "its rating (the owner's token, an account token with bots:write, or the "
           "operator's)", {202: (out.Challenge, "made (Location: its page); its match starts "
                                 "when a challenge slot is free")},
           body=NewChallenge, auth="owner",
           errors={404: "no such bot (challenger or opponent)",
                   409: "the challenger or an opponent cannot play (deleted, benched, paused, "
                        "opted out of challenges), or too few bots to pick from",
                   429: "an owner or target limit (error.code says which; Retry-After)"})
def create() -> Response:
    body = NewChallenge.from_body()
    bot = get_bot(body.bot)
    require_owner(bot, WRITE)
    cfg = current_app.config
    wanted = challenges.Wanted(opponents=body.opponents,
                               ruleset=body.ruleset or str(cfg["MATCH_RULESET"]),
                               deals=body.deals or int(cfg["CHALLENGE_DEALS"]),
                               rated=body.rated)
    try:
        challenge_id = _make(bot, wanted)
    except challenges.RefusedError as exc:
        extra = {} if exc.retry_after is None else {"retry_after": exc.retry_after}
        raise ApiError(exc.status, exc.code, exc.message, **extra) from None
    ch = _fresh(challenge_id)
    resp = jsonify(challenge_json(session(), ch))
    resp.status_code = 202
    resp.headers["Location"] = url_for("challenges.challenge_page", challenge_id=challenge_id)
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.get("/api/challenges/<id:challenge_id>")
@operation("A challenge: waiting (with its place in line), then its match",
           {200: (out.Challenge, "the challenge")}, errors={404: "no such challenge"})
def show(challenge_id: int) -> Response:
    ch = get_or_404(Challenge, challenge_id, "challenge", options=_loaded())
    resp = jsonify(challenge_json(session(), ch))
    resp.headers["Cache-Control"] = "no-store"
    return resp


# --- pages -----------------------------------------------------------------------------------


def _owned_bots(s: Session, chosen: Bot | None) -> list[Bot]:
    """The bots this browser may challenge with: its account's, and the bot named in the
    link when the browser signed in with that bot's owner token."""
    account = account_sessions.current(s)
    bots = list(accounts.bots_of(s, account)) if account is not None else []
    if chosen is not None and chosen not in bots and owners.is_owner(chosen):
        bots.append(chosen)
    return [b for b in bots if b.deleted_at is None]


def _form_id(text: str) -> int | None:
    """A bot id typed in a form, or None (not a number, or beyond every id)."""
    if text.isascii() and text.isdigit() and len(text) < 12 and 1 <= int(text) <= MAX_ID:
        return int(text)
    return None


def _form_page(s: Session, *, form: dict[str, Any], errors: list[str],
               status: int = 200) -> Response:
    chosen_id = _form_id(str(form.get("bot", "")))
    chosen = None if chosen_id is None else s.get(Bot, chosen_id)
    resp = Response(render_template(
        "challenge_new.html", bots=_owned_bots(s, chosen), form=form, errors=errors,
        presets=preset_names(), max_deals=int(current_app.config["CHALLENGE_MAX_DEALS"])),
        status=status)
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _opponent_ids(s: Session, text: str) -> list[int] | None:
    """The opponents a form names (ids or names, separated by commas or spaces); None when
    it names none (a random set near the rating)."""
    words = [w for w in text.replace(",", " ").split() if w]
    if not words:
        return None
    ids = []
    for w in words:
        if w.isascii() and w.isdigit():
            found_id = _form_id(w)
            if found_id is None:
                raise challenges.RefusedError(404, "opponent_not_found", f"no bot {w}")
            ids.append(found_id)
            continue
        found = s.scalar(select(Bot.id).where(Bot.name == w, Bot.deleted_at.is_(None)))
        if found is None:
            raise challenges.RefusedError(404, "opponent_not_found", f"no bot called {w!r}")
        ids.append(found)
    return ids


def _wanted_from_form(s: Session, form: dict[str, Any]) -> challenges.Wanted:
    cfg = current_app.config
    deals_text = str(form["deals"]).strip()
    if deals_text and not (deals_text.isascii() and deals_text.isdigit() and
                           len(deals_text) < 4):
        raise challenges.RefusedError(400, "out_of_range", "deals must be a whole number between 1 "
                                      f"and {int(cfg['CHALLENGE_MAX_DEALS'])}")
    return challenges.Wanted(opponents=_opponent_ids(s, str(form["opponents"])),
                             ruleset=str(form["ruleset"] or cfg["MATCH_RULESET"]),
                             deals=int(deals_text) if deals_text else int(cfg["CHALLENGE_DEALS"]),
                             rated=bool(form["rated"]))


@bp.route("/challenges/new", methods=["GET", "POST"])
@limited("challenges", methods=("POST",))
@page("Challenge with one of your bots (form: bot, opponents (ids or names; empty: a random "
      "set near its rating), ruleset, deals, rated, csrf_token)",
      answers={200: ("text/html", "the form"), 303: (None, "made: to the challenge's page")},
      errors={400: "the form again, with what is wrong",
              403: "the form again: not signed in as the bot's owner",
              404: "the form again: no such bot", 409: "the form again: a bot cannot play",
              429: "the form again: a limit"})
def challenge_new() -> Response | WerkzeugResponse:
    s = session()
    if request.method == "GET":
        return _form_page(s, form={"bot": request.args.get("bot", ""), "rated": ""},
                          errors=[])
    form = {k: request.form.get(k, "").strip() for k in ("bot", "opponents", "ruleset",
                                                          "deals", "rated")}
    if not csrf_ok():
        return _form_page(s, form=form, errors=[FORM_EXPIRED], status=403)
    bot_id = _form_id(form["bot"])
    bot = None if bot_id is None else s.get(Bot, bot_id)
    if bot is None or bot.deleted_at is not None:
        return _form_page(s, form=form, errors=["Bot: choose one of your bots."], status=404)
    if not browser_owns(bot):
        return _form_page(s, form=form, errors=[SIGN_IN_TO_CHALLENGE], status=403)
    try:
        challenge_id = _make(bot, _wanted_from_form(s, form))
    except challenges.RefusedError as exc:
        s.rollback()
        return _form_page(s, form=form, errors=[f"{exc.message}."], status=exc.status)
    return redirect(url_for("challenges.challenge_page", challenge_id=challenge_id), 303)


@bp.get("/challenges/<id:challenge_id>")
@page("A challenge: its place in line while it waits, then its match (live while it plays)",
      errors={404: "no such challenge"})
def challenge_page(challenge_id: int) -> Response:
    s = session()
    ch = s.get(Challenge, challenge_id, options=_loaded())
    if ch is None:
        return page_not_found(f"challenge {challenge_id}")
    resp = Response(render_template("challenge.html", ch=ch, c=challenge_json(s, ch)))
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.post("/bots/<id:bot_id>/challenges")
@limited("bot_owner")
@page("Opt the bot out of challenges or back in (its owner, signed in on this browser; form: "
      "accept = 0 or 1, csrf_token)", answers={303: (None, "changed: to the bot page")},
      errors={403: "the bot page, with the error", 404: "no such bot"})
def bot_challenges(bot_id: int) -> tuple[str, int] | str | Response | WerkzeugResponse:
    s = session()
    bot = s.get(Bot, bot_id)
    if bot is None or bot.deleted_at is not None:
        return page_not_found(f"bot {bot_id}")
    if not csrf_ok():
        return bot_page(bot_id, check_errors=[FORM_EXPIRED], status=403)
    if not browser_owns(bot):
        return bot_page(bot_id, check_errors=[SIGN_IN_TO_CHALLENGE], status=403)
    accept = request.form.get("accept", "") == "1"
    if accept != bot.accepts_challenges:
        bot.accepts_challenges = accept
        bot.updated_at = utcnow()
        s.commit()
    return redirect(url_for("bots.bot_page", bot_id=bot_id, _anchor="owner"), 303)

