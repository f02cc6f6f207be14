"""The JSON API (``/api/...``); documented in ``/api/openapi.json`` (:mod:`arena.openapi`).

Views validate, write rows and enqueue jobs; they never run a match and never call a bot:
a submitted or changed URL is checked by a job (202 with a ``check_url`` to poll).

Authentication: ``Authorization: Bearer <token>``, the bot's owner token (shown once, at
creation) or the operator's ``ADMIN_TOKEN``.  Short lists (bots, versions, the leaderboard)
take ``page`` (from 1) and ``limit`` (up to ``API_MAX_PAGE_LIMIT``) and answer ``{"items",
"page", "limit", "total", "next_page"}``.  Lists that grow without bound (matches, a bot's
matches, rating history, health checks) are keyset-paginated (:mod:`arena.pagination`):
``limit`` and an opaque ``cursor``, answering ``{"items", "limit", "next_cursor"}``.

Every list loads its rows' related rows (seats, bots, versions, ratings) eagerly, so a page
costs the same few statements whatever its length and the size of the database
(``tests/arena/test_read_path.py`` counts them).
"""

from __future__ import annotations

import gzip
import json
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for
from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, contains_eager, joinedload, selectinload

from referee.runner import log as referee_log
from referee.runner.match import Limits

from . import bots as bot_service
from . import idempotency
from .errors import (
    ApiError,
    check_fields,
    json_object,
    optional_json_object,
    query_int,
    want_bool,
    want_int,
    want_str,
)
from .families import family_of, storable_ruleset
from .idempotency import idempotent
from .ladder import run_round
from .limits import limited
from .matches import DuplicateEndpointError, create_match, default_limits, enqueue_match
from .models import (
    Bot,
    BotVersion,
    HealthCheck,
    Match,
    MatchResult,
    MatchSeat,
    Rating,
    RatingEvent,
    RatingFamily,
    utcnow,
)
from .openapi import openapi_document
from .pagination import keyset_args, keyset_page
from .security import bearer_token, hash_token, is_admin, new_token, token_matches
from .signing import bot_secret, rotate
from .storage import session

bp = Blueprint("api", __name__, url_prefix="/api")

MAX_SEED = 2**62


# --- helpers -----------------------------------------------------------------------------


