"""Matches: the match page with its turn-by-turn replay, the JSON lists and details, the log
downloads, and the operator's matches and ladder rounds.

Views write rows and enqueue jobs; only workers play (``POST /api/matches`` answers 202 with
the queued match).  The lists that grow without bound (every match, a bot's matches) are
keyset-paginated (:mod:`arena.web.pagination`) and built from column queries, so a page costs
the same few statements whatever its length (``tests/arena/test_read_path.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
from typing import Any

from flask import (
    Blueprint,
    Response,
    current_app,
    jsonify,
    render_template,
    request,
    url_for,
)
from markupsafe import Markup, escape
from sqlalchemy import Integer, Select, bindparam, case, null, select
from sqlalchemy.orm import joinedload, selectinload

from arena.core.families import storable_ruleset
from arena.core.idlists import among_bound
from arena.core.models import (
    RULESET_NAME_MAX,
    Bot,
    BotVersion,
    Match,
    MatchResult,
    MatchSeat,
    RatingEvent,
)
from arena.core.storage import session
from arena.core.tournament_models import TournamentMatch
from arena.play import deal_secrecy, reseed
from arena.play.ladder import run_round
from arena.play.matches import (
    MATCH_STATES,
    DuplicateEndpointError,
    MatchLine,
    create_match,
    default_limits,
    enqueue_match,
    find_matches,
)
from arena.play.replay import replay_frames
from arena.web import idempotency
from arena.web.errors import ApiError
from arena.web.idempotency import idempotent
from arena.web.limits import limited
from arena.web.openapi import operation, page
from arena.web.pagination import decode_cursor, encode_cursor, keyset_args, keyset_page
from arena.web.shapes import from_query
from arena.web.shapes import responses as out
from arena.web.shapes.requests import (
    CursorPaging,
    LadderRound,
    LogQuery,
    MatchesQuery,
    MatchLimits,
    NewMatch,
)
from referee import preset_names
from referee.runner import log as referee_log
from referee.runner.faults import plain_items, plain_log
from referee.runner.match import Limits
from referee.wire.text import stored_json

from .plumbing import (
    ago_filter,
    app_object,
    bot_link_html,
    get_bots,
    get_or_404,
    iso,
    page_not_found,
    require_admin,
    state_badge_html,
)

bp = Blueprint("matches", __name__)



def seats_with_bots() -> Any:
    """Loader option: a match's seats with their bots, in one more query for any number of
    matches (never one lazy query per row)."""
    return selectinload(Match.seats).joinedload(MatchSeat.bot)


def seats_loaded() -> Any:
    """Loader option: every seat of the matches with its bot and bot version, in one more
    query for a whole page."""
    return selectinload(Match.seats).options(joinedload(MatchSeat.bot),
                                            joinedload(MatchSeat.bot_version))


def match_limits(given: MatchLimits | None) -> Limits:
    """A match's (or a tournament's) limits: what the body leaves out is the default."""
    base = default_limits(current_app.config)
    if given is None:
        return base
    return dataclasses.replace(base, **given.model_dump(exclude_none=True))


# --- JSON renderings -------------------------------------------------------------------------


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


def matches_page(kind: str, ids_stmt: Select[Any], limit: int | None) -> Response:
    """One keyset page of matches, newest first: ``ids_stmt`` selects match ids in
    descending order (the caller adds the filters); this adds the cursor and the limit,
    then reads those matches and their seats in two more statements."""
    key, limit = keyset_args(kind, limit)
    id_col = ids_stmt.selected_columns[0]
    if key is not None:
        ids_stmt = ids_stmt.where(id_col < key)
    ids = list(session().scalars(ids_stmt.order_by(id_col.desc()).limit(limit + 1)))
    items = match_summaries(ids[:limit])
    return jsonify(keyset_page(kind, items, ids, limit, lambda i: i))


@functools.cache
def _summary_statements(dialect: str) -> tuple[Select[*tuple[Any, ...]], Select[*tuple[Any, ...]]]:
    """:func:`match_summaries`' two statements, built once per dialect with the ids bound
    at execution (``ids``): building them (28 columns coerced) took as long as running them.

    The seat's bot name and version are scalar subqueries, not joins: with joins PostgreSQL
    planned a page of 50 matches (200 seats) as hash joins over *every* bot and bot version
    (two sequential scans: 10-20 ms of the page's SQL at 10,000 bots, growing with the
    bots), where 400 primary-key probes take well under a millisecond.  A correlated
    subquery is run per seat whatever the statistics say."""
    name = select(Bot.name).where(Bot.id == MatchSeat.bot_id).scalar_subquery()
    version = (select(BotVersion.version).where(BotVersion.id == MatchSeat.bot_version_id)
               .scalar_subquery())
    seats = (select(MatchSeat.match_id, MatchSeat.seat, MatchSeat.bot_id, name,
                    version, MatchSeat.rank, MatchSeat.score, MatchSeat.wins,
                    MatchSeat.strikes, MatchSeat.forfeited, MatchSeat.calls,
                    MatchSeat.p50_ms, MatchSeat.p95_ms, MatchSeat.max_ms)
             .where(among_bound(dialect, MatchSeat.match_id, "ids"))
             .order_by(MatchSeat.match_id, MatchSeat.seat))
    matches = (select(Match.id, Match.kind, Match.state, Match.ruleset, Match.family,
                      Match.deals, Match.rated, Match.created_at, Match.started_at,
                      Match.finished_at).where(among_bound(dialect, Match.id, "ids")))
    return seats, matches


def match_summaries(ids: list[int]) -> list[dict[str, Any]]:
    """``match_json(m, detail=False)`` of each match, in the order of ``ids``, from two
    column queries (no ORM objects: a page of 200 matches would build 1,000 of them), their
    rows unpacked once (not read column by column by name)."""
    if not ids:
        return []
    s = session()
    seats_stmt, matches_stmt = _summary_statements(s.get_bind().dialect.name)
    seats: dict[int, list[dict[str, Any]]] = {i: [] for i in ids}
    for (match_id, seat, bot_id, name, version, rank, score, wins, strikes, forfeited,
         calls, p50_ms, p95_ms, max_ms) in s.execute(seats_stmt, {"ids": ids}):
        seats[match_id].append({
            "seat": seat, "bot": {"id": bot_id, "name": name},
            "bot_version": version, "rank": rank, "score": score,
            "wins": wins, "strikes": strikes, "forfeited": forfeited,
            "latency": {"calls": calls, "p50_ms": p50_ms, "p95_ms": p95_ms,
                        "max_ms": max_ms}})
    log_url = url_for("matches.match_log", match_id=1).rsplit("/1/", 1)
    out: dict[int, dict[str, Any]] = {}
    for (match_id, kind, state, ruleset, family, deals, rated, created_at, started_at,
         finished_at) in s.execute(matches_stmt, {"ids": ids}):
        listed = seats[match_id]
        d: dict[str, Any] = {
            "id": match_id, "kind": kind, "state": state, "ruleset": ruleset,
            "family": family, "deals": deals, "rated": rated,
            "created_at": iso(created_at), "started_at": iso(started_at),
            "finished_at": iso(finished_at), "seats": listed}
        if state == "finished":
            d["standings"] = sorted(listed, key=lambda x: (x["rank"], x["seat"]))
            d["log_url"] = f"{log_url[0]}/{match_id}/{log_url[1]}"
        out[match_id] = d
    return [out[i] for i in ids if i in out]


@functools.cache
def _log_statements() -> tuple[Select[*tuple[Any, ...]], Select[*tuple[Any, ...]]]:
    """:func:`finished_log`'s statement and the replay's seats, built once (the match bound
    at execution: ``m``).  The first reads the match's state, whether it has a result,
    whether a sibling rotation still plays its deals (:func:`deal_secrecy.in_play_sql`) and
    the log, which is not read while they play: four statements before (the match, its
    result, the deals' check, then the result's deferred log), one now."""
    match = bindparam("m", type_=Integer)
    in_play = deal_secrecy.in_play_sql(Match.id)
    found = (select(Match.state, MatchResult.id, in_play,
                    case((in_play, null()), else_=MatchResult.log_gz))
             .outerjoin(MatchResult, MatchResult.match_id == Match.id)
             .where(Match.id == match))
    seats = (select(MatchSeat.bot_id,
                    select(Bot.name).where(Bot.id == MatchSeat.bot_id).scalar_subquery())
             .where(MatchSeat.match_id == match).order_by(MatchSeat.seat))
    return found, seats


def finished_log(match_id: int, not_finished: str = "") -> bytes:
    """The stored log (gzip) of a finished match whose deals no sibling rotation still
    plays (:mod:`arena.play.deal_secrecy`); else 404 (no such match) or 409 (not finished:
    ``not_finished`` ends that message; or ``deals_in_play``)."""
    row = session().execute(_log_statements()[0], {"m": match_id}).first()
    if row is None:
        raise ApiError(404, "not_found", f"no match {match_id}")
    state, result_id, in_play, log_gz = row
    if result_id is None:
        raise ApiError(409, "not_finished", f"match {match_id} is {state}{not_finished}")
    if in_play:
        raise ApiError(409, "deals_in_play", f"match {match_id}'s deals are still being played "
                       "at its table's other rotations (a duplicate table deals the same cards "
                       "to every rotation); its log and replay open when they have finished")
    return bytes(log_gz)


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
        out["log_url"] = url_for("matches.match_log", match_id=m.id)
    if detail:
        out.update({"limits": m.limits, "attempts": m.attempts, "error": m.error})
        if not deal_secrecy.deals_secret(session(), m):
            # The seed deals every hand: shown once no deal of the match is left to play,
            # here or at a sibling rotation of its duplicate table.  ``seed`` is the one the
            # log was dealt from (a retry deals from its own, arena.play.reseed).
            out["seed"] = reseed.shown_seed(session(), m)
            out["match_seed"] = m.seed
        if m.result is not None:
            totals = m.result.totals
            # In words also when stored before the referee wrote them so (plain_items).
            out["strikes"] = plain_items(totals.get("strikes", []), "reason", with_name=True)
            out["forfeits"] = totals.get("forfeits", [])
            out["notes"] = plain_items(totals.get("notes", []), "fault", with_name=True)
            events = session().execute(  # columns: the three shown, not whole events
                select(RatingEvent.bot_id, RatingEvent.before, RatingEvent.after)
                .where(RatingEvent.match_id == m.id).order_by(RatingEvent.bot_id))
            out["rating_changes"] = [
                {"bot_id": bot_id, "before": round(before, 2), "after": round(after, 2),
                 "delta": round(after - before, 2)}
                for bot_id, before, after in events
            ]
    return out


# --- pages -----------------------------------------------------------------------------------


@bp.get("/matches")
@limited("pages")
@page("Every match, newest first (?bot= a bot's exact name, ?ruleset= a rule set's exact "
      "name, ?state=queued|running|finished|failed; keyset pages: ?cursor= from the 'older' "
      "link)", errors={400: "a state that does not exist, or a bad cursor"})
def match_list() -> str:
    """Every match, newest first, filtered by bot (its exact name), rule set (its exact
    name) and state; keyset pages (``?cursor=`` from the "older" link;
    :func:`arena.play.matches.find_matches`).  A bot name that names no bot shows an empty list
    saying so; a state that does not exist is a 400."""
    s = session()
    cfg = current_app.config
    form = {"bot": request.args.get("bot", "").strip()[:int(cfg["BOT_NAME_MAX"])],
            "ruleset": request.args.get("ruleset", "").strip()[:RULESET_NAME_MAX],
            "state": request.args.get("state", "").strip()}
    if form["state"] and form["state"] not in MATCH_STATES:
        raise ApiError(400, "bad_query", f"state must be one of {', '.join(MATCH_STATES)}")
    token = request.args.get("cursor")
    before = None if token is None else decode_cursor(token, "match-list")
    bot = s.scalar(select(Bot).where(Bot.name == form["bot"])) if form["bot"] else None
    rows: list[MatchLine] = []
    more = False
    if bot is not None or not form["bot"]:
        rows, more = find_matches(s, bot_id=bot.id if bot is not None else None,
                                  ruleset=form["ruleset"] or None,
                                  state=form["state"] or None, before=before,
                                  limit=int(cfg["PAGE_SIZE"]))
    filters: dict[str, Any] = {k: v for k, v in form.items() if v}
    older = url_for("matches.match_list", **filters,
                    cursor=encode_cursor("match-list", rows[-1].id)) if more else None
    newest = url_for("matches.match_list", **filters) if before is not None else None
    return render_template("matches.html", rows=rows, rows_html=match_rows_html(rows),
                           form=form, bot=bot, states=MATCH_STATES,
                           presets=preset_names(), older=older, newest=newest,
                           filtered=bool(filters))


def match_rows_html(rows: list[MatchLine]) -> Markup:
    """The match list's table rows.  Python, not a Jinja loop: 50 rows of four seats each,
    every seat a link and every cell a lookup and an escape, were three quarters of the
    page's render.  The bots' names (typed by their owners) are escaped as the template
    escaped them (:func:`bot_link_html`)."""
    page_of = url_for("matches.match_page", match_id=1)[:-1]  # routed once, as bot_href
    out = []
    for m in rows:
        w = m.winner
        seats = ", ".join(
            f"<strong>{bot_link_html(x.bot_id, x.name)}</strong>"
            if w is not None and x.seat == w.seat else str(bot_link_html(x.bot_id, x.name))
            for x in m.seats)
        rated = "" if m.rated else ", unrated"
        out.append(f'\n      <tr>\n        <td><a href="{escape(page_of)}{m.id}">#{m.id}</a> '
                   f'<span class="muted small">{escape(m.kind)}{rated}</span></td>\n'
                   f'        <td>{state_badge_html(m.state)}</td>\n'
                   f'        <td class="rules" data-label="rules">{escape(m.ruleset)}</td>\n'
                   f'        <td class="seats">{seats}</td>\n'
                   f'        <td class="muted nowrap">'
                   f'{escape(ago_filter(m.finished_at or m.created_at))}</td>\n      </tr>\n    ')
    return Markup("".join(out))


@bp.get("/matches/<id:match_id>")
@page("A match: results, downloads and a turn-by-turn replay")
def match_page(match_id: int) -> tuple[str, int] | str | Response:
    s = session()
    m = s.get(Match, match_id, options=[seats_with_bots(), selectinload(Match.result)])
    if m is None:
        return page_not_found(f"match {match_id}")
    link = s.get(TournamentMatch, match_id)
    tournament = link.table.round.tournament if link is not None else None
    events = {e.bot_id: e for e in s.scalars(select(RatingEvent)
                                              .where(RatingEvent.match_id == m.id))}
    totals = m.result.totals if m.result is not None else {}
    secret = deal_secrecy.deals_secret(s, m)
    return render_template("match.html", m=m, link=link, tournament=tournament,
                           secret=secret, seed=None if secret else reseed.shown_seed(s, m),
                           events=events,
                           strikes=plain_items(totals.get("strikes", []), "reason",
                                               with_name=True),
                           notes=plain_items(totals.get("notes", []), "fault", with_name=True),
                           standings=sorted(m.seats, key=lambda x: (x.rank or 99, x.seat)))


@bp.get("/matches/<id:match_id>/replay.json")
@limited("downloads")
@operation("The replay frames of a finished match (hands, plays, latency, faults, scores "
           "after every turn), for the match page", {200: (out.Replay, "replay")},
           errors={404: "no such match", 409: "the match has not finished, or a sibling "
                   "rotation of its duplicate table still plays its deals"})
def match_replay(match_id: int) -> Response:
    """What the match page's replay draws, turn by turn (``static/replay.js``): two
    statements, the log (:func:`finished_log`) and the seats' bots by name."""
    log_gz = finished_log(match_id)
    seats = session().execute(_log_statements()[1], {"m": match_id}).all()
    doc = stored_json(gzip.decompress(log_gz))
    data = replay_frames(doc, [b for b, _ in seats], [name for _, name in seats])
    data["match_url"] = url_for("matches.match_page", match_id=match_id)
    resp = jsonify(data)
    resp.headers["Cache-Control"] = "public, max-age=3600"  # a finished match never changes
    return resp


