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
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response as WerkzeugResponse

from referee import preset_names

from .. import idempotency
from ..charts import bracket_layout
from ..errors import (
    ApiError,
    check_fields,
    json_object,
    optional_json_object,
    want_bool,
    want_int,
    want_str,
)
from ..idempotency import idempotent
from ..limits import limited
from ..matches import default_limits
from ..models import Bot, Rating
from ..security import is_admin
from ..storage import session
from ..tournaments import service
from ..tournaments.models import FORMATS, Tournament
from ..tournaments.present import (
    archive,
    bracket_json,
    live_tag,
    round_sizes,
    standings_json,
    summaries,
    tournament_json,
    tournaments_json,
)
from .matches import MAX_SEED, bot_ids, limits_from_json
from .plumbing import (
    FORM_EXPIRED,
    app_object,
    arg_int,
    csrf_ok,
    get_bots,
    page_not_found,
    paginate,
    require_admin,
)
from .ratings import DEFAULT_FAMILY

bp = Blueprint("tournaments", __name__)

FIELDS = {"name", "format", "ruleset", "deals", "limits", "duplicate", "advance", "rounds",
          "cycles", "rated", "seed", "bots", "start"}
NAME_MAX = 80
STATES = ("created", "running", "finished", "cancelled")


def get_tournament(tournament_id: int) -> Tournament:
    t = session().get(Tournament, tournament_id)
    if t is None:
        raise ApiError(404, "not_found", f"no tournament {tournament_id}")
    return t


def new_tournament(data: dict[str, Any]) -> Tournament:
    """Validate a creation body and add the tournament to the session (shared by the JSON
    API and the web form, which builds the same dict)."""
    cfg = current_app.config
    check_fields(data, FIELDS, {"bots", "format"})
    name = want_str(data, "name").strip() if "name" in data else ""
    if len(name) > NAME_MAX:
        raise ApiError(400, "bad_name", f"name must be at most {NAME_MAX} characters")
    fmt = want_str(data, "format")
    if fmt not in FORMATS:
        raise ApiError(400, "bad_format", f"format must be one of {', '.join(FORMATS)}")
    ruleset = want_str(data, "ruleset") if "ruleset" in data else str(cfg["MATCH_RULESET"])
    deals = want_int(data, "deals", 1, int(cfg["MATCH_MAX_DEALS"])) if "deals" in data \
        else int(cfg["MATCH_DEALS"])
    limits = limits_from_json(data["limits"]) if "limits" in data else default_limits(cfg)
    duplicate = want_bool(data, "duplicate") if "duplicate" in data else False
    advance = want_int(data, "advance", 1, 3) if "advance" in data else None
    rounds = want_int(data, "rounds", 1, 100) if "rounds" in data else None
    cycles = want_int(data, "cycles", 1, 10) if "cycles" in data else 1
    rated = want_bool(data, "rated") if "rated" in data else True
    seed = want_int(data, "seed", 0, MAX_SEED) if "seed" in data else None
    ids = bot_ids(data)
    if len(ids) > int(cfg["TOURNAMENT_MAX_ENTRANTS"]):
        raise ApiError(400, "too_many_entrants",
                       f"at most {cfg['TOURNAMENT_MAX_ENTRANTS']} entrants")
    bots = get_bots(ids)
    try:
        return service.create_tournament(
            session(), name=name or f"{fmt.replace('_', ' ').title()} tournament",
            format=fmt, ruleset=ruleset, bots=bots, deals=deals, limits=limits,
            duplicate=duplicate, advance=advance, rounds=rounds, cycles=cycles, rated=rated,
            seed=seed)
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
                              & (Rating.family == DEFAULT_FAMILY))
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
    service.start(app_object(), tid)
    return redirect(url_for("tournaments.tournament_page", tournament_id=tid), code=302)


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
        number = arg_int("round")
        if number not in sizes:
            number = t.current_round if t.current_round in sizes else min(sizes)
        pages = max(1, -(-sizes[number] // per_page))
        page = min(max(1, arg_int("tables") or 1), pages)
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
            "live_url": url_for("tournaments.tournament_live", tournament_id=t.id,
                                **live_args)}


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


# --- JSON ------------------------------------------------------------------------------------


def _created(s: Session, t: Tournament) -> Response:
    resp = jsonify(tournament_json(s, t))
    resp.status_code = 201
    resp.headers["Location"] = url_for("tournaments.show", tournament_id=t.id)
    return resp


@bp.post("/api/tournaments")
@limited("admin")
@idempotent
def create() -> Response:
    require_admin()
    data = json_object()
    t = new_tournament(data)
    start_now = want_bool(data, "start") if "start" in data else False
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
def index() -> Response:
    stmt = select(Tournament).order_by(Tournament.id.desc())
    state = request.args.get("state")
    if state is not None:
        if state not in STATES:
            raise ApiError(400, "bad_query",
                           "state must be created, running, finished or cancelled")
        stmt = stmt.where(Tournament.state == state)
    return paginate(stmt, lambda t: t, render_all=lambda rows: tournaments_json(session(), rows))


@bp.get("/api/tournaments/<id:tournament_id>")
def show(tournament_id: int) -> Response:
    return jsonify(tournament_json(session(), get_tournament(tournament_id)))


def _operator_step(tournament_id: int, step: str) -> Response:
    require_admin()
    check_fields(optional_json_object(), set())
    get_tournament(tournament_id)
    s = session()
    s.rollback()  # hold no transaction (on SQLite: no lock) while the step runs
    try:
        if step == "start":
            report = service.start(app_object(), tournament_id)
        elif step == "cancel":
            service.cancel(app_object(), tournament_id)
            report = service.AdvanceReport()
        else:
            report = service.advance(app_object(), tournament_id)
    except service.TournamentError as exc:
        raise ApiError(409, exc.code, str(exc)) from None
    t = get_tournament(tournament_id)
    s.refresh(t)
    body = tournament_json(s, t)
    body["report"] = {"opened_rounds": report.opened_rounds,
                      "closed_rounds": report.closed_rounds,
                      "new_matches": report.new_matches, "finished": report.finished}
    return jsonify(body)


@bp.post("/api/tournaments/<id:tournament_id>/start")
@limited("admin")
@idempotent
def start(tournament_id: int) -> Response:
    return _operator_step(tournament_id, "start")


@bp.post("/api/tournaments/<id:tournament_id>/advance")
@limited("admin")
@idempotent
def advance(tournament_id: int) -> Response:
    return _operator_step(tournament_id, "advance")


@bp.post("/api/tournaments/<id:tournament_id>/cancel")
@limited("admin")
@idempotent
def cancel(tournament_id: int) -> Response:
    return _operator_step(tournament_id, "cancel")


@bp.get("/api/tournaments/<id:tournament_id>/standings")
@limited("pages")
def standings(tournament_id: int) -> Response:
    return jsonify(standings_json(session(), get_tournament(tournament_id)))


@bp.get("/api/tournaments/<id:tournament_id>/bracket")
@limited("pages")
def bracket(tournament_id: int) -> Response:
    return jsonify(bracket_json(session(), get_tournament(tournament_id)))


@bp.get("/api/tournaments/<id:tournament_id>/archive")
@limited("downloads")
def download(tournament_id: int) -> Response:
    t = get_tournament(tournament_id)
    resp = Response(archive(session(), t), mimetype="application/zip")
    resp.headers["Content-Disposition"] = f'attachment; filename="tournament-{t.id}.zip"'
    return resp
