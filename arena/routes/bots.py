"""Bots: submitting one (form and JSON), its page, changing, pausing, deleting and
re-checking it, its signing secret, its versions and its health checks.

No view ever calls a bot.  A submitted or changed URL is checked by a job: the answer is 202
with a ``check_url`` to poll (the submission page polls it from ``static/check.js``).  The
owner's token is shown once, at creation; it (or the operator's ``ADMIN_TOKEN``) is the
``Authorization: Bearer`` of every change, and shows the bot's private URL.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import Counter
from typing import Any
from urllib.parse import urlencode

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
from markupsafe import Markup, escape
from sqlalchemy import Integer, Select, bindparam, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response as WerkzeugResponse

from arena.accounts import service as accounts
from arena.accounts import sessions as account_sessions
from arena.bots import service as bot_service
from arena.bots.bench import BENCH, in_words, page_facts, recheck_wait_s
from arena.core import counts
from arena.core.idlists import among_bound
from arena.core.models import Bot, BotVersion, HealthCheck, Rating, utcnow
from arena.core.security import bearer_token, hash_token, is_admin, new_token, token_matches
from arena.core.signing import bot_secret, grace_until, in_grace, rotate
from arena.core.storage import session
from arena.play.matches import BotSeatLine, bot_recent_seats
from arena.play.ratings import rating_series
from arena.web import idempotency, owners, welcome
from arena.web.charts import rating_chart
from arena.web.errors import ApiError
from arena.web.idempotency import idempotent
from arena.web.limits import limited
from arena.web.openapi import HTML, operation, page
from arena.web.pagination import decode_text_cursor, encode_cursor, keyset_args, keyset_page
from arena.web.shapes import from_query
from arena.web.shapes import responses as out
from arena.web.shapes.requests import (
    BotChange,
    BotsQuery,
    CursorPaging,
    Empty,
    NewBot,
    Paging,
    SecretRotation,
)
from referee import preset_names
from referee.runner.faults import plain_items

from .plumbing import (
    FORM_EXPIRED,
    READ,
    WRITE,
    ago_filter,
    app_object,
    bot_link_html,
    browser_owns,
    csrf_ok,
    get_bot,
    human_filter,
    is_owner,
    iso,
    page_not_found,
    paginate,
    rating_html,
    require_owner,
    state_badge_html,
)
from .ratings import DEFAULT_FAMILY, rating_json

bp = Blueprint("bots", __name__)

NOT_LOADED: Any = object()
"""``bot_json(check=...)`` default: the bot's admission check is looked up on its own."""


# --- JSON renderings -------------------------------------------------------------------------


CHECK_COLUMNS = (HealthCheck.id, HealthCheck.bot_id, HealthCheck.purpose, HealthCheck.state,
                 HealthCheck.ok, HealthCheck.reason, HealthCheck.describe_ms,
                 HealthCheck.move_ms, HealthCheck.at, HealthCheck.finished_at)
"""What :func:`check_json` reads of a check: lists select these, not whole rows."""


def admission_checks(bots: list[Bot]) -> dict[int, Any]:
    """The newest admission check of each bot of a list (:data:`CHECK_COLUMNS`, read as
    :func:`check_json` reads a check), in one statement (not one per bot)."""
    ids = [b.id for b in bots]
    if not ids:
        return {}
    s = session()
    stmt = _list_statements(s.get_bind().dialect.name)[0]
    return {h.bot_id: h for h in s.execute(stmt, {"ids": ids})}


def ratings_of(bots: list[Bot]) -> dict[int, list[Any]]:
    """Each bot's ratings by family (as ``Bot.ratings``, read as :func:`rating_json` reads
    a rating), in one column statement for the list."""
    out: dict[int, list[Any]] = {b.id: [] for b in bots}
    if out:
        s = session()
        stmt = _list_statements(s.get_bind().dialect.name)[1]
        for r in s.execute(stmt, {"ids": list(out)}):
            out[r.bot_id].append(r)
    return out