# --- JSON ------------------------------------------------------------------------------------


@bp.get("/api/matches")
@limited("pages")
@operation("List matches, newest first", {200: (out.CursorPage[out.Match], "matches")},
           query=MatchesQuery)
def list_matches() -> Response:
    query = from_query(MatchesQuery)
    state = query.state
    if query.bot is not None:
        # ix_match_seats_bot_id_match_id (then the match's state by primary key).
        ids = select(MatchSeat.match_id).distinct().where(MatchSeat.bot_id == query.bot)
        if state is not None:
            ids = ids.join(Match, Match.id == MatchSeat.match_id).where(Match.state == state)
    else:
        # ix_matches_state_id with a state, the primary key without.
        ids = select(Match.id)
        if state is not None:
            ids = ids.where(Match.state == state)
    return matches_page("matches", ids, query.limit)


@bp.get("/api/bots/<id:bot_id>/matches")
@limited("pages")
@operation("Matches the bot sat in, newest first",
           {200: (out.CursorPage[out.Match], "matches")}, query=CursorPaging,
           errors={404: "no such bot"})
def bot_matches(bot_id: int) -> Response:
    # Whether the bot exists (a deleted one too): its id, not the whole row with its info.
    if session().scalar(select(Bot.id).where(Bot.id == bot_id)) is None:
        raise ApiError(404, "not_found", f"no bot {bot_id}")
    query = from_query(CursorPaging)
    # ix_match_seats_bot_id_match_id, read backwards from the cursor.
    return matches_page("bot-matches", select(MatchSeat.match_id).distinct()
                        .where(MatchSeat.bot_id == bot_id), query.limit)