def iso(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def paginate(stmt: Select[Any], render: Any, *, render_all: Any = None) -> Response:
    """An offset page of a short list (``render`` per row, or ``render_all`` for the whole
    page at once when rows need related data loaded together)."""
    cfg = current_app.config
    page = query_int("page", 1, 1, 1_000_000)
    limit = query_int("limit", int(cfg["API_PAGE_LIMIT"]), 1, int(cfg["API_MAX_PAGE_LIMIT"]))
    s = session()
    total = s.scalar(select(func.count()).select_from(stmt.order_by(None).subquery())) or 0
    rows = s.scalars(stmt.limit(limit).offset((page - 1) * limit)).all()
    return jsonify({
        "items": render_all(rows) if render_all is not None else [render(r) for r in rows],
        "page": page,
        "limit": limit,
        "total": total,
        "next_page": page + 1 if page * limit < total else None,
    })


def get_bot(bot_id: int, *, include_deleted: bool = False) -> Bot:
    bot = session().get(Bot, bot_id)
    if bot is None or (bot.deleted_at is not None and not include_deleted):
        raise ApiError(404, "not_found", f"no bot {bot_id}")
    return bot


def get_match(match_id: int) -> Match:
    match = session().get(Match, match_id)
    if match is None:
        raise ApiError(404, "not_found", f"no match {match_id}")
    return match


def require_owner(bot: Bot) -> None:
    token = bearer_token()
    if token is None:
        raise ApiError(401, "unauthorized", "send the bot's owner token: "
                       "Authorization: Bearer <token>")
    if not (token_matches(token, bot.token_hash) or is_admin(token)):
        raise ApiError(403, "forbidden", "this token does not own this bot")


def require_admin() -> None:
    if not current_app.config["ADMIN_TOKEN"]:
        raise ApiError(403, "admin_disabled", "the admin API is disabled (no ADMIN_TOKEN)")
    token = bearer_token()
    if token is None:
        raise ApiError(401, "unauthorized", "send the admin token: Authorization: Bearer <token>")
    if not is_admin(token):
        raise ApiError(403, "forbidden", "wrong admin token")


def provisional(games: int) -> bool:
    return games < int(current_app.config["ELO_PROVISIONAL_GAMES"])


def rating_json(r: Rating) -> dict[str, Any]:
    return {"family": r.family, "rating": round(r.rating, 2), "games": r.games,
            "provisional": provisional(r.games)}


NOT_LOADED: Any = object()
"""``bot_json(check=...)`` default: the bot's admission check is looked up on its own."""


def admission_checks(bots: list[Bot]) -> dict[int, HealthCheck]:
    """The newest admission check of each bot of a list, in one statement (not one per
    bot)."""
    ids = [b.id for b in bots]
    if not ids:
        return {}
    newest = (select(func.max(HealthCheck.id))
              .where(HealthCheck.bot_id.in_(ids), HealthCheck.purpose.in_(bot_service.ADMISSION))
              .group_by(HealthCheck.bot_id))
    return {h.bot_id: h for h in session().scalars(
        select(HealthCheck).where(HealthCheck.id.in_(newest.scalar_subquery())))}


def bots_json(bots: list[Bot]) -> list[dict[str, Any]]:
    checks = admission_checks(bots)
    return [bot_json(b, check=checks.get(b.id)) for b in bots]


def bot_json(bot: Bot, *, private: bool = False, check: Any = NOT_LOADED) -> dict[str, Any]:
    ratings = bot.ratings  # eager-loaded by lists (selectinload), lazy for one bot
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
        "check": admission_json(bot, check),
        "ratings": [rating_json(r) for r in ratings],
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


def admission_json(bot: Bot, check: Any = NOT_LOADED) -> dict[str, Any] | None:
    """The newest submission / URL-change / re-check check, with the URL to poll (``check``:
    already loaded by a list, see :func:`admission_checks`)."""
    if check is NOT_LOADED:
        check = bot_service.latest_admission_check(session(), bot.id)
    if check is None:
        return None
    return {**check_json(check), "url": url_for("api.bot_check", bot_id=bot.id)}


def accepted(s: Session, bot: Bot, check: HealthCheck, body: dict[str, Any]) -> Response:
    """202: commit the change (with its stored answer when the request carries an
    ``Idempotency-Key``), then queue the check; the client polls ``check_url``.

    The check row is committed before its job is queued, so a worker always finds it; a job
    lost between the two (Redis down) is queued again by the health sweep."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    resp = jsonify({**body, "check_url": url_for("api.bot_check", bot_id=bot.id)})
    resp.status_code = 202
    resp.headers["Location"] = url_for("api.show_bot", bot_id=bot.id)
    resp.headers["Cache-Control"] = "no-store"
    idempotency.commit(s, resp)
    bot_service.enqueue_check(app, bot.id, check.id)
    return resp


def seat_json(seat: MatchSeat) -> dict[str, Any]:
    return {
        "seat": seat.seat,
        "bot": {"id": seat.bot_id, "name": seat.bot.name},
        "bot_version": seat.bot_version.version,
        "rank": seat.rank,
        "score": seat.score,
        "wins": seat.wins,
        "strikes": seat.strikes,
        "forfeited": seat.forfeited,
        "latency": {"calls": seat.calls, "p50_ms": seat.p50_ms, "p95_ms": seat.p95_ms,
                    "max_ms": seat.max_ms},
    }


def seats_loaded() -> Any:
    """Loader option: every seat of the matches with its bot and bot version, in one more
    query for a whole page."""
    return selectinload(Match.seats).options(joinedload(MatchSeat.bot),
                                            joinedload(MatchSeat.bot_version))


def matches_page(kind: str, ids_stmt: Select[Any]) -> Response:
    """One keyset page of matches, newest first: ``ids_stmt`` selects match ids in
    descending order (the caller adds the filters); this adds the cursor and the limit,
    then reads those matches and their seats in two more statements."""
    key, limit = keyset_args(kind)
    id_col = ids_stmt.selected_columns[0]
    if key is not None:
        ids_stmt = ids_stmt.where(id_col < key)
    ids = list(session().scalars(ids_stmt.order_by(id_col.desc()).limit(limit + 1)))
    items = match_summaries(ids[:limit])
    return jsonify(keyset_page(kind, items, ids, limit, lambda i: i))


def match_summaries(ids: list[int]) -> list[dict[str, Any]]:
    """``match_json(m, detail=False)`` of each match, in the order of ``ids``, from two
    column queries (no ORM objects: a page of 200 matches would build 1,000 of them)."""
    if not ids:
        return []
    s = session()
    seats: dict[int, list[dict[str, Any]]] = {i: [] for i in ids}
    for row in s.execute(
            select(MatchSeat.match_id, MatchSeat.seat, MatchSeat.bot_id, Bot.name,
                   BotVersion.version, MatchSeat.rank, MatchSeat.score, MatchSeat.wins,
                   MatchSeat.strikes, MatchSeat.forfeited, MatchSeat.calls, MatchSeat.p50_ms,
                   MatchSeat.p95_ms, MatchSeat.max_ms)
            .join(Bot, Bot.id == MatchSeat.bot_id)
            .join(BotVersion, BotVersion.id == MatchSeat.bot_version_id)
            .where(MatchSeat.match_id.in_(ids)).order_by(MatchSeat.match_id, MatchSeat.seat)):
        seats[row.match_id].append({
            "seat": row.seat, "bot": {"id": row.bot_id, "name": row.name},
            "bot_version": row.version, "rank": row.rank, "score": row.score,
            "wins": row.wins, "strikes": row.strikes, "forfeited": row.forfeited,
            "latency": {"calls": row.calls, "p50_ms": row.p50_ms, "p95_ms": row.p95_ms,
                        "max_ms": row.max_ms}})
    log_url = url_for("api.match_log", match_id=1).rsplit("/1/", 1)
    out: dict[int, dict[str, Any]] = {}
    for m in s.execute(select(Match.id, Match.kind, Match.state, Match.ruleset, Match.family,
                              Match.deals, Match.rated, Match.created_at, Match.started_at,
                              Match.finished_at).where(Match.id.in_(ids))):
        d: dict[str, Any] = {
            "id": m.id, "kind": m.kind, "state": m.state, "ruleset": m.ruleset,
            "family": m.family, "deals": m.deals, "rated": m.rated,
            "created_at": iso(m.created_at), "started_at": iso(m.started_at),
            "finished_at": iso(m.finished_at), "seats": seats[m.id]}
        if m.state == "finished":
            d["standings"] = sorted(seats[m.id], key=lambda x: (x["rank"], x["seat"]))
            d["log_url"] = f"{log_url[0]}/{m.id}/{log_url[1]}"
        out[m.id] = d
    return [out[i] for i in ids if i in out]


def match_json(m: Match, *, detail: bool = True) -> dict[str, Any]:
    seats = [seat_json(x) for x in m.seats]
    out: dict[str, Any] = {
        "id": m.id,
        "kind": m.kind,
        "state": m.state,
        "ruleset": m.ruleset,
        "family": m.family,
        "deals": m.deals,
        "rated": m.rated,
        "created_at": iso(m.created_at),
        "started_at": iso(m.started_at),
        "finished_at": iso(m.finished_at),
        "seats": seats,
    }
    if m.state == "finished":
        out["standings"] = sorted(seats, key=lambda x: (x["rank"], x["seat"]))
        out["log_url"] = url_for("api.match_log", match_id=m.id)
    if detail:
        out.update({"seed": m.seed, "limits": m.limits, "attempts": m.attempts,
                    "error": m.error})
        if m.result is not None:
            totals = m.result.totals
            out["strikes"] = totals.get("strikes", [])
            out["forfeits"] = totals.get("forfeits", [])
            out["notes"] = totals.get("notes", [])
            events = session().scalars(
                select(RatingEvent).where(RatingEvent.match_id == m.id)
                .order_by(RatingEvent.bot_id)).all()
            out["rating_changes"] = [
                {"bot_id": e.bot_id, "before": round(e.before, 2), "after": round(e.after, 2),
                 "delta": round(e.after - e.before, 2)}
                for e in events
            ]
    return out


# --- bots --------------------------------------------------------------------------------


@bp.post("/bots")
@limited("bot_submit")
@idempotent
def create_bot() -> Response:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    data = json_object()
    check_fields(data, {"name", "url"}, {"name", "url"})
    name, url = want_str(data, "name").strip(), want_str(data, "url").strip()
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
        bot, check = bot_service.submit(s, name=name, url=url, token_hash=hash_token(token))
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


@bp.get("/bots")
@limited("pages")
def list_bots() -> Response:
    status = request.args.get("status")
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
        elif status in ("pending", "rejected"):
            stmt = stmt.where(Bot.owner_paused.is_(False), Bot.check_state == (
                "pending" if status == "pending" else "failed"))
        else:
            raise ApiError(400, "bad_query",
                           "status must be active, paused, pending, rejected or unhealthy")
    return paginate(stmt.options(selectinload(Bot.ratings)), bot_json, render_all=bots_json)


@bp.get("/bots/<id:bot_id>")
def show_bot(bot_id: int) -> Response:
    bot = get_bot(bot_id)
    token = bearer_token()
    private = token is not None and (token_matches(token, bot.token_hash) or is_admin(token))
    return jsonify(bot_json(bot, private=private))


@bp.patch("/bots/<id:bot_id>")
@limited("url_change")
def update_bot(bot_id: int) -> Response:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    bot = get_bot(bot_id)
    require_owner(bot)
    data = json_object()
    check_fields(data, {"url", "paused"})
    if not data:
        raise ApiError(400, "missing_field", "give url and/or paused")
    paused = want_bool(data, "paused") if "paused" in data else None
    url = want_str(data, "url").strip() if "url" in data else None
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
    if check is not None:
        return accepted(s, bot, check, {"bot": bot_json(bot, private=True)})
    s.commit()
    return jsonify(bot_json(bot, private=True))


@bp.delete("/bots/<id:bot_id>")
def delete_bot(bot_id: int) -> tuple[str, int]:
    bot = get_bot(bot_id)
    require_owner(bot)
    bot.deleted_at = utcnow()
    bot.updated_at = bot.deleted_at
    bot.endpoint = bot.pending_endpoint = bot.pending_url = None  # free for another bot
    session().commit()
    return "", 204


def signing_secret_fields(bot: Bot) -> dict[str, Any]:
    """The bot's current signing secret, for the two answers that show it (creation and
    rotation); ``arena.signing`` derives it, nothing stores it."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    return {"signing_secret": bot_secret(app, bot),
            "signing_generation": bot.signing_generation,
            "signing_note": "keep this secret: it is shown only now.  Every request the "
                            "arena sends your bot carries X-BigTwo-Timestamp and "
                            "X-BigTwo-Signature = sha256=HMAC-SHA256(secret, timestamp + "
                            "'.' + body); see docs/protocol.md.  Rotate it with POST "
                            f"/api/bots/{bot.id}/signing-secret."}