@functools.cache
def _list_statements(dialect: str) -> tuple[Select[*tuple[Any, ...]], ...]:
    """:func:`admission_checks`' and :func:`ratings_of`'s statements, built once per
    dialect with the bots' ids bound at execution (``ids``)."""
    newest = (select(func.max(HealthCheck.id))
              .where(among_bound(dialect, HealthCheck.bot_id, "ids"),
                     HealthCheck.purpose.in_(bot_service.ADMISSION))
              .group_by(HealthCheck.bot_id))
    checks = select(*CHECK_COLUMNS).where(HealthCheck.id.in_(newest.scalar_subquery()))
    ratings = (select(Rating.bot_id, Rating.family, Rating.rating, Rating.games)
               .where(among_bound(dialect, Rating.bot_id, "ids"))
               .order_by(Rating.bot_id, Rating.family))
    return checks, ratings


def bots_json(bots: list[Bot]) -> list[dict[str, Any]]:
    """:func:`bot_json` of each bot of a list: its checks and ratings in one statement each,
    as columns (a list of 50 bots built 50 ``HealthCheck`` objects and 50 collections of
    ``Rating`` objects), and its check URL formatted, not routed, per bot."""
    checks = admission_checks(bots)
    ratings = ratings_of(bots)
    head, tail = url_for("bots.bot_check", bot_id=1).rsplit("/1/", 1)
    return [bot_json(b, check=checks.get(b.id), ratings=ratings[b.id],
                     check_url=f"{head}/{b.id}/{tail}") for b in bots]


def bot_json(bot: Bot, *, private: bool = False, check: Any = NOT_LOADED,
             ratings: list[Any] | None = None, check_url: str | None = None) -> dict[str, Any]:
    """A bot as the API shows it (``check``, ``ratings``, ``check_url``: already loaded
    or formatted by a list, :func:`bots_json`; else looked up for this bot)."""
    if ratings is None:
        ratings = list(bot.ratings)
    out: dict[str, Any] = {
        "id": bot.id,
        "name": bot.name,
        "version": bot.version,
        "status": bot.status,
        "created_at": iso(bot.created_at),
        "updated_at": iso(bot.updated_at),
        "info": bot.info,
        "health": {
            "failures": bot.health_failures,
            "last_checked_at": iso(bot.last_health_at),
            "last_reason": bot.last_health_reason,
            "pause_reason": bot.pause_reason if bot.health_paused else "",
        },
        "check": admission_json(bot, check, check_url),
        "ratings": [rating_json(r) for r in ratings],
        "accepts_challenges": bot.accepts_challenges,
    }
    if private:
        out["url"] = bot.url
        out["pending_url"] = bot.pending_url
    return out


def check_json(check: HealthCheck) -> dict[str, Any]:
    return {
        "id": check.id,
        "purpose": check.purpose,
        "state": bot_service.check_state(check),
        "done": check.state == "done",
        "reason": check.reason,
        "describe_ms": check.describe_ms,
        "move_ms": check.move_ms,
        "queued_at": iso(check.at),
        "finished_at": iso(check.finished_at),
    }


def admission_json(bot: Bot, check: Any = NOT_LOADED,
                   url: str | None = None) -> dict[str, Any] | None:
    """The newest submission / URL-change / re-check check, with the URL to poll (``check``:
    already loaded by a list, see :func:`admission_checks`)."""
    if check is NOT_LOADED:
        check = bot_service.latest_admission_check(session(), bot.id)
    if check is None:
        return None
    return {**check_json(check), "url": url or url_for("bots.bot_check", bot_id=bot.id)}


def accepted(s: Session, bot: Bot, check: HealthCheck, body: dict[str, Any]) -> Response:
    """202: commit the change (with its stored answer when the request carries an
    ``Idempotency-Key``), then queue the check; the client polls ``check_url``.

    The check row is committed before its job is queued, so a worker always finds it; a job
    lost between the two (Redis down) is queued again by the health sweep."""
    resp = jsonify({**body, "check_url": url_for("bots.bot_check", bot_id=bot.id)})
    resp.status_code = 202
    resp.headers["Location"] = url_for("bots.show_bot", bot_id=bot.id)
    resp.headers["Cache-Control"] = "no-store"
    idempotency.commit(s, resp)
    bot_service.enqueue_check(app_object(), bot.id, check.id)
    return resp


