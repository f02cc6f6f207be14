"""Owner accounts: signing up, in and out, "my bots", adopting a bot, API tokens, the
operator's reset link; and the account's JSON (``/api/account/...``).

The rules are :mod:`arena.accounts.service`, the browser's sign-in
:mod:`arena.accounts.sessions`.  Every form is CSRF-checked (:func:`.plumbing.csrf_ok`), as
everywhere on the site.  Pages that show an account's own things are never cached
(``Cache-Control: no-store``; the shared response cache never answers a signed-in session
anyway), and a new API token is shown once, in the answer to the form that made it.

An account sees and changes only its own bots: "my bots" lists ``Bot.account_id`` = its id,
and an API token acts through :func:`.plumbing.require_owner` like the bot's owner token,
for the bots its account owns and within its scopes.
"""

from __future__ import annotations

from dataclasses import dataclass
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
from sqlalchemy import select, union_all
from werkzeug.wrappers import Response as WerkzeugResponse

from arena.accounts import service as accounts
from arena.accounts import sessions
from arena.core.models import MAX_ID, Account, Bot, Match, MatchResult, MatchSeat, Rating
from arena.core.security import bearer_token
from arena.core.storage import session
from arena.web.errors import ApiError, error_response
from arena.web.limits import client_key, limited
from arena.web.openapi import operation, page
from arena.web.shapes import responses as out
from arena.web.shapes.requests import AdoptBot
from referee.runner.faults import plain_items

from .bots import bot_json, bots_json
from .plumbing import FORM_EXPIRED, READ, WRITE, app_object, csrf_ok, get_bot
from .ratings import DEFAULT_FAMILY

bp = Blueprint("accounts", __name__)

RECENT = 5
"""Recent matches shown per bot on "my bots"."""
WRONG = "Username or password: wrong."


def _no_store(body: str, status: int = 200) -> Response:
    resp = Response(body, status=status)
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _to_sign_in() -> WerkzeugResponse:
    return redirect(url_for("accounts.sign_in"), 303)


# --- signing up, in and out ------------------------------------------------------------------


@bp.route("/account/sign-up", methods=["GET", "POST"])
@limited("account_sign_up", methods=("POST",))
@page("Sign up for an owner account (form: username, password, password2, email, "
      "csrf_token)", answers={200: ("text/html", "the form"),
                              303: (None, "signed up and in: to my bots")},
      errors={400: "the form again, with what is wrong"})
def sign_up() -> Response | WerkzeugResponse:
    if request.method == "GET":
        return _no_store(render_template("account_sign_up.html", errors=[], form={}))
    app = app_object()
    form = {"username": request.form.get("username", "").strip(),
            "email": request.form.get("email", "").strip()}
    password = request.form.get("password", "")
    errors: list[str] = []
    if not csrf_ok():
        errors.append(FORM_EXPIRED)
    else:
        for label, problem in (
                ("Username", accounts.username_problem(form["username"])),
                ("Password", accounts.password_problem(app, password, form["username"])),
                ("E-mail", accounts.email_problem(form["email"]))):
            if problem:
                errors.append(f"{label}: {problem}.")
        if not errors and password != request.form.get("password2", ""):
            errors.append("Password: the two passwords differ.")
    s = session()
    if not errors:
        try:
            account = accounts.sign_up(s, app, username=form["username"], password=password,
                                       email=form["email"])
            s.commit()
        except accounts.UsernameTakenError:
            s.rollback()
            errors.append(f"Username: {form['username']!r} is taken.")
    if errors:
        return _no_store(render_template("account_sign_up.html", errors=errors, form=form), 400)
    sessions.sign_in(account)
    return redirect(url_for("accounts.my_bots"), 303)


@bp.route("/account/sign-in", methods=["GET", "POST"])
@limited("account_sign_in", methods=("POST",))
@page("Sign in to an owner account (form: username, password, csrf_token)",
      answers={200: ("text/html", "the form"), 303: (None, "signed in: to my bots")},
      errors={403: "the form again: wrong username or password",
              429: "this address must wait before trying this account again"})