@bp.post("/bots/<id:bot_id>/signing-secret")
@idempotent
def rotate_signing_secret(bot_id: int) -> Response:
    """A new signing secret, shown once; the old one stops working for every match and
    health check that starts from now on (a match already running finishes with it)."""
    bot = get_bot(bot_id)
    require_owner(bot)
    check_fields(optional_json_object(), set())
    rotate(current_app._get_current_object(), bot)  # type: ignore[attr-defined]
    bot.updated_at = utcnow()
    resp = jsonify({"bot_id": bot.id, **signing_secret_fields(bot)})
    resp.headers["Cache-Control"] = "no-store"
    return idempotency.commit(session(), resp)  # the rotation and its (sealed) answer


@bp.get("/bots/<id:bot_id>/check")
@limited("pages")
def bot_check(bot_id: int) -> Response:
    """The bot's newest submission / URL-change / re-check check (poll until ``done``)."""
    bot = get_bot(bot_id)
    check = bot_service.latest_admission_check(session(), bot.id)
    if check is None:
        raise ApiError(404, "not_found", f"bot {bot_id} has no check to wait for")
    resp = jsonify({**check_json(check), "bot_status": bot.status,
                    "pause_reason": bot.pause_reason if bot.health_paused else ""})
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.post("/bots/<id:bot_id>/check")
@limited("url_change")  # each check is an outbound call to the bot: limited like a URL change
@idempotent
def bot_recheck(bot_id: int) -> Response:
    """The owner asks for a check now (e.g. after fixing an unhealthy bot)."""
    bot = get_bot(bot_id)
    require_owner(bot)
    check_fields(optional_json_object(), set())  # no fields; a malformed body is still a 400
    s = session()
    check = bot_service.recheck(s, bot)
    return accepted(s, bot, check, {"bot": bot_json(bot, private=True)})


