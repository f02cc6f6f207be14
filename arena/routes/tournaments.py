"""Tournaments: the list, the creation form, the tournament page with its live fragment, and
the JSON API (create, start, advance, cancel; standings, bracket, the zip of every log).

Creating, starting, advancing and cancelling need the operator's token (in the form's field
or as ``Authorization: Bearer``); reading is public.  The page draws the bracket or the
standings and follows the tournament by polling ``/tournaments/<id>/live``, an HTML fragment
with an ETag (the tournament's live tag: a 304 while nothing changed).

The rules of a tournament (formats, pairing, scoring) live in :mod:`arena.tournaments`;
this module is only its face on the web, next to the other features' in
:mod:`arena.routes`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from flask import (
    Blueprint,
    Flask,
    Response,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import Session, defer
from werkzeug.wrappers import Response as WerkzeugResponse

from arena.core.models import Bot, Rating
from arena.core.security import is_admin
from arena.core.storage import session
from arena.core.tournament_models import Tournament
from arena.tournaments import service
from arena.web import idempotency
from arena.web.charts import bracket_layout, bracket_svg
from arena.web.errors import ApiError
from arena.web.idempotency import idempotent
from arena.web.limits import limited
from arena.web.openapi import Answers, operation, page
from arena.web.shapes import from_query
from arena.web.shapes import responses as out
from arena.web.shapes.requests import Empty, NewTournament, TournamentsQuery
from referee import preset_names

from ..tournaments.present import (
    archive,
    bracket_json,
    live_state,
    live_tag,
    progress,
    read_for_page,
    standings_json,
    summaries,
    tournament_json,
    tournaments_json,
)
from .matches import match_limits
from .plumbing import (
    FORM_EXPIRED,
    app_object,
    arg_int,
    bot_href,
    bot_link_html,
    csrf_ok,
    get_bots,
    get_or_404,
    page_not_found,
    paginate,
    require_admin,
)
from .ratings import DEFAULT_FAMILY

bp = Blueprint("tournaments", __name__)



def get_tournament(tournament_id: int) -> Tournament:
    return get_or_404(Tournament, tournament_id, "tournament")


NOT_SHOWN = (defer(Tournament.standings),)
"""Loader options of a tournament read only to answer: without its final standings, frozen
when it finished (a 256-entrant tournament's are ~25 KB of JSON, decoded on every load),
which no answer shows: the standings are computed from the rounds."""


def read_tournament(tournament_id: int) -> Tournament:
    """:func:`get_tournament` for a read-only answer (:data:`NOT_SHOWN`)."""
    return get_or_404(Tournament, tournament_id, "tournament", options=NOT_SHOWN)


def new_tournament(body: NewTournament) -> Tournament:
    """Add the tournament a creation body describes to the session (shared by the JSON API
    and the web form, which builds the same body)."""
    cfg = current_app.config
    if len(body.bots) > int(cfg["TOURNAMENT_MAX_ENTRANTS"]):
        raise ApiError(400, "too_many_entrants",
                       f"at most {cfg['TOURNAMENT_MAX_ENTRANTS']} entrants")
    bots = get_bots(body.bots)
    name = (body.name or "").strip()
    try:
        return service.create_tournament(
            session(), name=name or f"{body.format.replace('_', ' ').title()} tournament",
            format=body.format, ruleset=body.ruleset or str(cfg["MATCH_RULESET"]), bots=bots,
            deals=body.deals or int(cfg["MATCH_DEALS"]), limits=match_limits(body.limits),
            duplicate=body.duplicate, advance=body.advance, rounds=body.rounds,
            cycles=body.cycles, rated=body.rated, seed=body.seed)
    except service.TournamentError as exc:
        raise ApiError(400, exc.code, str(exc)) from None


# --- pages -----------------------------------------------------------------------------------


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


@bp.get("/tournaments")
@limited("pages")
@page("Tournaments, newest first")
def tournaments() -> str:
    s = session()
    rows = s.scalars(select(Tournament).order_by(Tournament.id.desc()).limit(100)).all()
    return render_template("tournaments.html", items=summaries(s, rows))


def _entrant_choices() -> tuple[list[Any], bool]:
    """The bots the form offers (``id`` and ``name``: columns, not 256 whole bots with
    their info documents decoded): at most ``TOURNAMENT_MAX_ENTRANTS``, the highest rated
    (classic family) first, then unrated bots by id, listed by name; and whether there are
    more (the API takes any bot ids).  A form of 10,000 checkboxes would be neither usable
    nor cheap.

    Two statements rather than one outer join ordered ``rating DESC NULLS LAST``: that
    order has no index, so the join sorted every bot on each render (100 ms at 100,000
    bots); the rated bots come off ``ix_ratings_family_rating`` read backwards and stop at
    the cap, and the unrated ones are read only when the rated ones do not fill it."""
    cap = int(current_app.config["TOURNAMENT_MAX_ENTRANTS"])
    s = session()
    rated = list(s.execute(
        select(Bot.id, Bot.name).join(Rating, Rating.bot_id == Bot.id)
        .where(Rating.family == DEFAULT_FAMILY, Bot.deleted_at.is_(None))
        .order_by(Rating.rating.desc(), Bot.id).limit(cap + 1)))
    rows = rated
    if len(rated) <= cap:
        has_rating = select(Rating.bot_id).where(Rating.bot_id == Bot.id,
                                                 Rating.family == DEFAULT_FAMILY).exists()
        rows += s.execute(select(Bot.id, Bot.name)
                          .where(Bot.deleted_at.is_(None), ~has_rating)
                          .order_by(Bot.id).limit(cap + 1 - len(rated)))
    return sorted(rows[:cap], key=lambda b: b.name), len(rows) > cap


@bp.route("/tournaments/new", methods=["GET", "POST"])
@limited("admin", methods=("POST",))
@page("Create and start a tournament: the form (GET); POST (form fields, csrf_token, "
      "admin_token) redirects to the new tournament",
      answers={200: ("text/html", "the form"), 302: (None, "to the new tournament")},
      errors={400: "the form again, with what is wrong"})
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
        "bots": [int(x) for x in f.getlist("bots")
                 if x.isascii() and x.isdigit() and len(x) < 12],  # "²".isdigit() too
    }
    errors: list[str] = []
    if not csrf_ok():
        errors.append(FORM_EXPIRED)
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
            if not (raw.isascii() and raw.isdigit()) or len(raw) > 6:
                errors.append(f"{key.title()}: a whole number, please.")
            else:
                body[key] = int(raw)
    if form["format"] != "knockout":
        body.pop("advance", None)
    if form["format"] == "round_robin":
        body.pop("rounds", None)
    tid = None
    if not errors:
        try:
            t = new_tournament(NewTournament.validate_json(body))
            s.commit()
            tid = t.id
        except ApiError as exc:
            s.rollback()
            errors.append(exc.message)
    if errors or tid is None:
        return render_template("tournament_new.html", bots=bots, more_bots=more_bots,
                               presets=presets, errors=errors, form=form), 400
    service.start(app_object(), tid)
    return redirect(url_for("tournaments.tournament_page", tournament_id=tid), code=302)


def _tournament_context(t: Tournament, p: dict[str, int] | None = None,
                        tag: str | None = None) -> dict[str, Any]:
    """What the tournament page and its live fragment show.  A small tournament (at most
    ``TOURNAMENT_PAGE_TABLES`` tables in all) is drawn whole; a larger one shows one round
    (``?round=``, default the current one) and of it one page of tables (``?tables=``),
    with links to the others, and the top ``TOURNAMENT_PAGE_STANDINGS`` of the standings:
    the page's size and its statements do not grow with the entrants.  ``p`` and ``tag``:
    the tournament's :func:`progress` and :func:`live_tag`, when the caller read them.

    Not :func:`tournament_json`: of it the page shows the progress and the number of
    entrants (every entrant has a row in the standings), and it read the entrants with their
    names and counted the matches again (three statements)."""
    s = session()
    cfg = current_app.config
    per_page = int(cfg["TOURNAMENT_PAGE_TABLES"])
    read = read_for_page(s, t)  # the bracket's and the standings' reading, once
    sizes = read.sizes()
    whole = sum(sizes.values()) <= per_page
    nav: dict[str, Any] | None = None
    if whole:
        bracket = bracket_json(s, t, read=read)
    else:
        number = arg_int("round")
        if number not in sizes:
            number = t.current_round if t.current_round in sizes else min(sizes)
        pages = max(1, -(-sizes[number] // per_page))
        page = min(max(1, arg_int("tables") or 1), pages)
        bracket = bracket_json(s, t, only_round=number,
                               tables=slice((page - 1) * per_page, page * per_page), read=read)
        nav = {"round": number, "rounds": list(sizes), "page": page, "pages": pages,
               "tables": sizes[number], "first": (page - 1) * per_page + 1,
               "last": min(page * per_page, sizes[number])}
    # The top rows only, as JSON items (the page shows 64 of 256); one row per entrant.
    standings = standings_json(s, t, read, top=int(cfg["TOURNAMENT_PAGE_STANDINGS"]))
    standings_total = len(read.seeds)
    layout = bracket_layout(bracket if whole else {**bracket, "round_sizes": None},
                            connectors=t.format == "knockout" and whole)
    if p is None:
        p = progress(s, t)
    live_args = {} if nav is None else {"round": nav["round"], "tables": nav["page"]}
    drawn = bracket_svg(layout, match_href=url_for("matches.match_page", match_id=1)[:-1],
                        bot_href=bot_href(1)[:-1]) if bracket["rounds"] else None
    return {"t": t, "entrants": standings_total, "bracket": bracket, "standings": standings,
            "standings_total": standings_total, "bracket_svg": drawn,
            "standings_rows": standings_rows_html(standings, t.format == "knockout"),
            "progress": p, "total": sum(p.values()), "nav": nav,
            "tag": live_tag(s, t, p) if tag is None else tag,
            "live_url": url_for("tournaments.tournament_live", tournament_id=t.id,
                                **live_args)}


WINNER = ' class="winner"'


def standings_rows_html(standings: dict[str, Any], knockout: bool) -> Markup:
    """The standings table's rows, as the ``_tournament_live.html`` loop wrote them (byte for
    byte: its whitespace too; every cell but the bot's link is a number).  Python, not a
    Jinja loop: 64 rows of ten cells were a third of a 256-entrant page's render."""
    out = []
    winner = standings["final"]
    for x in standings["items"]:
        if knockout:
            place = x["place_in_round"]
            first = (f'<td class="num">{x["round_reached"]}</td><td class="num">'
                     f'{"" if place is None else place}</td>')
            points = buchholz = byes = ""
        else:
            first = ""
            points = f'<td class="num strong">{round(x["points"], 1)}</td>'
            buchholz = f'<td class="num muted">{round(x["buchholz"], 1)}</td>'
            byes = f'<td class="num">{x["byes"]}</td>'
        out.append(f'\n    <tr{WINNER if winner else ""}>\n'
                   f'      <td class="num rank">{x["rank"]}</td>\n'
                   f'      <td>{bot_link_html(x["bot"]["id"], x["bot"]["name"])}</td>\n'
                   f'      <td class="num muted">{x["seed"]}</td>\n'
                   f'      {first}\n      {points}\n'
                   f'      <td class="num">{round(x["score"], 1)}</td>\n'
                   f'      {buchholz}\n      <td class="num">{x["wins"]}</td>\n'
                   f'      <td class="num{" warn" if x["strikes"] else ""}">'
                   f'{x["strikes"]}</td>\n'
                   f'      <td class="num">{x["tables"]}</td>\n'
                   f'      {byes}\n    </tr>\n  ')
        winner = False
    return Markup("".join(out))


def _render_key(tournament_id: int, tag: str) -> tuple[Any, ...]:
    cfg = current_app.config
    return (str(cfg["DATABASE_URL"]), cfg["TOURNAMENT_PAGE_TABLES"],
            cfg["TOURNAMENT_PAGE_STANDINGS"], tournament_id, tag, request.args.get("round"),
            request.args.get("tables"))


@bp.get("/tournaments/<id:tournament_id>")
@page("A tournament: bracket picture or standings, updating live (?round=, ?tables= for one "
      "page of a large one)", errors={404: "no such tournament"})
def tournament_page(tournament_id: int) -> tuple[str, int] | str | Response:
    s = session()
    t = s.get(Tournament, tournament_id)
    if t is None:
        return page_not_found(f"tournament {tournament_id}")
    p = progress(s, t)
    tag = live_tag(s, t, p)
    return TOURNAMENT_RENDERS.get(("page", *_render_key(t.id, tag)), lambda: render_template(
        "tournament.html", **_tournament_context(t, p, tag)))


@bp.get("/tournaments/<id:tournament_id>/live")
@page("The live part of the tournament page (an HTML fragment with an ETag: 304 while "
      "nothing changed)", answers={200: ("text/html", "the fragment"),
                                   304: (None, "unchanged")},
      errors={404: "no such tournament"})
def tournament_live(tournament_id: int) -> Response:
    """The fragment, or 304 while its tag is the one the poll sends: a poll whose answer is
    unchanged or already rendered costs one statement (:func:`live_state`: the tag and the
    state, without loading the tournament), as fresh as the database."""
    s = session()
    found = live_state(s, tournament_id)
    if found is None:
        return page_not_found(f"tournament {tournament_id}")
    tag, state = found
    if tag in [x.strip() for x in request.headers.get("If-None-Match", "").split(",")]:
        resp = Response(status=304)
    else:

        def render() -> str:
            t = get_tournament(tournament_id)  # loaded only to render
            return render_template("_tournament_live.html", **_tournament_context(t, tag=tag))

        resp = Response(TOURNAMENT_RENDERS.get(("live", *_render_key(tournament_id, tag)),
                                               render))
    resp.headers["ETag"] = tag
    resp.headers["Cache-Control"] = "no-cache"
    resp.headers["X-Tournament-State"] = state
    return resp


# --- JSON ------------------------------------------------------------------------------------


def _created(s: Session, t: Tournament) -> Response:
    resp = jsonify(tournament_json(s, t))
    resp.status_code = 201
    resp.headers["Location"] = url_for("tournaments.show", tournament_id=t.id)
    return resp


@bp.post("/api/tournaments")
@limited("admin")
@idempotent
@operation("Create a tournament (operator): format, rule set, deals per match, limits, "
           "entrants; optionally start it", {201: (out.Tournament, "created")},
           body=NewTournament, auth="admin",
           errors={400: "malformed, or a tournament that cannot be made (too few entrants, a "
                        "bad advance count...)", 404: "no such bot"})
def create() -> Response:
    require_admin()
    body = NewTournament.from_body()
    t = new_tournament(body)
    start_now = body.start
    s = session()
    s.flush()
    tid = t.id
    resp = _created(s, t)
    idempotency.commit(s, resp)  # the tournament and its response, together
    if start_now:
        service.start(app_object(), tid)
        s.expire_all()
        resp = idempotency.commit(s, _created(s, get_tournament(tid)))  # now running
    return resp


@bp.get("/api/tournaments")
@limited("pages")
@operation("List tournaments, newest first",
           {200: (out.Page[out.Tournament], "a page of tournaments")}, query=TournamentsQuery)
def index() -> Response:
    query = from_query(TournamentsQuery)
    stmt = select(Tournament).options(*NOT_SHOWN).order_by(Tournament.id.desc())
    if query.state is not None:
        stmt = stmt.where(Tournament.state == query.state)
    return paginate(stmt, query, lambda t: t,
                    render_all=lambda rows: tournaments_json(session(), rows))


@bp.get("/api/tournaments/<id:tournament_id>")
@operation("A tournament: settings, entrants and seeds, progress",
           {200: (out.Tournament, "the tournament")}, errors={404: "no such tournament"})
def show(tournament_id: int) -> Response:
    return jsonify(tournament_json(session(), read_tournament(tournament_id)))


STEP_ANSWERS: Answers = {200: (out.Tournament, "the tournament, with a report")}
STEP_ERRORS = {404: "no such tournament",
               409: "the tournament is not in a state that allows this"}

Step = Callable[[Flask, int], service.AdvanceReport | None]
"""An operator step of :mod:`arena.tournaments.service`: ``start``, ``advance``, ``cancel``."""


def _run_operator_step(tournament_id: int, step: Step) -> Response:
    """The body of every operator step: the tournament (404), no transaction held while the
    step runs, its refusal as a 409, then the tournament as it is now with the step's report
    (an empty one for a step that reports nothing)."""
    require_admin()
    Empty.from_body(optional=True)
    get_tournament(tournament_id)
    s = session()
    s.rollback()  # hold no transaction (on SQLite: no lock) while the step runs
    try:
        report = step(app_object(), tournament_id)
    except service.TournamentError as exc:
        raise ApiError(409, exc.code, str(exc)) from None
    if report is None:  # cancel reports nothing
        report = service.AdvanceReport()
    t = get_tournament(tournament_id)
    s.refresh(t)
    body = tournament_json(s, t)
    body["report"] = {"opened_rounds": report.opened_rounds,
                      "closed_rounds": report.closed_rounds,
                      "new_matches": report.new_matches, "finished": report.finished}
    return jsonify(body)


def _add_operator_step_route(name: str, step: Step, summary: str) -> None:
    """``POST /api/tournaments/<id>/<name>``: an operator's call (admin token, counted as
    one, idempotent), documented with ``summary``, that runs ``step``.  The view's name,
    hence its endpoint (``tournaments.<name>``), is ``name``."""

    def view(tournament_id: int) -> Response:
        return _run_operator_step(tournament_id, step)

    view.__name__ = view.__qualname__ = name
    documented = operation(summary, STEP_ANSWERS, body=Empty, body_required=False,
                           auth="admin", errors=STEP_ERRORS)(view)
    bp.post(f"/api/tournaments/<id:tournament_id>/{name}")(
        limited("admin")(idempotent(documented)))


_add_operator_step_route("start", service.start,
                         "Start (operator): seed by Elo, schedule, open round 1")
_add_operator_step_route("advance", service.advance,
                         "Run the idempotent advance step now (operator; the workers and the "
                         "clock run it anyway)")
_add_operator_step_route("cancel", service.cancel,
                         "Cancel (operator); matches already queued still play")


@bp.get("/api/tournaments/<id:tournament_id>/standings")
@limited("pages")
@operation("Standings with every tie-break key", {200: (out.Standings, "standings")},
           errors={404: "no such tournament"})
def standings(tournament_id: int) -> Response:
    return jsonify(standings_json(session(), read_tournament(tournament_id)))


@bp.get("/api/tournaments/<id:tournament_id>/bracket")
@limited("pages")
@operation("Rounds, tables, seats, matches, results and advancers", {200: (out.Bracket, "bracket")},
           errors={404: "no such tournament"})
def bracket(tournament_id: int) -> Response:
    return jsonify(bracket_json(session(), read_tournament(tournament_id)))


@bp.get("/api/tournaments/<id:tournament_id>/archive")
@limited("downloads")
@operation("Every match log of the tournament in one zip, with the standings as "
           "CSV and JSON and the bracket", {200: ("application/zip", "download")},
           errors={404: "no such tournament"})
def download(tournament_id: int) -> Response:
    t = get_tournament(tournament_id)
    resp = Response(archive(session(), t), mimetype="application/zip")
    resp.headers["Content-Disposition"] = f'attachment; filename="tournament-{t.id}.zip"'
    return resp