def sign_in() -> Response | WerkzeugResponse:
    if request.method == "GET":
        return _no_store(render_template("account_sign_in.html", errors=[], form={}))
    form = {"username": request.form.get("username", "").strip()}
    password = request.form.get("password", "")
    if not csrf_ok():
        return _no_store(render_template("account_sign_in.html", errors=[FORM_EXPIRED],
                                         form=form), 403)
    s = session()
    try:
        account = accounts.authenticate(s, app_object(), username=form["username"],
                                        password=password, client=client_key())
    except accounts.SignInDelayedError as exc:
        resp = _no_store(render_template(
            "account_sign_in.html", form=form, errors=[
                f"Too many wrong passwords for this account from your address: try again in "
                f"{exc.wait_s} s."]), 429)
        resp.headers["Retry-After"] = str(exc.wait_s)
        return resp
    s.commit()  # the failure counted, or its count cleared
    if account is None:
        return _no_store(render_template("account_sign_in.html", errors=[WRONG], form=form),
                         403)
    sessions.sign_in(account)
    return redirect(url_for("accounts.my_bots"), 303)


@bp.post("/account/sign-out")
@limited("sign_in")
@page("Sign out of the account on this browser (form: csrf_token)",
      answers={303: (None, "signed out: to the home page")},
      errors={403: "the form did not come from this site"})
def sign_out() -> Response | WerkzeugResponse:
    if not csrf_ok():
        return error_response(403, "forbidden", FORM_EXPIRED)
    sessions.sign_out()
    return redirect(url_for("site.home"), 303)


# --- my bots ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecentSeat:
    """One of a bot's newest matches, as "my bots" lists it."""

    match_id: int
    state: str


def _bot_rows(bots: list[Bot]) -> list[dict[str, Any]]:
    """Each bot with its rating in the default family, its :data:`RECENT` newest matches and
    the strikes it took in them: a fixed number of statements however many bots (the newest
    seats of every bot in one statement: per bot, the first :data:`RECENT` entries of the
    ``(bot_id, match_id)`` index, read backwards.  A window function numbering each bot's
    seats read all of them: 62,500 for a busy bot, 0.3-1 s a page).  The seats are read as
    columns, with their match's state and result totals: loaded as objects, each with its
    match, the match's four seats and their bots and its result, they were two thirds of the
    page's time."""
    s = session()
    ids = [b.id for b in bots]
    if not ids:
        return []
    ratings = {r.bot_id: r for r in s.scalars(select(Rating).where(
        Rating.bot_id.in_(ids), Rating.family == DEFAULT_FAMILY))}
    per_bot = [select(MatchSeat.id).where(MatchSeat.bot_id == b)
               .order_by(MatchSeat.match_id.desc()).limit(RECENT).subquery() for b in ids]
    newest = union_all(*(select(q.c.id) for q in per_bot))
    seats = s.execute(
        select(MatchSeat.bot_id, MatchSeat.match_id, MatchSeat.seat, Match.state,
               MatchResult.totals)
        .join(Match, Match.id == MatchSeat.match_id)
        .outerjoin(MatchResult, MatchResult.match_id == MatchSeat.match_id)
        .where(MatchSeat.id.in_(newest))
        .order_by(MatchSeat.bot_id, MatchSeat.match_id.desc())).all()
    by_bot: dict[int, list[RecentSeat]] = {}
    strikes: dict[int, int] = {}
    for bot_id, match_id, seat, state, totals in seats:
        by_bot.setdefault(bot_id, []).append(RecentSeat(match_id, state))
        if state == "finished" and totals is not None:
            strikes[bot_id] = strikes.get(bot_id, 0) + sum(
                1 for st in plain_items(totals.get("strikes", []), "reason")
                if st["seat"] == seat)
    return [{"bot": bot, "rating": ratings.get(bot.id), "seats": by_bot.get(bot.id, []),
             "strikes": strikes.get(bot.id, 0)} for bot in bots]