def signing_secret_fields(bot: Bot) -> dict[str, Any]:
    """The bot's current signing secret, for the two answers that show it (creation and
    rotation); ``arena.core.signing`` derives it, nothing stores it."""
    return {"signing_secret": bot_secret(app_object(), bot),
            "signing_generation": bot.signing_generation,
            "signing_note": "keep this secret: it is shown only now.  Every request the "
                            "arena sends your bot is signed with it (X-BigTwo-Timestamp, "
                            "X-BigTwo-Request-Id and X-BigTwo-Signatures: v2=HMAC-SHA256 of "
                            "the method, path, timestamp, request id and body); see "
                            "docs/protocol.md#request-signing.  Rotate it with POST "
                            f"/api/bots/{bot.id}/signing-secret."}


def rotation_fields(bot: Bot) -> dict[str, Any]:
    """:func:`signing_secret_fields` after a rotation, with its grace period in words."""
    until = grace_until(app_object(), bot)
    fields = signing_secret_fields(bot)
    grace = (f"Until {iso(until)} the arena signs with the previous secret too (two v2 "
             "signatures), so your bot keeps answering: restart it with the new secret "
             "before then.  " if until is not None else
             "The previous secret stopped at once (no grace period).  ")
    fields["previous_secret_valid_until"] = iso(until)
    fields["signing_note"] = grace + fields["signing_note"]
    return fields


# --- pages -----------------------------------------------------------------------------------


@bp.get("/bots")
@limited("pages")
@page("Every live bot by name (?q= the name contains it, any case; keyset pages: ?cursor= "
      "from the 'next' link)", errors={400: "a bad cursor"})
def bot_list() -> str:
    """Every live bot by name, searchable (``?q=``: the name contains it, whatever the
    case), keyset pages (``?cursor=`` from the "next" link;
    :func:`arena.bots.service.list_bots`)."""
    s = session()
    cfg = current_app.config
    name_max = int(cfg["BOT_NAME_MAX"])
    q = request.args.get("q", "").strip()[:name_max]
    token = request.args.get("cursor")
    after = None if token is None else decode_text_cursor(token, "bot-list", name_max)
    family = DEFAULT_FAMILY
    rows, more = bot_service.list_bots(s, family=family, search=q, after=after,
                                       limit=int(cfg["PAGE_SIZE"]))
    next_url = url_for("bots.bot_list", q=q or None,
                       cursor=encode_cursor("bot-list", rows[-1].name)) if more else None
    first_url = url_for("bots.bot_list", q=q or None) if after is not None else None
    return render_template("bots.html", rows=rows, rows_html=bot_rows_html(rows, family), q=q,
                           next_url=next_url, first_url=first_url, family=family)


def bot_rows_html(rows: list[bot_service.BotLine], family: str) -> Markup:
    """The bot list's table rows.  Python, not a Jinja loop: 50 rows of six cells, each with
    a lookup, a filter and an escape, and a routed URL with a query a row, were two thirds
    of the page's render.  Everything a user typed (the name, the author the bot said) is
    escaped as the template escaped it."""
    matches = url_for("matches.match_list")
    out = []
    for b in rows:
        author = (f' <span class="muted small">by {escape(b.author)}</span>'
                  if b.author else "")
        status = escape(b.status)
        elo = ('<span class="muted">&ndash;</span>' if b.rating is None
               else rating_html(b.rating, b.games, family))
        href = escape(f"{matches}?{urlencode({'bot': b.name})}")
        out.append(f'\n      <tr>\n        <td>{bot_link_html(b.id, b.name)}{author}</td>\n'
                   f'        <td><span class="badge badge-{status}">{status}</span></td>\n'
                   f'        <td class="num" data-label="Elo">{elo}</td>\n'
                   f'        <td class="num" data-label="games">{b.games}</td>\n'
                   f'        <td class="muted nowrap" data-label="joined">'
                   f'{escape(ago_filter(b.created_at))}</td>\n'
                   f'        <td><a href="{href}">matches</a></td>\n      </tr>\n    ')
    return Markup("".join(out))


@bp.route("/bots/new", methods=["GET", "POST"])
@limited("bot_submit", methods=("POST",))
@page("Submit a bot: the form (GET); POST (form fields name, url, csrf_token) redirects to "
      "the welcome page, which shows the owner token once and follows the health check a "
      "worker runs", answers={200: (HTML, "the form"),
                               303: (None, "submitted: to the welcome page")},
      errors={400: "the form again, with what is wrong"})
