"""Web pages for spectators and bot authors (server-rendered Jinja, a little local JavaScript),
and the operational probes.

Pages: home, submit a bot (form with a CSRF token; shows the owner token once and follows the
health check, which a job runs: no page ever calls a bot), leaderboard
(Elo, games, provisional marks, rating-history chart), bot (rating history, recent matches,
latency, strikes and their reasons), tournaments (bracket picture or standings, updated live
by polling an HTML fragment with an ETag), match (results, downloads, turn-by-turn replay).
Spectators need no token; creating a tournament from the web asks for the operator's token.

Everything a user or a bot typed reaches the page through Jinja's autoescape (no ``|safe`` on
user data); the JavaScript only sets ``textContent``, or inserts HTML fragments rendered (and
escaped) by these templates.  Every response carries a Content-Security-Policy without
``unsafe-inline`` (scripts and styles come from ``/static`` only), ``frame-ancestors 'none'``,
``X-Content-Type-Options: nosniff`` and a strict referrer policy.

``/healthz``: the process answers (liveness).  ``/readyz``: the database and Redis answer
(readiness); 503 naming the failing part otherwise (``"down"``; the reason is only logged).
"""

from __future__ import annotations

import gzip
import hmac
import json
import logging
import secrets
import statistics
import threading
import time
from collections import Counter
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
from flask import session as cookie_session
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import contains_eager, selectinload
from werkzeug.wrappers import Response as WerkzeugResponse

from referee import preset_names

from . import bots as bot_service
from .charts import bracket_layout, rating_chart
from .errors import ApiError
from .limits import limited
from .models import Bot, Match, MatchResult, MatchSeat, Rating, RatingEvent, RatingFamily
from .queue import get_queue
from .ratings import rating_series
from .replay import replay_frames
from .security import hash_token, is_admin, new_token, token_matches
from .signing import bot_secret, rotate
from .storage import get_db, session
from .tournaments.models import Tournament, TournamentMatch
from .tournaments.present import (
    bracket_json,
    live_tag,
    round_sizes,
    standings_json,
    summaries,
    tournament_json,
)

bp = Blueprint("web", __name__)
log = logging.getLogger(__name__)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'")
CHART_BOTS = 8
"""Lines on the leaderboard's chart (the top of the page shown)."""
NAME_PREFIX_MAX = 64
FORMAT_NAMES = {"round_robin": "Round robin", "swiss": "Swiss", "knockout": "Knockout"}


@bp.after_app_request
def security_headers(resp: Response) -> Response:
    resp.headers.setdefault("Content-Security-Policy", CSP)
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("X-Frame-Options", "DENY")
    resp.headers.setdefault("Referrer-Policy", "same-origin")
    resp.headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    return resp


# --- helpers ---------------------------------------------------------------------------------


def csrf_token() -> str:
    token = cookie_session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(24)
        cookie_session["csrf"] = token
    return token


def csrf_ok() -> bool:
    sent = request.form.get("csrf_token", "")
    want = cookie_session.get("csrf")
    return isinstance(want, str) and bool(sent) and hmac.compare_digest(sent, want)


@bp.app_context_processor
def _template_globals() -> dict[str, Any]:
    return {"csrf_token": csrf_token, "format_name": lambda f: FORMAT_NAMES.get(f, f),
            "provisional_games": int(current_app.config["ELO_PROVISIONAL_GAMES"])}


@bp.app_template_filter("card")
def card_filter(text: str) -> str:
    """``"TD"`` -> ``"10♦"`` (display text; the template escapes it)."""
    rank, suit = text[:-1], text[-1]
    return ("10" if rank == "T" else rank) + {"D": "♦", "C": "♣", "H": "♥", "S": "♠"}.get(
        suit, suit)


@bp.app_template_filter("ago")
def ago_filter(value: Any) -> str:
    from .models import utcnow

    if value is None:
        return ""
    s = (utcnow() - value).total_seconds()
    if s < 60:
        return "just now"
    if s < 3600:
        return f"{int(s // 60)} min ago"
    if s < 86400:
        return f"{int(s // 3600)} h ago"
    return str(value.strftime("%Y-%m-%d"))


def page_not_found(what: str) -> tuple[str, int]:
    return render_template("404.html", what=what), 404