def _my_bots_page(account: Account, *, status: int = 200, adopt_errors: list[str] | None = None,
                  token_errors: list[str] | None = None,
                  new_token: tuple[str, str] | None = None) -> Response:
    s = session()
    return _no_store(render_template(
        "my_bots.html", account=account, rows=_bot_rows(accounts.bots_of(s, account)),
        tokens=accounts.live_tokens(s, account), scopes=accounts.SCOPES,
        adopt_errors=adopt_errors or [], token_errors=token_errors or [],
        new_token=new_token, recent=RECENT), status)


@bp.get("/account")
@page("My bots: the signed-in account's bots (status, rating, strikes, recent matches), "
      "adopting a bot, API tokens", answers={200: ("text/html", "the page"),
                                             303: (None, "not signed in: to the sign-in")})
def my_bots() -> Response | WerkzeugResponse:
    account = sessions.current(session())
    if account is None:
        return _to_sign_in()
    return _my_bots_page(account)


@bp.post("/account/adopt")
@limited("bot_owner")
@page("Adopt a bot by proving its owner token once (form: bot, owner_token, csrf_token)",
      answers={303: (None, "adopted: to my bots"), 200: ("text/html", "my bots")},
      errors={403: "my bots, with the error"})
def adopt() -> Response | WerkzeugResponse:
    s = session()
    account = sessions.current(s)
    if account is None:
        return _to_sign_in()
    if not csrf_ok():
        return _my_bots_page(account, status=403, adopt_errors=[FORM_EXPIRED])
    named = request.form.get("bot", "").strip()
    bot = None
    if named.isascii() and named.isdigit() and len(named) < 19 and int(named) <= MAX_ID:
        bot = s.get(Bot, int(named))
    if bot is None and named:
        bot = s.scalar(select(Bot).where(Bot.name == named))
    if bot is None or not accounts.adopt(account, bot,
                                         request.form.get("owner_token", "").strip()):
        s.rollback()
        return _my_bots_page(account, status=403, adopt_errors=[
            "Bot or owner token: wrong (give the bot's name or id and the owner token shown "
            "when it was created)."])
    s.commit()
    return redirect(url_for("accounts.my_bots"), 303)


@bp.post("/account/tokens")
@limited("bot_owner")
@page("Make an API token (form: name, scope (repeated), csrf_token): shown once",
      errors={400: "my bots, with what is wrong", 403: "the form did not come from this site"},
      answers={200: ("text/html", "my bots, with the new token shown once"),
               303: (None, "not signed in: to the sign-in")})
def new_token() -> Response | WerkzeugResponse:
    s = session()
    account = sessions.current(s)
    if account is None:
        return _to_sign_in()
    if not csrf_ok():
        return _my_bots_page(account, status=403, token_errors=[FORM_EXPIRED])
    name = request.form.get("name", "").strip()
    scopes = request.form.getlist("scope")
    errors = [f"{label}: {problem}." for label, problem in (
        ("Name", accounts.token_name_problem(name)), ("Scopes", accounts.scopes_problem(scopes)))
        if problem]
    cap = int(current_app.config["ACCOUNT_TOKENS_MAX"])
    if not errors and len(accounts.live_tokens(s, account)) >= cap:
        errors.append(f"Tokens: at most {cap}; revoke one first.")
    if errors:
        return _my_bots_page(account, status=400, token_errors=errors)
    _, plain = accounts.create_token(s, account, name, scopes)
    s.commit()
    return _my_bots_page(account, new_token=(name, plain))


@bp.post("/account/tokens/<id:token_id>/revoke")
@limited("bot_owner")
@page("Revoke one of the account's API tokens (form: csrf_token); it stops working at once",
      answers={303: (None, "revoked: to my bots")},
      errors={403: "my bots, with the error", 404: "no such token of this account"})
