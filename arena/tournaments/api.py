"""The tournament JSON API (``/api/tournaments/...``), documented in the OpenAPI document.

Creating, starting, advancing and cancelling need the operator's token; reading (standings,
bracket, the zip of every log) is public.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for
from sqlalchemy import select

from .. import idempotency
from ..api import MAX_SEED, _limits, get_bot, paginate, require_admin
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
from ..storage import session
from . import service
from .models import FORMATS, Tournament
from .present import archive, bracket_json, standings_json, tournament_json, tournaments_json

bp = Blueprint("tournaments_api", __name__, url_prefix="/api/tournaments")

FIELDS = {"name", "format", "ruleset", "deals", "limits", "duplicate", "advance", "rounds",
          "cycles", "rated", "seed", "bots", "start"}
NAME_MAX = 80


def get_tournament(tournament_id: int) -> Tournament:
    t = session().get(Tournament, tournament_id)
    if t is None:
        raise ApiError(404, "not_found", f"no tournament {tournament_id}")
    return t


def _app() -> Any:
    return current_app._get_current_object()  # type: ignore[attr-defined]


def new_tournament(data: dict[str, Any]) -> Tournament:
    """Validate a creation body and add the tournament to the session (shared with the web
    form, which builds the same dict)."""
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
    limits = _limits(data["limits"]) if "limits" in data else default_limits(cfg)
    duplicate = want_bool(data, "duplicate") if "duplicate" in data else False
    advance = want_int(data, "advance", 1, 3) if "advance" in data else None
    rounds = want_int(data, "rounds", 1, 100) if "rounds" in data else None
    cycles = want_int(data, "cycles", 1, 10) if "cycles" in data else 1
    rated = want_bool(data, "rated") if "rated" in data else True
    seed = want_int(data, "seed", 0, MAX_SEED) if "seed" in data else None
    ids = data["bots"]
    if not isinstance(ids, list) or not all(
        isinstance(b, int) and not isinstance(b, bool) for b in ids
    ):
        raise ApiError(400, "wrong_type", "bots must be a list of bot ids")
    if len(ids) > int(cfg["TOURNAMENT_MAX_ENTRANTS"]):
        raise ApiError(400, "too_many_entrants",
                       f"at most {cfg['TOURNAMENT_MAX_ENTRANTS']} entrants")
    bots = []
    for b in ids:
        if not 1 <= b <= 2**62:
            raise ApiError(404, "not_found", f"no bot {b}")
        bots.append(get_bot(b))
    try:
        return service.create_tournament(
            session(), name=name or f"{fmt.replace('_', ' ').title()} tournament",
            format=fmt, ruleset=ruleset, bots=bots, deals=deals, limits=limits,
            duplicate=duplicate, advance=advance, rounds=rounds, cycles=cycles, rated=rated,
            seed=seed)
    except service.TournamentError as exc:
        raise ApiError(400, exc.code, str(exc)) from None


@bp.post("")
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
        service.start(_app(), tid)
        s.expire_all()
        resp = idempotency.commit(s, _created(s, get_tournament(tid)))  # now running
    return resp


def _created(s: Any, t: Tournament) -> Response:
    resp = jsonify(tournament_json(s, t))
    resp.status_code = 201
    resp.headers["Location"] = url_for("tournaments_api.show", tournament_id=t.id)
    return resp


@bp.get("")
@limited("pages")
def index() -> Response:
    stmt = select(Tournament).order_by(Tournament.id.desc())
    state = request.args.get("state")
    if state is not None:
        if state not in ("created", "running", "finished", "cancelled"):
            raise ApiError(400, "bad_query",
                           "state must be created, running, finished or cancelled")
        stmt = stmt.where(Tournament.state == state)
    return paginate(stmt, lambda t: t, render_all=lambda rows: tournaments_json(session(), rows))


@bp.get("/<id:tournament_id>")
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
            report = service.start(_app(), tournament_id)
        elif step == "cancel":
            service.cancel(_app(), tournament_id)
            report = service.AdvanceReport()
        else:
            report = service.advance(_app(), tournament_id)
    except service.TournamentError as exc:
        raise ApiError(409, exc.code, str(exc)) from None
    t = get_tournament(tournament_id)
    s.refresh(t)
    body = tournament_json(s, t)
    body["report"] = {"opened_rounds": report.opened_rounds,
                      "closed_rounds": report.closed_rounds,
                      "new_matches": report.new_matches, "finished": report.finished}
    return jsonify(body)


@bp.post("/<id:tournament_id>/start")
@limited("admin")
@idempotent
def start(tournament_id: int) -> Response:
    return _operator_step(tournament_id, "start")


@bp.post("/<id:tournament_id>/advance")
@limited("admin")
@idempotent
def advance(tournament_id: int) -> Response:
    return _operator_step(tournament_id, "advance")


@bp.post("/<id:tournament_id>/cancel")
@limited("admin")
@idempotent
def cancel(tournament_id: int) -> Response:
    return _operator_step(tournament_id, "cancel")


@bp.get("/<id:tournament_id>/standings")
@limited("pages")
def standings(tournament_id: int) -> Response:
    return jsonify(standings_json(session(), get_tournament(tournament_id)))


@bp.get("/<id:tournament_id>/bracket")
@limited("pages")
def bracket(tournament_id: int) -> Response:
    return jsonify(bracket_json(session(), get_tournament(tournament_id)))


@bp.get("/<id:tournament_id>/archive")
@limited("downloads")
def download(tournament_id: int) -> Response:
    t = get_tournament(tournament_id)
    resp = Response(archive(session(), t), mimetype="application/zip")
    resp.headers["Content-Disposition"] = f'attachment; filename="tournament-{t.id}.zip"'
    return resp