def _family_default() -> str:
    return "classic"


def seats_with_bots() -> Any:
    """Loader option: a match's seats with their bots, in one more query for any number of
    matches (never one lazy query per row)."""
    return selectinload(Match.seats).joinedload(MatchSeat.bot)


class SiteCounts:
    """The home page's counts of bots and tournaments, cached per process for
    ``SITE_COUNTS_TTL_S`` (a small aggregate, not a scan per hit).  The count of finished
    matches needs no cache: it is the sum of the per-family counters (``RatingFamily
    .results``) that the finishing transaction increments."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at = -1e18
        self._key = ""
        self._value: tuple[int, int] = (0, 0)

    def get(self, key: str, ttl_s: float) -> tuple[int, int]:
        now = time.monotonic()
        with self._lock:
            if key == self._key and now - self._at < ttl_s:
                return self._value
        s = session()
        bots = s.scalar(select(func.count()).select_from(Bot).where(Bot.deleted_at.is_(None)))
        n_tournaments = s.scalar(select(func.count()).select_from(Tournament))
        value = (int(bots or 0), int(n_tournaments or 0))
        with self._lock:
            self._key, self._at, self._value = key, now, value
        return value


SITE_COUNTS = SiteCounts()


class RenderCache:
    """Rendered tournament pages and live fragments, per process, keyed by what they show:
    the tournament's live tag (its version and match counts per state, which change with
    everything the page draws), the round and table page asked for, and the template.  A
    crowd polling a 256-entrant tournament costs one small statement per poll instead of a
    full render; the newest ``size`` renders are kept."""

    def __init__(self, size: int = 64) -> None:
        self._lock = threading.Lock()
        self._size = size
        self._items: dict[tuple[Any, ...], str] = {}

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def get(self, key: tuple[Any, ...], render: Any) -> str:
        with self._lock:
            hit = self._items.pop(key, None)
            if hit is not None:
                self._items[key] = hit  # most recent last
                return hit
        html = str(render())
        with self._lock:
            self._items[key] = html
            while len(self._items) > self._size:
                self._items.pop(next(iter(self._items)))
        return html


TOURNAMENT_RENDERS = RenderCache()


# --- home ------------------------------------------------------------------------------------


@bp.get("/")
def home() -> str:
    s = session()
    cfg = current_app.config
    bots, n_tournaments = SITE_COUNTS.get(str(cfg["DATABASE_URL"]),
                                          float(cfg["SITE_COUNTS_TTL_S"]))
    finished = s.scalar(select(func.coalesce(func.sum(RatingFamily.results), 0)))
    live = s.scalars(select(Tournament).where(Tournament.state == "running")
                     .order_by(Tournament.id.desc()).limit(5)).all()
    recent_t = s.scalars(select(Tournament).where(Tournament.state == "finished")
                         .order_by(Tournament.id.desc()).limit(5)).all()
    top = s.scalars(select(Rating).join(Rating.bot).where(Rating.family == _family_default(),
                                                         Bot.deleted_at.is_(None))
                    .options(contains_eager(Rating.bot))
                    .order_by(Rating.rating.desc(), Rating.bot_id).limit(5)).all()
    # ix_matches_state_finished_at: the newest six, read backwards from the index.
    recent = s.scalars(select(Match).where(Match.state == "finished")
                       .options(seats_with_bots())
                       .order_by(Match.finished_at.desc(), Match.id.desc()).limit(6)).all()
    return render_template("home.html", bots=bots, finished=int(finished or 0),
                           n_tournaments=n_tournaments, live=live, recent_t=recent_t,
                           top=top, recent=recent)


# --- bots ------------------------------------------------------------------------------------


@bp.route("/bots/new", methods=["GET", "POST"])
@limited("bot_submit", methods=("POST",))
def bot_new() -> tuple[str, int] | str | Response:
    """Submit a bot: the bot is stored ``pending`` and its health check queued; the page
    shows the owner token once and follows the check (``static/check.js`` polls
    ``/api/bots/<id>/check``).  This request never calls the bot."""
    if request.method == "GET":
        return render_template("bot_new.html", errors=[], form={})
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    form = {"name": request.form.get("name", "").strip(),
            "url": request.form.get("url", "").strip()}
    errors: list[str] = []
    if not csrf_ok():
        errors.append("This form has expired or did not come from this site; "
                      "please submit it again.")
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
    try:
        bot, check = bot_service.submit(s, name=form["name"], url=form["url"],
                                        token_hash=hash_token(token))
        s.commit()
    except bot_service.EndpointTakenError as exc:
        s.rollback()
        return render_template("bot_new.html", form=form, errors=[f"URL: {exc}."]), 400
    except IntegrityError:
        s.rollback()
        return render_template("bot_new.html", form=form, errors=[
            f"Name: a bot called {form['name']!r} (or one at this URL) exists already."]), 400
    bot_service.enqueue_check(app, bot.id, check.id)
    resp = Response(render_template("bot_created.html", bot=bot, token=token, check=check,
                                    check_state=bot_service.check_state(check),
                                    signing_secret=bot_secret(app, bot)))
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.post("/bots/<id:bot_id>/signing-secret")
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
        errors.append("This form has expired or did not come from this site; "
                      "please submit it again.")
    elif not (token_matches(sent, bot.token_hash) or is_admin(sent)):
        errors.append("Owner token: wrong or missing.")
    if errors:
        return bot_page(bot_id, rotate_errors=errors, status=403)
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    secret = rotate(app, bot)
    s.commit()
    resp = Response(render_template("signing_secret.html", bot=bot, signing_secret=secret))
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.get("/bots/<id:bot_id>")
def bot_page(bot_id: int, rotate_errors: list[str] | None = None,
             status: int = 200) -> tuple[str, int] | str:
    s = session()
    cfg = current_app.config
    bot = s.get(Bot, bot_id)
    if bot is None:
        return page_not_found(f"bot {bot_id}")
    ratings = s.scalars(select(Rating).where(Rating.bot_id == bot.id)
                        .order_by(Rating.games.desc())).all()
    charts = []
    for r in ratings:  # one per rating family (a fixed, small set)
        hist = rating_series(s, r.family, {bot.id: r.games}, int(cfg["CHART_POINTS"]))
        charts.append((r, rating_chart([(bot.name, hist.get(bot.id, []), None)],
                                       height=260)))
    # ix_match_seats_bot_id_match_id, read backwards; matches, their seats, bots and
    # results in three more queries whatever the number of rows.
    seats = s.scalars(select(MatchSeat).where(MatchSeat.bot_id == bot.id)
                      .options(selectinload(MatchSeat.match).options(
                          seats_with_bots(), selectinload(Match.result)))
                      .order_by(MatchSeat.match_id.desc())
                      .limit(int(cfg["RECENT_MATCHES"]))).all()
    finished = [x for x in seats if x.match.state == "finished"]
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
        result = x.match.result
        if result is None:
            continue
        for st in result.totals.get("strikes", []):
            if st["seat"] == x.seat:
                reasons[st["reason"]] += 1
                strikes.append({**st, "match_id": x.match_id})
    health = bot_service_health(bot)
    admission = bot_service.latest_admission_check(s, bot.id)
    page = render_template("bot.html", bot=bot, ratings=charts, seats=seats, latency=latency,
                           strikes=strikes[:int(cfg["RECENT_MATCHES"])],
                           reasons=reasons.most_common(), health=health,
                           rotate_errors=rotate_errors or [], check=admission,
                           check_state=admission and bot_service.check_state(admission))
    return (page, status) if status != 200 else page


def bot_service_health(bot: Bot) -> list[Any]:
    from .models import HealthCheck

    return list(session().scalars(select(HealthCheck).where(HealthCheck.bot_id == bot.id)
                                  .order_by(HealthCheck.id.desc()).limit(5)))


@bp.get("/leaderboard")
@limited("pages")
def leaderboard() -> str:
    """One page of a family's leaderboard (``?page=``), optionally only the bots whose name
    starts with ``?q=`` (case-insensitive), with each row's rank in the whole family."""
    s = session()
    cfg = current_app.config
    family = request.args.get("family", _family_default())[:64]
    q = request.args.get("q", "").strip()[:NAME_PREFIX_MAX]
    raw_page = request.args.get("page", "1")
    page = int(raw_page) if raw_page.isascii() and raw_page.isdigit() and len(raw_page) < 7 \
        else 1
    page = max(1, page)
    size = int(cfg["LEADERBOARD_PAGE_SIZE"])
    families = sorted(set(s.scalars(select(RatingFamily.name))) | {_family_default()})
    ranked = (select(Rating.bot_id, func.rank().over(
        order_by=(Rating.rating.desc(), Rating.bot_id)).label("rank"))
        .join(Rating.bot).where(Rating.family == family, Bot.deleted_at.is_(None)))
    if q:
        # The rank in the whole family is a window over the family (10,000 bots: a few
        # milliseconds); the name filter applies to the ranked rows.
        sub = ranked.add_columns(Bot.name).subquery()
        hits = s.execute(select(sub.c.bot_id, sub.c.rank)
                         .where(func.lower(sub.c.name).startswith(q.lower(), autoescape=True))
                         .order_by(sub.c.rank).limit(size + 1).offset((page - 1) * size)).all()
        ids = [b for b, _ in hits]
        ranks = {b: int(r) for b, r in hits}
        by_id = {r.bot_id: r for r in s.scalars(
            select(Rating).join(Rating.bot).options(contains_eager(Rating.bot))
            .where(Rating.family == family, Rating.bot_id.in_(ids)))}
        rows = [by_id[b] for b in ids if b in by_id]
    else:
        # ix_ratings_family_rating: one index range, however many bots.
        rows = list(s.scalars(
            select(Rating).join(Rating.bot).options(contains_eager(Rating.bot))
            .where(Rating.family == family, Bot.deleted_at.is_(None))
            .order_by(Rating.rating.desc(), Rating.bot_id)
            .limit(size + 1).offset((page - 1) * size)))
        ranks = {r.bot_id: (page - 1) * size + i + 1 for i, r in enumerate(rows)}
    more = len(rows) > size
    rows = rows[:size]
    top = rows[:CHART_BOTS]
    hist = rating_series(s, family, {r.bot_id: r.games for r in top}, int(cfg["CHART_POINTS"]))
    chart = rating_chart([(r.bot.name, hist.get(r.bot_id, []),
                           url_for("web.bot_page", bot_id=r.bot_id)) for r in top])
    return render_template("leaderboard.html", family=family, families=families, rows=rows,
                           ranks=ranks, chart=chart, q=q, page=page,
                           next_page=page + 1 if more else None,
                           prev_page=page - 1 if page > 1 else None)