@bp.post("/api/matches")
@limited("admin")
@idempotent
@operation("Create a match (operator); it is queued and played by a worker",
           {202: (out.Match, "queued (Location: the match)")}, body=NewMatch, auth="admin",
           errors={404: "no such bot"})
def create_match_view() -> Response:
    require_admin()
    cfg = current_app.config
    body = NewMatch.from_body()
    try:
        rules = storable_ruleset(body.ruleset or str(cfg["MATCH_RULESET"]))
    except ValueError as exc:
        raise ApiError(400, "unknown_ruleset", str(exc)) from None
    ids = body.bots
    if len(ids) != rules.players:
        raise ApiError(400, "wrong_seat_count",
                       f"{rules.name} needs {rules.players} bots, got {len(ids)}")
    if len(set(ids)) != len(ids):
        raise ApiError(400, "duplicate_bot", "a bot may sit at a table only once")
    s = session()
    bots = get_bots(ids)
    try:
        match = create_match(s, bots=bots, ruleset=rules.name,
                             deals=body.deals or int(cfg["MATCH_DEALS"]),
                             limits=match_limits(body.limits), kind="admin", seed=body.seed,
                             rated=body.rated)
    except DuplicateEndpointError:
        raise ApiError(400, "duplicate_endpoint", "two of these bots are called at the same "
                       "endpoint; one endpoint may sit in one seat of a match only") from None
    resp = jsonify(match_json(match))
    resp.status_code = 202
    resp.headers["Location"] = url_for("matches.show_match", match_id=match.id)
    idempotency.commit(s, resp)  # the match and its response, together
    enqueue_match(app_object(), match.id)
    return resp