def bot_new() -> tuple[str, int] | str | Response | WerkzeugResponse:
    """Submit a bot: the bot is stored ``pending`` and its health check queued, and the
    browser is sent (303) to the welcome page, which shows the owner token once and follows
    the check (``static/check.js`` polls ``/api/bots/<id>/check``).  This request never calls
    the bot."""
    if request.method == "GET":
        return render_template("bot_new.html", errors=[], form={})
    app = app_object()
    form = {"name": request.form.get("name", "").strip(),
            "url": request.form.get("url", "").strip()}
    errors: list[str] = []
    if not csrf_ok():
        errors.append(FORM_EXPIRED)
    else:
        problem = bot_service.name_problem(form["name"], int(app.config["BOT_NAME_MAX"]))
        if problem:
            errors.append(f"Name: {problem}.")
        problem = bot_service.url_problem(app, form["url"])
        if problem:
            errors.append(f"URL: {problem}.")
    s = session()
    if not errors and s.scalar(select(Bot.id).where(Bot.name == form["name"])) is not None:
        errors.append(f"Name: a bot called {form['name']!r} exists already.")
    if errors:
        return render_template("bot_new.html", errors=errors, form=form), 400
    token = new_token()
    account = account_sessions.current(s)
    try:
        bot, check = bot_service.submit(s, name=form["name"], url=form["url"],
                                        token_hash=hash_token(token),
                                        account_id=account.id if account else None)
        s.commit()
    except bot_service.EndpointTakenError as exc:
        s.rollback()
        return render_template("bot_new.html", form=form, errors=[f"URL: {exc}."]), 400
    except IntegrityError:
        s.rollback()
        return render_template("bot_new.html", form=form, errors=[
            f"Name: a bot called {form['name']!r} (or one at this URL) exists already."]), 400
    bot_service.enqueue_check(app, bot.id, check.id)
    # Redirect after POST: a reload of the welcome page must not post the form again.  The
    # token is kept for one read, never in a URL or the cookie (arena.web.welcome).
    if welcome.keep(app, bot.id, token):
        return redirect(url_for("bots.bot_welcome", bot_id=bot.id), 303)
    return welcome_page(bot, token)


def welcome_page(bot: Bot, token: str | None) -> Response:
    """The welcome page of a new bot: its check, and (``token`` given) the owner token and
    the signing secret, shown this once; never cached."""
    app = app_object()
    check = bot_service.latest_admission_check(session(), bot.id)
    resp = Response(render_template(
        "bot_created.html", bot=bot, token=token, check=check,
        check_state=check and bot_service.check_state(check),
        signing_secret=bot_secret(app, bot) if token is not None else None))
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.get("/bots/<id:bot_id>/welcome")
@page("A new bot's welcome page (after the form): the owner token and signing secret once, "
      "then its health check", errors={404: "no such bot"})
def bot_welcome(bot_id: int) -> tuple[str, int] | str | Response:
    """Where the form redirects: shows what :func:`arena.web.welcome.take` still holds for
    this browser (the first read), and on a reload the same page without the secrets."""
    bot = session().get(Bot, bot_id)
    if bot is None or bot.deleted_at is not None:
        return page_not_found(f"bot {bot_id}")
    return welcome_page(bot, welcome.take(app_object(), bot.id))


@bp.post("/bots/<id:bot_id>/signing-secret")
@limited("bot_owner")
@page("Rotate the bot's signing secret (form: owner_token, csrf_token): shows the new secret "
      "once", errors={403: "the bot page, with the error", 404: "no such bot"})
def bot_rotate_secret(bot_id: int) -> tuple[str, int] | str | Response:
    """The owner rotates the bot's signing secret (owner token in the form, CSRF-checked);
    the new secret is shown once, on a page that is never cached."""
    s = session()
    bot = s.get(Bot, bot_id)
    if bot is None or bot.deleted_at is not None:
        return page_not_found(f"bot {bot_id}")
    sent = request.form.get("owner_token", "").strip()
    errors: list[str] = []
    if not csrf_ok():
        errors.append(FORM_EXPIRED)
    elif not (token_matches(sent, bot.token_hash) or is_admin(sent) or browser_owns(bot)):
        errors.append("Owner token: wrong or missing.")
    if errors:
        return bot_page(bot_id, rotate_errors=errors, status=403)
    secret = rotate(app_object(), bot, grace=not request.form.get("no_grace"))
    bot.updated_at = utcnow()
    s.commit()
    resp = Response(render_template("signing_secret.html", bot=bot, signing_secret=secret,
                                    grace_until=grace_until(app_object(), bot)))
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _blank(value: Any, fmt: str = "{}") -> str:
    """A table cell's text: ``value`` formatted, or nothing for None."""
    return "" if value is None else fmt.format(value)