# --- matches ---------------------------------------------------------------------------------


@bp.get("/matches/<id:match_id>")
def match_page(match_id: int) -> tuple[str, int] | str:
    s = session()
    m = s.get(Match, match_id, options=[seats_with_bots(), selectinload(Match.result)])
    if m is None:
        return page_not_found(f"match {match_id}")
    link = s.get(TournamentMatch, match_id)
    tournament = link.table.round.tournament if link is not None else None
    events = {e.bot_id: e for e in s.scalars(select(RatingEvent)
                                              .where(RatingEvent.match_id == m.id))}
    totals = m.result.totals if m.result is not None else {}
    return render_template("match.html", m=m, link=link, tournament=tournament,
                           events=events, strikes=totals.get("strikes", []),
                           notes=totals.get("notes", []),
                           standings=sorted(m.seats, key=lambda x: (x.rank or 99, x.seat)))


@bp.get("/matches/<id:match_id>/replay.json")
@limited("downloads")
def match_replay(match_id: int) -> Response:
    s = session()
    m = s.get(Match, match_id, options=[seats_with_bots()])
    if m is None:
        raise ApiError(404, "not_found", f"no match {match_id}")
    result = s.scalar(select(MatchResult).where(MatchResult.match_id == m.id))
    if result is None:
        raise ApiError(409, "not_finished", f"match {match_id} is {m.state}")
    doc = json.loads(gzip.decompress(result.log_gz))
    bot_ids = [x.bot_id for x in m.seats]
    data = replay_frames(doc, bot_ids, [x.bot.name for x in m.seats])
    data["match_url"] = url_for("web.match_page", match_id=m.id)
    resp = jsonify(data)
    resp.headers["Cache-Control"] = "public, max-age=3600"  # a finished match never changes
    return resp