@bp.get("/bots/<id:bot_id>/versions")
@limited("pages")
def bot_versions(bot_id: int) -> Response:
    bot = get_bot(bot_id)
    token = bearer_token()
    private = token is not None and (token_matches(token, bot.token_hash) or is_admin(token))

    def render(v: BotVersion) -> dict[str, Any]:
        out = {"version": v.version, "created_at": iso(v.created_at), "info": v.info}
        if private:
            out["url"] = v.url
        return out

    stmt = select(BotVersion).where(BotVersion.bot_id == bot.id).order_by(BotVersion.version)
    return paginate(stmt, render)


@bp.get("/bots/<id:bot_id>/health")
@limited("pages")
def bot_health(bot_id: int) -> Response:
    bot = get_bot(bot_id)

    def render(h: HealthCheck) -> dict[str, Any]:
        return {"at": iso(h.at), "ok": h.ok if h.state == "done" else None,
                "state": bot_service.check_state(h), "purpose": h.purpose,
                "reason": h.reason, "describe_ms": h.describe_ms, "move_ms": h.move_ms}

    key, limit = keyset_args("health")
    stmt = select(HealthCheck).where(HealthCheck.bot_id == bot.id)
    if key is not None:
        stmt = stmt.where(HealthCheck.id < key)
    rows = list(session().scalars(stmt.order_by(HealthCheck.id.desc()).limit(limit + 1)))
    return jsonify(keyset_page("health", [render(h) for h in rows], rows, limit,
                               lambda h: h.id))