def recent_rows_html(seats: list[BotSeatLine]) -> Markup:
    """The bot page's recent matches, as the template's loop wrote them (byte for byte:
    its whitespace, its escaping, the match page routed once, not once a row).  Python, not
    a Jinja loop of ten cells a row: 20 rows were a third of the page's render."""
    head, tail = url_for("matches.match_page", match_id=1).rsplit("/1", 1)
    out = []
    for x in seats:
        strikes_class = " warn" if x.strikes else ""
        out.append(
            f'\n      <tr>\n        <td><a href="{escape(f"{head}/{x.match_id}{tail}")}">'
            f'#{x.match_id}</a> <span class="muted small">{escape(x.kind)}</span></td>\n'
            f'        <td>{state_badge_html(x.state)}</td>\n'
            f'        <td>{escape(x.ruleset)}</td>\n'
            f'        <td class="num">{human_filter(x.seat)}</td>\n'
            f'        <td class="num">{_blank(x.rank)}</td>\n'
            f'        <td class="num">{_blank(x.score)}</td>\n'
            f'        <td class="num">{_blank(x.p50_ms, "{:.0f}")}</td>\n'
            f'        <td class="num">{_blank(x.p95_ms, "{:.0f}")}</td>\n'
            f'        <td class="num{strikes_class}">{_blank(x.strikes)}</td>\n'
            f'        <td class="muted">{escape(", ".join(x.opponents))}</td>\n'
            '      </tr>\n    ')
    return Markup("".join(out))


@functools.cache
def _bot_page_statements() -> tuple[Select[Rating], Select[HealthCheck]]:
    """The bot page's ratings (most played family first) and newest five health checks,
    built once with the bot bound (``bot_id``), not on every render."""
    bot_id = bindparam("bot_id", type_=Integer)
    return (select(Rating).where(Rating.bot_id == bot_id).order_by(Rating.games.desc()),
            select(HealthCheck).where(HealthCheck.bot_id == bot_id)
            .order_by(HealthCheck.id.desc()).limit(5))


@bp.get("/bots/<id:bot_id>")
@page("A bot: rating history charts, recent matches, latency, strikes and their reasons",
      errors={404: "no such bot"})
def bot_page(bot_id: int, rotate_errors: list[str] | None = None,
             status: int = 200, owner_errors: list[str] | None = None,
             check_errors: list[str] | None = None) -> tuple[str, int] | str | Response:
    s = session()
    cfg = current_app.config
    bot, admission = bot_service.bot_and_latest_check(s, bot_id)  # one round trip
    if bot is None:
        return page_not_found(f"bot {bot_id}")
    ratings_stmt, health_stmt = _bot_page_statements()
    ratings = s.scalars(ratings_stmt, {"bot_id": bot.id}).all()
    charts = []
    for r in ratings:  # one per rating family (a fixed, small set)
        hist = rating_series(s, r.family, {bot.id: r.games}, int(cfg["CHART_POINTS"]))
        charts.append((r, rating_chart([(bot.name, hist.get(bot.id, []), None)],
                                       height=260)))
    seats = bot_recent_seats(s, bot.id, int(cfg["RECENT_MATCHES"]))
    finished = [x for x in seats if x.state == "finished"]
    p50s = [x.p50_ms for x in finished if x.p50_ms is not None]
    p95s = [x.p95_ms for x in finished if x.p95_ms is not None]
    latency = {
        "p50": statistics.median(p50s) if p50s else None,
        "p95": max(p95s) if p95s else None,
        "calls": sum(x.calls or 0 for x in finished),
        "matches": len(finished),
    }
    strikes: list[dict[str, Any]] = []
    reasons: Counter[str] = Counter()
    for x in finished:
        if not x.has_result:
            continue
        for st in plain_items(list(x.result_strikes), "reason", with_name=True):
            if st["seat"] == x.seat:
                reasons[st["name"]] += 1
                strikes.append({**st, "match_id": x.match_id})
    health = list(s.scalars(health_stmt, {"bot_id": bot.id}))
    # Count before cutting the list: the stat, the reason chips and "n of total" above the
    # table all describe every strike of the matches listed, the table only the newest.
    page = render_template("bot.html", bot=bot, ratings=charts, seats=seats,
                           seat_rows=recent_rows_html(seats), latency=latency,
                           back=page_facts(app_object(), s, bot, owner=owners.is_owner(bot)),
                           bench_purpose=BENCH,
                           check_errors=check_errors or [],
                           strikes=strikes[:int(cfg["BOT_PAGE_STRIKES"])],
                           strike_total=len(strikes),
                           reasons=reasons.most_common(), health=health,
                           rotate_errors=rotate_errors or [], check=admission,
                           signing_grace=in_grace(app_object(), bot),
                           check_state=admission and bot_service.check_state(admission),
                           owner=browser_owns(bot), owner_by_token=owners.is_owner(bot),
                           owner_errors=owner_errors or [], presets=preset_names())
    return (page, status) if status != 200 else page