# --- tournaments -----------------------------------------------------------------------------


@bp.get("/tournaments")
@limited("pages")
def tournaments() -> str:
    s = session()
    rows = s.scalars(select(Tournament).order_by(Tournament.id.desc()).limit(100)).all()
    return render_template("tournaments.html", items=summaries(s, rows))


def _entrant_choices() -> tuple[list[Bot], bool]:
    """The bots the form offers: at most ``TOURNAMENT_MAX_ENTRANTS``, the highest rated
    (classic family) first, listed by name; and whether there are more (the API takes any
    bot ids).  A form of 10,000 checkboxes would be neither usable nor cheap."""
    cap = int(current_app.config["TOURNAMENT_MAX_ENTRANTS"])
    rows = list(session().scalars(
        select(Bot).outerjoin(Rating, (Rating.bot_id == Bot.id)
                              & (Rating.family == _family_default()))
        .where(Bot.deleted_at.is_(None))
        .order_by(Rating.rating.desc().nulls_last(), Bot.id).limit(cap + 1)))
    return sorted(rows[:cap], key=lambda b: b.name), len(rows) > cap


@bp.route("/tournaments/new", methods=["GET", "POST"])
@limited("admin", methods=("POST",))
def tournament_new() -> tuple[str, int] | str | WerkzeugResponse:
    s = session()
    bots, more_bots = _entrant_choices()
    presets = preset_names()
    if request.method == "GET":
        return render_template("tournament_new.html", bots=bots, more_bots=more_bots,
                               presets=presets, errors=[],
                               form={"format": "knockout", "ruleset": "standard", "deals": 2,
                                     "advance": 2, "duplicate": True,
                                     "bots": [b.id for b in bots]})
    f = request.form
    form: dict[str, Any] = {
        "name": f.get("name", "").strip(), "format": f.get("format", ""),
        "ruleset": f.get("ruleset", "standard"), "deals": f.get("deals", ""),
        "advance": f.get("advance", "2"), "rounds": f.get("rounds", "").strip(),
        "duplicate": f.get("duplicate") == "on",
        "bots": [int(x) for x in f.getlist("bots") if x.isdigit() and len(x) < 12],
    }
    errors: list[str] = []
    if not csrf_ok():
        errors.append("This form has expired or did not come from this site; "
                      "please submit it again.")
    elif not is_admin(f.get("admin_token", "")):
        errors.append("Operator token: wrong or missing (creating tournaments needs the "
                      "ADMIN_TOKEN of this service).")
    body: dict[str, Any] = {"format": form["format"], "bots": form["bots"],
                            "ruleset": form["ruleset"], "duplicate": form["duplicate"]}
    if form["name"]:
        body["name"] = form["name"]
    for key in ("deals", "advance", "rounds"):
        raw = str(form[key])
        if raw:
            if not raw.isdigit() or len(raw) > 6:
                errors.append(f"{key.title()}: a whole number, please.")
            else:
                body[key] = int(raw)
    if form["format"] != "knockout":
        body.pop("advance", None)
    if form["format"] == "round_robin":
        body.pop("rounds", None)
    tid = None
    if not errors:
        from .tournaments.api import new_tournament

        try:
            t = new_tournament(body)
            s.commit()
            tid = t.id
        except ApiError as exc:
            s.rollback()
            errors.append(exc.message)
    if errors or tid is None:
        return render_template("tournament_new.html", bots=bots, more_bots=more_bots,
                               presets=presets, errors=errors, form=form), 400
    from .tournaments import service

    service.start(current_app._get_current_object(), tid)  # type: ignore[attr-defined]
    return redirect(url_for("web.tournament_page", tournament_id=tid), code=302)