@bp.get("/bots/<id:bot_id>/ratings")
@limited("pages")
def bot_rating_history(bot_id: int) -> Response:
    bot = get_bot(bot_id, include_deleted=True)
    key, limit = keyset_args("ratings")
    stmt = select(RatingEvent).where(RatingEvent.bot_id == bot.id)
    family = request.args.get("family")
    if family is not None:
        stmt = stmt.where(RatingEvent.family == family)
    if key is not None:
        stmt = stmt.where(RatingEvent.id > key)

    def render(e: RatingEvent) -> dict[str, Any]:
        return {"match_id": e.match_id, "family": e.family, "before": e.before,
                "after": e.after, "delta": e.after - e.before, "games": e.games,
                "provisional": provisional(e.games), "at": iso(e.created_at)}

    rows = list(session().scalars(stmt.order_by(RatingEvent.id).limit(limit + 1)))
    return jsonify(keyset_page("ratings", [render(e) for e in rows], rows, limit,
                               lambda e: e.id))


@bp.get("/bots/<id:bot_id>/matches")
@limited("pages")
def bot_matches(bot_id: int) -> Response:
    bot = get_bot(bot_id, include_deleted=True)
    # ix_match_seats_bot_id_match_id, read backwards from the cursor.
    return matches_page("bot-matches", select(MatchSeat.match_id).distinct()
                      .where(MatchSeat.bot_id == bot.id))