# --- JSON ------------------------------------------------------------------------------------


def submitting_account() -> int | None:
    """The account a ``POST /api/bots`` registers the bot under: the account of its bearer
    token when that is an account token (``bots:write``), else none.  Any other bearer (a bot
    owner token) is ignored, as it always was; an account token that is unknown, revoked or
    lacks the scope is refused rather than silently registering an orphan."""
    token = bearer_token()
    if not accounts.looks_like_account_token(token):
        return None
    use = accounts.use_token(session(), token)
    if use is None:
        raise ApiError(401, "unauthorized", "this account token is unknown or revoked")
    if not use.allows(WRITE):
        raise ApiError(403, "forbidden", f"this account token lacks the scope {WRITE}")
    return use.account.id



@bp.post("/api/bots")
@limited("bot_submit")
@idempotent(secrets=("token", "signing_secret"))
@operation("Submit a bot: 202 at once with the owner token (shown once); a worker runs the "
           "health check (poll check_url)",
           {202: (out.BotCreated, "stored, check queued (Location: the bot)")}, body=NewBot,
           errors={409: "name taken, or the URL's endpoint belongs to another live bot",
                   422: "URL refused by the SSRF guard"})
def create_bot() -> Response:
    app = app_object()
    account_id = submitting_account()
    body = NewBot.from_body()
    name, url = body.name.strip(), body.url.strip()
    problem = bot_service.name_problem(name, int(app.config["BOT_NAME_MAX"]))
    if problem:
        raise ApiError(400, "bad_name", problem)
    s = session()
    if s.scalar(select(Bot.id).where(Bot.name == name)) is not None:
        raise ApiError(409, "name_taken", f"a bot called {name!r} exists already")
    problem = bot_service.url_problem(app, url)
    if problem:
        raise ApiError(422, "url_refused", problem)
    token = new_token()
    try:
        bot, check = bot_service.submit(s, name=name, url=url, token_hash=hash_token(token),
                                        account_id=account_id)
        s.flush()
    except bot_service.EndpointTakenError as exc:
        s.rollback()
        raise ApiError(409, "endpoint_taken", str(exc)) from None
    except IntegrityError:
        s.rollback()
        raise ApiError(409, "name_taken", f"a bot called {name!r} or its endpoint exists "
                       "already") from None
    # The bot, its check and (with an Idempotency-Key) its sealed answer commit together.
    return accepted(s, bot, check, {
        "bot": bot_json(bot, private=True), "token": token,
        "token_note": "keep this token: it is shown only now, and it is needed to change, "
                      "pause or delete the bot; the bot joins the ladder once its health "
                      "check (running now) passes: poll check_url",
        **signing_secret_fields(bot)})


@bp.get("/api/bots")
@limited("pages")
@operation("List bots", {200: (out.Page[out.Bot], "a page of bots")}, query=BotsQuery)
def list_bots() -> Response:
    query = from_query(BotsQuery)
    status = query.status
    stmt = select(Bot).where(Bot.deleted_at.is_(None)).order_by(Bot.id)
    if status is not None:
        if status == "active":
            stmt = stmt.where(Bot.owner_paused.is_(False), Bot.health_paused.is_(False),
                              Bot.check_state == "passed")
        elif status == "paused":
            stmt = stmt.where(Bot.owner_paused.is_(True))
        elif status == "unhealthy":
            stmt = stmt.where(Bot.owner_paused.is_(False), Bot.check_state == "passed",
                              Bot.health_paused.is_(True))
        else:  # pending or rejected
            stmt = stmt.where(Bot.owner_paused.is_(False), Bot.check_state == (
                "pending" if status == "pending" else "failed"))
    # The total is the maintained count of live bots of the status (not count(*): 15-27 ms
    # of SQL at 100,000 bots), which the filter above selects exactly (bot_status).
    return paginate(stmt, query, bot_json, render_all=bots_json,
                    total=counts.bots_total(session(), status))