@bp.get("/api/matches/<id:match_id>")
@operation("A match: state, standings, per-seat latency and strikes",
           {200: (out.Match, "the match")}, errors={404: "no such match"})
def show_match(match_id: int) -> Response:
    # The result joined to the match (one statement, not a second): one row at most.
    match = get_or_404(Match, match_id, "match",
                       options=[seats_loaded(), joinedload(Match.result)])
    return jsonify(match_json(match))


@bp.get("/api/matches/<id:match_id>/log")
@limited("downloads")
@operation("Download the match log (v2: seats named by bot id, no URLs), JSON or JSON Lines",
           {200: ("application/json", "the log (JSON, or JSON Lines with ?format=jsonl)")},
           query=LogQuery,
           errors={404: "no such match", 409: "the match has not finished, or a sibling "
                   "rotation of its duplicate table still plays its deals"})
def match_log(match_id: int) -> Response:
    fmt = from_query(LogQuery).format
    log_gz = finished_log(match_id, "; its log exists once it has finished")
    # Fault details in words, also in a log stored before the referee wrote them so; the
    # document is otherwise as stored (it verifies: details are not compared).
    # Strings stored before the protocol's text rule are repaired (referee.wire.text).
    doc = plain_log(stored_json(gzip.decompress(log_gz)))
    if fmt == "json":
        resp = Response(json.dumps(doc, separators=(",", ":")), mimetype="application/json")
    else:
        resp = Response(referee_log.dumps(doc, lines=True), mimetype="application/x-ndjson")
    ext = "json" if fmt == "json" else "jsonl"
    resp.headers["Content-Disposition"] = f'attachment; filename="match-{match_id}.{ext}"'
    return resp


@bp.post("/api/ladder/rounds")
@limited("admin")
@idempotent
@operation("Run one matchmaking round now (operator; the clock runs them anyway)",
           {202: (out.LadderRoundDone, "matches created")}, body=LadderRound,
           body_required=False, auth="admin")
def ladder_round() -> tuple[Response, int]:
    """The operator plays a ladder round now (the clock does it on its own schedule)."""
    require_admin()
    body = LadderRound.from_body(optional=True)
    created = run_round(app_object(), max_matches=body.max_matches)
    return jsonify({"matches": created}), 202