def revoke_token(token_id: int) -> Response | WerkzeugResponse:
    s = session()
    account = sessions.current(s)
    if account is None:
        return _to_sign_in()
    if not csrf_ok():
        return _my_bots_page(account, status=403, token_errors=[FORM_EXPIRED])
    if not accounts.revoke_token(s, account, token_id):
        return _my_bots_page(account, status=404, token_errors=["Token: no such token."])
    s.commit()
    return redirect(url_for("accounts.my_bots"), 303)


# --- the operator's reset link ---------------------------------------------------------------


@bp.route("/account/reset", methods=["GET", "POST"])
@limited("account_sign_in", methods=("POST",))
@page("Set a new password with the one-time reset link the operator printed (form: token, "
      "password, password2, csrf_token)",
      answers={200: ("text/html", "the form"), 303: (None, "password set: to my bots")},
      errors={400: "the form again, with what is wrong",
              403: "the link is unknown, used or expired"})
def reset() -> Response | WerkzeugResponse:
    s = session()
    app = app_object()
    token = (request.form if request.method == "POST" else request.args).get("token", "")
    account = accounts.account_for_reset(s, token)
    if account is None:
        return _no_store(render_template("account_reset.html", token="", errors=[
            "This reset link is unknown, used or expired: ask the operator for a new one."]),
            403)
    if request.method == "GET":
        return _no_store(render_template("account_reset.html", token=token, errors=[],
                                         account=account))
    password = request.form.get("password", "")
    errors: list[str] = []
    if not csrf_ok():
        errors.append(FORM_EXPIRED)
    elif problem := accounts.password_problem(app, password, account.username):
        errors.append(f"Password: {problem}.")
    elif password != request.form.get("password2", ""):
        errors.append("Password: the two passwords differ.")
    if errors:
        return _no_store(render_template("account_reset.html", token=token, errors=errors,
                                         account=account), 400)
    accounts.set_password(s, app, account, password)
    s.commit()
    sessions.sign_in(account)
    return redirect(url_for("accounts.my_bots"), 303)


# --- JSON ------------------------------------------------------------------------------------


def _token_use(scope: str) -> accounts.TokenUse:
    token = bearer_token()
    if token is None:
        raise ApiError(401, "unauthorized", "send an account token: Authorization: Bearer "
                       "<token>")
    use = accounts.use_token(session(), token)
    if use is None:
        raise ApiError(401, "unauthorized", "this is not a live account token")
    if not use.allows(scope):
        raise ApiError(403, "forbidden", f"this account token lacks the scope {scope}")
    return use


@bp.get("/api/account/bots")
@operation("The account of the token, and its live bots (an account token with bots:read)",
           {200: (out.AccountBots, "the account's bots")}, auth="owner")
def account_bots() -> Response:
    use = _token_use(READ)
    bots = accounts.bots_of(session(), use.account)
    resp = jsonify({"account": {"id": use.account.id, "username": use.account.username},
                    "scopes": sorted(use.token.scope_set), "items": bots_json(bots)})
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.post("/api/account/bots/<id:bot_id>/adopt")
@limited("bot_owner")
@operation("Put a bot under the token's account by proving its owner token once (an "
           "account token with bots:write)", {200: (out.Bot, "the bot, now the account's")},
           body=AdoptBot, auth="owner", errors={404: "no such bot"})
def adopt_json(bot_id: int) -> Response:
    body = AdoptBot.from_body()  # before the token: a malformed body is a 400 for all
    use = _token_use(WRITE)
    bot = get_bot(bot_id)
    if not accounts.adopt(use.account, bot, body.owner_token.strip()):
        raise ApiError(403, "forbidden", "this is not the bot's owner token")
    session().commit()
    return jsonify(bot_json(bot, private=True))