@bp.get("/api/bots/<id:bot_id>")
@operation("One bot (with its URL for the owner)", {200: (out.Bot, "the bot")},
           auth="optional", errors={404: "no such bot"})
def show_bot(bot_id: int) -> Response:
    bot = get_bot(bot_id)
    return jsonify(bot_json(bot, private=is_owner(bot, READ)))


@bp.patch("/api/bots/<id:bot_id>")
@limited("url_change")
@limited("bot_owner")
@operation("Change the URL (checked by a job: 202; the bot plays on its old URL until the new "
           "one passes), pause/resume, or opt out of (or back into) challenges",
           {200: (out.Bot, "the changed bot"),
            202: (out.BotChecking, "new URL reserved, check queued")},
           body=BotChange, auth="owner",
           errors={404: "no such bot", 409: "the URL's endpoint belongs to another live bot",
                   422: "URL refused by the SSRF guard"})
def update_bot(bot_id: int) -> Response:
    app = app_object()
    bot = get_bot(bot_id)
    require_owner(bot, WRITE)
    body = BotChange.from_body()
    paused = body.paused
    url = body.url.strip() if body.url is not None else None
    s = session()
    check = None
    if url is not None and url not in (bot.url, bot.pending_url):
        problem = bot_service.url_problem(app, url)
        if problem:
            raise ApiError(422, "url_refused", problem)
        try:
            check = bot_service.change_url(s, bot, url)
            s.flush()
        except bot_service.EndpointTakenError as exc:
            s.rollback()
            raise ApiError(409, "endpoint_taken", str(exc)) from None
        except IntegrityError:
            s.rollback()
            raise ApiError(409, "endpoint_taken", "this URL's endpoint is being registered "
                           "by another bot right now") from None
    if paused is not None and paused != bot.owner_paused:
        bot.owner_paused = paused
        bot.updated_at = utcnow()
        if not paused:
            bot.idle_since = utcnow()
    if body.accepts_challenges is not None and body.accepts_challenges != \
            bot.accepts_challenges:
        bot.accepts_challenges = body.accepts_challenges
        bot.updated_at = utcnow()
    if check is not None:
        return accepted(s, bot, check, {"bot": bot_json(bot, private=True)})
    s.commit()
    return jsonify(bot_json(bot, private=True))


@bp.delete("/api/bots/<id:bot_id>")
@limited("bot_owner")
@operation("Delete the bot (its matches and rating history stay)",
           {204: (None, "deleted")}, auth="owner", errors={404: "no such bot"})
def delete_bot(bot_id: int) -> tuple[str, int]:
    bot = get_bot(bot_id)
    require_owner(bot, WRITE)
    bot.deleted_at = utcnow()
    bot.updated_at = bot.deleted_at
    bot.endpoint = bot.pending_endpoint = bot.pending_url = None  # free for another bot
    session().commit()
    return "", 204


@bp.post("/api/bots/<id:bot_id>/signing-secret")
@limited("bot_owner")
@idempotent(secrets=("signing_secret",))
@operation("Rotate the bot's request-signing secret (shown once; matches that start from now "
           "on use it, beside the previous one during a grace period)",
           {200: (out.SigningSecret, "the new secret")}, body=SecretRotation,
           body_required=False, auth="owner", errors={404: "no such bot"})
def rotate_signing_secret(bot_id: int) -> Response:
    """A new signing secret, shown once.  Matches and health checks that start from now on
    sign with it and, for SIGNING_ROTATION_GRACE_S, with the previous one too (unless
    ``grace`` is false); a match already running finishes with the secrets it started with."""
    bot = get_bot(bot_id)
    require_owner(bot, WRITE)
    body = SecretRotation.from_body(optional=True)
    rotate(app_object(), bot, grace=body.grace)
    bot.updated_at = utcnow()
    resp = jsonify({"bot_id": bot.id, **rotation_fields(bot)})
    resp.headers["Cache-Control"] = "no-store"
    return idempotency.commit(session(), resp)  # the rotation and its (sealed) answer