# --- ratings -----------------------------------------------------------------------------


@bp.get("/families")
def list_families() -> Response:
    from .families import FAMILY_OF

    s = session()
    counts = {f.name: f.results for f in s.scalars(select(RatingFamily))}
    presets: dict[str, list[str]] = {}
    from referee import preset_names

    for name in preset_names():
        presets.setdefault(family_of(name), []).append(name)
    items = [{"family": f, "presets": p, "results": counts.get(f, 0)}
             for f, p in sorted(presets.items())]
    return jsonify({"items": items, "shared": FAMILY_OF})


@bp.get("/ratings")
@limited("pages")
def leaderboard() -> Response:
    family = request.args.get("family", "classic")
    stmt = (select(Rating).join(Rating.bot).options(contains_eager(Rating.bot))
            .where(Rating.family == family, Bot.deleted_at.is_(None))
            .order_by(Rating.rating.desc(), Rating.bot_id))
    page = query_int("page", 1, 1, 1_000_000)
    limit = query_int("limit", int(current_app.config["API_PAGE_LIMIT"]), 1,
                      int(current_app.config["API_MAX_PAGE_LIMIT"]))
    first_rank = (page - 1) * limit

    rows = session().scalars(stmt.limit(limit).offset(first_rank)).all()
    total = session().scalar(select(func.count()).select_from(Rating).join(Rating.bot).where(
        Rating.family == family, Bot.deleted_at.is_(None))) or 0
    items = [
        {"rank": first_rank + i + 1, "bot": {"id": r.bot_id, "name": r.bot.name,
                                             "status": r.bot.status},
         **rating_json(r)}
        for i, r in enumerate(rows)
    ]
    return jsonify({"family": family, "items": items, "page": page, "limit": limit,
                    "total": total, "next_page": page + 1 if page * limit < total else None})


# --- matches -----------------------------------------------------------------------------


@bp.get("/matches")
@limited("pages")
def list_matches() -> Response:
    state = request.args.get("state")
    if state is not None and state not in ("queued", "running", "finished", "failed"):
        raise ApiError(400, "bad_query", "state must be queued, running, finished or failed")
    if "bot" in request.args:
        bot_id = query_int("bot", 0, 1, 2**62)
        # ix_match_seats_bot_id_match_id (then the match's state by primary key).
        ids = select(MatchSeat.match_id).distinct().where(MatchSeat.bot_id == bot_id)
        if state is not None:
            ids = ids.join(Match, Match.id == MatchSeat.match_id).where(Match.state == state)
    else:
        # ix_matches_state_id with a state, the primary key without.
        ids = select(Match.id)
        if state is not None:
            ids = ids.where(Match.state == state)
    return matches_page("matches", ids)


def _limits(data: Any) -> Limits:
    base = default_limits(current_app.config)
    if not isinstance(data, dict):
        raise ApiError(400, "wrong_type", "limits must be an object")
    check_fields(data, {"deadline_ms", "time_bank_ms", "max_strikes", "call_deadline_ms"})
    return Limits(
        deadline_ms=want_int(data, "deadline_ms", 10, 60_000) if "deadline_ms" in data
        else base.deadline_ms,
        time_bank_ms=want_int(data, "time_bank_ms", 0, 600_000) if "time_bank_ms" in data
        else base.time_bank_ms,
        max_strikes=want_int(data, "max_strikes", 1, 10_000) if "max_strikes" in data
        else base.max_strikes,
        call_deadline_ms=want_int(data, "call_deadline_ms", 10, 60_000)
        if "call_deadline_ms" in data else base.call_deadline_ms,
    )