def _arg_int(name: str) -> int | None:
    raw = request.args.get(name, "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 7 else None


def _tournament_context(t: Tournament) -> dict[str, Any]:
    """What the tournament page and its live fragment show.  A small tournament (at most
    ``TOURNAMENT_PAGE_TABLES`` tables in all) is drawn whole; a larger one shows one round
    (``?round=``, default the current one) and of it one page of tables (``?tables=``),
    with links to the others, and the top ``TOURNAMENT_PAGE_STANDINGS`` of the standings:
    the page's size and its statements do not grow with the entrants."""
    s = session()
    cfg = current_app.config
    per_page = int(cfg["TOURNAMENT_PAGE_TABLES"])
    sizes = round_sizes(s, t)
    whole = sum(sizes.values()) <= per_page
    nav: dict[str, Any] | None = None
    if whole:
        bracket = bracket_json(s, t)
    else:
        number = _arg_int("round")
        if number not in sizes:
            number = t.current_round if t.current_round in sizes else min(sizes)
        pages = max(1, -(-sizes[number] // per_page))
        page = min(max(1, _arg_int("tables") or 1), pages)
        bracket = bracket_json(s, t, only_round=number,
                               tables=slice((page - 1) * per_page, page * per_page))
        nav = {"round": number, "rounds": list(sizes), "page": page, "pages": pages,
               "tables": sizes[number], "first": (page - 1) * per_page + 1,
               "last": min(page * per_page, sizes[number])}
    info = tournament_json(s, t)
    standings = standings_json(s, t)
    shown = int(cfg["TOURNAMENT_PAGE_STANDINGS"])
    standings_total = len(standings["items"])
    standings["items"] = standings["items"][:shown]
    layout = bracket_layout(bracket if whole else {**bracket, "round_sizes": None},
                            connectors=t.format == "knockout" and whole)
    p = info["progress"]
    total = sum(p.values())
    live_args = {} if nav is None else {"round": nav["round"], "tables": nav["page"]}
    return {"t": t, "info": info, "bracket": bracket, "standings": standings,
            "standings_total": standings_total, "layout": layout, "progress": p,
            "total": total, "nav": nav, "tag": live_tag(s, t),
            "live_url": url_for("web.tournament_live", tournament_id=t.id, **live_args)}


def _render_key(t: Tournament, tag: str) -> tuple[Any, ...]:
    cfg = current_app.config
    return (str(cfg["DATABASE_URL"]), cfg["TOURNAMENT_PAGE_TABLES"],
            cfg["TOURNAMENT_PAGE_STANDINGS"], t.id, tag, request.args.get("round"),
            request.args.get("tables"))


@bp.get("/tournaments/<id:tournament_id>")
def tournament_page(tournament_id: int) -> tuple[str, int] | str:
    s = session()
    t = s.get(Tournament, tournament_id)
    if t is None:
        return page_not_found(f"tournament {tournament_id}")
    key = ("page", *_render_key(t, live_tag(s, t)))
    return TOURNAMENT_RENDERS.get(
        key, lambda: render_template("tournament.html", **_tournament_context(t)))


@bp.get("/tournaments/<id:tournament_id>/live")
def tournament_live(tournament_id: int) -> Response:
    s = session()
    t = s.get(Tournament, tournament_id)
    if t is None:
        body, status = page_not_found(f"tournament {tournament_id}")
        return Response(body, status=status)
    tag = live_tag(s, t)
    if tag in [x.strip() for x in request.headers.get("If-None-Match", "").split(",")]:
        resp = Response(status=304)
    else:
        key = ("live", *_render_key(t, tag))
        resp = Response(TOURNAMENT_RENDERS.get(
            key, lambda: render_template("_tournament_live.html", **_tournament_context(t))))
    resp.headers["ETag"] = tag
    resp.headers["Cache-Control"] = "no-cache"
    resp.headers["X-Tournament-State"] = t.state
    return resp


# --- probes ----------------------------------------------------------------------------------


@bp.get("/healthz")
def healthz() -> Response:
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz() -> tuple[Response, int]:
    # Public: it says which part is down, never why (error texts carry host names, users and
    # driver versions); the reason goes to the log.
    checks: dict[str, str] = {}
    try:
        get_db().ping()
        checks["database"] = "ok"
    except Exception:
        log.exception("readiness: the database does not answer")
        checks["database"] = "down"
    try:
        get_queue(current_app._get_current_object()).redis.ping()  # type: ignore[attr-defined]
        checks["redis"] = "ok"
    except Exception:
        log.exception("readiness: Redis does not answer")
        checks["redis"] = "down"
    ok = all(v == "ok" for v in checks.values())
    return jsonify({"status": "ok" if ok else "unavailable", "ready": ok,
                    "checks": checks}), (200 if ok else 503)