@bp.get("/api/bots/<id:bot_id>/check")
@limited("pages")
@operation("The bot's newest submission / URL-change / re-check check: poll until done",
           {200: (out.CheckStatus, "the check")},
           errors={404: "no such bot, or it has no check"})
def bot_check(bot_id: int) -> Response:
    """The bot's newest submission / URL-change / re-check check (poll until ``done``):
    one statement."""
    bot, check = bot_service.bot_and_latest_check(session(), bot_id)
    if bot is None or bot.deleted_at is not None:
        raise ApiError(404, "not_found", f"no bot {bot_id}")
    if check is None:
        raise ApiError(404, "not_found", f"bot {bot_id} has no check to wait for")
    resp = jsonify({**check_json(check), "bot_status": bot.status,
                    "pause_reason": bot.pause_reason if bot.health_paused else ""})
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.post("/api/bots/<id:bot_id>/check")
@limited("url_change")  # each check is an outbound call to the bot: limited like a URL change
@limited("bot_owner")
@idempotent
@operation("Ask for a health check now (owner): 202, poll check_url",
           {202: (out.BotChecking, "check queued")}, body=Empty, body_required=False,
           auth="owner", errors={404: "no such bot"})
def bot_recheck(bot_id: int) -> Response:
    """The owner asks for a check now (e.g. after fixing an unhealthy bot): at most once per
    ``HEALTH_RECHECK_MIN_INTERVAL_S`` per bot, and not while the previous one is pending."""
    bot = get_bot(bot_id)
    require_owner(bot, WRITE)
    Empty.from_body(optional=True)  # no fields; a malformed body is still a 400
    s = session()
    wait = recheck_wait_s(app_object(), s, bot)
    if wait > 0:
        raise ApiError(429, "too_soon", f"a check of this bot was asked for moments ago; ask "
                       f"again {in_words(wait)}", retry_after=math.ceil(wait))
    check = bot_service.recheck(s, bot)
    return accepted(s, bot, check, {"bot": bot_json(bot, private=True)})


@bp.get("/api/bots/<id:bot_id>/versions")
@limited("pages")
@operation("Every URL the bot has had (the URLs for the owner only)",
           {200: (out.Page[out.BotVersion], "versions")}, query=Paging, auth="optional",
           errors={404: "no such bot"})
def bot_versions(bot_id: int) -> Response:
    bot = get_bot(bot_id)
    query = from_query(Paging)
    private = is_owner(bot, READ)

    def render(v: BotVersion) -> dict[str, Any]:
        out = {"version": v.version, "created_at": iso(v.created_at), "info": v.info}
        if private:
            out["url"] = v.url
        return out

    stmt = select(BotVersion).where(BotVersion.bot_id == bot.id).order_by(BotVersion.version)
    return paginate(stmt, query, render)


@bp.get("/api/bots/<id:bot_id>/health")
@limited("pages")
@operation("Health checks of the bot, newest first",
           {200: (out.CursorPage[out.HealthCheck], "checks")}, query=CursorPaging,
           errors={404: "no such bot"})
def bot_health(bot_id: int) -> Response:
    bot = get_bot(bot_id)
    query = from_query(CursorPaging)

    def render(h: HealthCheck) -> dict[str, Any]:
        return {"at": iso(h.at), "ok": h.ok if h.state == "done" else None,
                "state": bot_service.check_state(h), "purpose": h.purpose,
                "reason": h.reason, "describe_ms": h.describe_ms, "move_ms": h.move_ms,
                "until": iso(h.finished_at) if h.purpose == BENCH else None}

    key, limit = keyset_args("health", query.limit)
    stmt = select(HealthCheck).where(HealthCheck.bot_id == bot.id)
    if key is not None:
        stmt = stmt.where(HealthCheck.id < key)
    rows = list(session().scalars(stmt.order_by(HealthCheck.id.desc()).limit(limit + 1)))
    return jsonify(keyset_page("health", [render(h) for h in rows], rows, limit,
                               lambda h: h.id))