@bp.post("/matches")
@limited("admin")
@idempotent
def create_match_view() -> Response:
    require_admin()
    cfg = current_app.config
    data = json_object()
    check_fields(data, {"bots", "ruleset", "deals", "seed", "rated", "limits"}, {"bots"})
    ruleset = want_str(data, "ruleset") if "ruleset" in data else str(cfg["MATCH_RULESET"])
    try:
        rules = storable_ruleset(ruleset)
    except ValueError as exc:
        raise ApiError(400, "unknown_ruleset", str(exc)) from None
    ids = data["bots"]
    if not isinstance(ids, list) or not all(
        isinstance(b, int) and not isinstance(b, bool) for b in ids
    ):
        raise ApiError(400, "wrong_type", "bots must be a list of bot ids")
    if len(ids) != rules.players:
        raise ApiError(400, "wrong_seat_count",
                       f"{rules.name} needs {rules.players} bots, got {len(ids)}")
    if len(set(ids)) != len(ids):
        raise ApiError(400, "duplicate_bot", "a bot may sit at a table only once")
    deals = want_int(data, "deals", 1, int(cfg["MATCH_MAX_DEALS"])) if "deals" in data \
        else int(cfg["MATCH_DEALS"])
    seed = want_int(data, "seed", 0, MAX_SEED) if "seed" in data else None
    rated = want_bool(data, "rated") if "rated" in data else True
    limits = _limits(data["limits"]) if "limits" in data else default_limits(cfg)
    s = session()
    bots = []
    for b in ids:
        if not 1 <= b <= 2**62:
            raise ApiError(404, "not_found", f"no bot {b}")
        bots.append(get_bot(b))
    try:
        match = create_match(s, bots=bots, ruleset=rules.name, deals=deals, limits=limits,
                             kind="admin", seed=seed, rated=rated)
    except DuplicateEndpointError:
        raise ApiError(400, "duplicate_endpoint", "two of these bots are called at the same "
                       "endpoint; one endpoint may sit in one seat of a match only") from None
    resp = jsonify(match_json(match))
    resp.status_code = 202
    resp.headers["Location"] = url_for("api.show_match", match_id=match.id)
    idempotency.commit(s, resp)  # the match and its response, together
    enqueue_match(current_app._get_current_object(),  # type: ignore[attr-defined]
                  match.id)
    return resp


@bp.get("/matches/<id:match_id>")
def show_match(match_id: int) -> Response:
    match = session().get(Match, match_id, options=[seats_loaded(), selectinload(Match.result)])
    if match is None:
        raise ApiError(404, "not_found", f"no match {match_id}")
    return jsonify(match_json(match))


@bp.get("/matches/<id:match_id>/log")
@limited("downloads")
def match_log(match_id: int) -> Response:
    fmt = request.args.get("format", "json")
    if fmt not in ("json", "jsonl"):
        raise ApiError(400, "bad_query", "format must be json or jsonl")
    match = get_match(match_id)
    result = session().scalar(select(MatchResult).where(MatchResult.match_id == match.id))
    if result is None:
        raise ApiError(409, "not_finished", f"match {match_id} is {match.state}; "
                       "its log exists once it has finished")
    text = gzip.decompress(result.log_gz).decode()
    if fmt == "json":
        resp = Response(text, mimetype="application/json")
    else:
        resp = Response(referee_log.dumps(json.loads(text), lines=True),
                        mimetype="application/x-ndjson")
    ext = "json" if fmt == "json" else "jsonl"
    resp.headers["Content-Disposition"] = f'attachment; filename="match-{match_id}.{ext}"'
    return resp


# --- operator ----------------------------------------------------------------------------


@bp.post("/ladder/rounds")
@limited("admin")
@idempotent
def ladder_round() -> tuple[Response, int]:
    require_admin()
    data = optional_json_object()
    check_fields(data, {"max_matches"})
    limit = want_int(data, "max_matches", 1, 1000) if "max_matches" in data else None
    created = run_round(current_app._get_current_object(),  # type: ignore[attr-defined]
                        max_matches=limit)
    return jsonify({"matches": created}), 202


@bp.get("/openapi.json")
def openapi() -> Response:
    return jsonify(openapi_document())
