"""The JSON reads of issue 20 §3 (match lists, match details, tournaments' brackets and
standings, replays) answer what they answered before they were made cheaper, and send
statements whose plans do not grow with the bots.  (Statement counts: test_read_path.py.)"""

from __future__ import annotations

import random
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from arena.core.models import Bot, Match, utcnow
from arena.core.storage import get_db
from arena.core.tournament_models import (
    Tournament,
    TournamentEntrant,
    TournamentMatch,
    TournamentRound,
)
from arena.tournaments import service
from arena.tournaments.present import KNOCKOUT_ORDER
from arena.tournaments.scoring import TIE_BREAKS

from .conftest import both_backends
from .test_read_path import finish_directly, real_log, seed

postgres_only = pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)


def selects_sent(app: Flask, url: str) -> list[tuple[str, Any]]:
    """The SELECT statements (with their parameters) one request of ``url`` sends."""
    db = get_db(app)
    sent: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            sent.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", keep)
    try:
        assert app.test_client().get(url).status_code == 200, url
    finally:
        event.remove(db.engine, "before_cursor_execute", keep)
    return sent


def whole_reads(plan: list[str], tables: tuple[str, ...]) -> list[str]:
    """The plan's steps that read one of ``tables`` other than by an index condition (a
    sequential scan, or a full index scan feeding a hash or merge join)."""
    bad = []
    for i, line in enumerate(plan):
        if not any(f" on {t} " in f"{line} " for t in tables):
            continue
        keyed = "Index" in line and i + 1 < len(plan) and "Index Cond" in plan[i + 1]
        if not keyed:
            bad.append(line.strip())
    return bad


@postgres_only
def test_match_lists_read_seat_bots_by_key_whatever_the_planner_prefers(app: Flask) -> None:
    """A page of matches (JSON or HTML) names each seat's bot and version by primary key,
    one probe per seat.  Joined instead, PostgreSQL planned the page (at 10,000 bots) as
    hash joins over every bot and every bot version: two sequential scans per page, 10-20
    ms growing with the bots.  Here the nested loop is priced out (``enable_nestloop =
    off``), as the row estimates priced it out at that size: a join then reads the tables
    whole, a per-seat subquery still by key."""
    data = seed(app, 12)
    db = get_db(app)
    checked = 0
    for url in ("/api/matches", "/api/matches?state=finished", f"/api/matches?bot={data.busy}",
                f"/api/bots/{data.busy}/matches", "/matches", "/matches?state=finished",
                "/matches?bot=bot-0000"):  # (the JSON lists, then the HTML ones)
        for statement, parameters in selects_sent(app, url):
            if "match_seats" not in statement or "bots" not in statement:
                continue
            with db.engine.connect() as conn:
                conn.exec_driver_sql("SET enable_nestloop = off")
                plan = [row[0] for row in conn.exec_driver_sql("EXPLAIN " + statement,
                                                               parameters)]
                conn.rollback()
            assert not whole_reads(plan, ("bots", "bot_versions")), (url, statement, plan)
            checked += 1
    assert checked == 7



@both_backends
def test_a_bots_matches_need_the_bot_deleted_or_not(app: Flask) -> None:
    """The bot is looked up by id only (not loaded whole): a deleted bot's matches are still
    listed, an id that names no bot is the 404 it was."""
    data = seed(app, 12)
    client = app.test_client()
    with get_db(app).begin() as s:
        bot = s.get(Bot, data.busy)
        assert bot is not None
        bot.deleted_at = utcnow()
    listed = client.get(f"/api/bots/{data.busy}/matches").get_json()["items"]
    assert listed and all(any(x["bot"]["id"] == data.busy for x in m["seats"]) for m in listed)
    r = client.get("/api/bots/999999/matches")
    assert r.status_code == 404
    assert r.get_json()["error"] == {"code": "not_found", "message": "no bot 999999"}

# --- brackets and standings ------------------------------------------------------------------


def plain_bracket(s: Session, t: Tournament) -> dict[str, Any]:
    """The bracket as the plain reading of the rows gives it: ORM objects, each table's
    links and matches as loaded by their relationships, a partial result from
    :func:`service.table_lines` reading each match's seats on its own, and a bot shown as
    its entrant row and its name say.  The answer's columns, shared bot cards, merged
    entrant statement and stored results must give exactly this."""
    rows = s.scalars(select(TournamentEntrant)
                     .where(TournamentEntrant.tournament_id == t.id)).all()
    seeds = {e.bot_id: e.seed or 10**6 + e.bot_id for e in rows}
    names = {e.bot_id: e.bot.name for e in rows}

    def card(b: int) -> dict[str, Any]:
        return {"id": b, "name": names.get(b, "?"), "seed": seeds.get(b)}

    rounds = []
    for rnd in s.scalars(select(TournamentRound).where(TournamentRound.tournament_id == t.id)
                         .order_by(TournamentRound.number)):
        advanced = set(rnd.advanced["bots"]) if rnd.advanced else set()
        tables = []
        for table in sorted(rnd.tables, key=lambda x: x.number):
            links = sorted(table.links, key=lambda x: x.rotation)
            matches = [{"id": x.match_id, "rotation": x.rotation,
                        "state": s.get(Match, x.match_id).state} for x in links]  # type: ignore[union-attr]
            lines: list[dict[str, Any]] | None = None
            if table.result is not None:
                lines = table.result["lines"]
            elif any(m["state"] == "finished" for m in matches):
                lines = [x.to_json() for x in service.table_lines(s, t, table, seeds)]
            tables.append({
                "number": table.number, "state": table.state,
                "seats": [card(b) for b in table.bots["bots"]], "matches": matches,
                "result": None if lines is None else [
                    {**x, "bot": card(x["bot"]), "advanced": x["bot"] in advanced}
                    for x in lines],
                "final": table.state == "done"})
        rounds.append({
            "number": rnd.number, "state": rnd.state,
            "byes": [card(b) for b in rnd.byes["bots"]], "target": rnd.target,
            "advanced": [card(b) for b in rnd.advanced["bots"]] if rnd.advanced else None,
            "table_count": len(rnd.tables), "tables": tables})
    return {"tournament": t.id, "format": t.format, "state": t.state, "seats": t.seats,
            "current_round": t.current_round, "rounds_planned": t.rounds,
            "round_sizes": None, "rounds": rounds}


def plain_standings(s: Session, t: Tournament) -> dict[str, Any]:
    """The standings as the writers compute them (ORM rounds, :func:`service.seed_map`),
    each row named by its bot."""
    items = []
    for r in service.compute_standings(s, t):
        bot = s.get(Bot, r.bot)
        items.append({**r.to_json(), "bot": {"id": r.bot,
                                              "name": bot.name if bot else "?"}})
    return {"tournament": t.id, "format": t.format, "state": t.state,
            "final": t.state == "finished",
            "order": KNOCKOUT_ORDER if t.format == "knockout" else TIE_BREAKS, "items": items}


@both_backends
def test_bracket_and_standings_equal_a_plain_reading_of_the_rows(app: Flask) -> None:
    """A Swiss tournament with round 1 closed and round 2 half played (stored results, and
    partial ones from finished matches), a knockout with round 1 closed (advancers, the
    next round drawn) and a round robin just started: the bracket and the standings the
    API answers are, key for key, what :func:`plain_bracket` and :func:`plain_standings`
    read from the rows.  An entrant whose seed was never set (an unseeded entrant sorts
    after every seeded one) is among them."""
    data = seed(app, 12)
    db = get_db(app)
    log_gz, totals = real_log()
    rng = random.Random(7)
    with db.begin() as s:
        queued = list(s.scalars(select(TournamentMatch.match_id)
                                .join(Match, Match.id == TournamentMatch.match_id)
                                .where(TournamentMatch.tournament_id == data.knockout,
                                       Match.state.in_(("queued", "running")))))
        entrant = s.scalars(select(TournamentEntrant)
                            .where(TournamentEntrant.tournament_id == data.round_robin)
                            .order_by(TournamentEntrant.bot_id)).first()
        assert entrant is not None
        entrant.seed = None
    for m in queued:
        finish_directly(app, m, log_gz, totals, rng)
    service.advance(app, data.knockout)
    client = app.test_client()
    for tid in (data.swiss, data.knockout, data.round_robin):
        bracket = client.get(f"/api/tournaments/{tid}/bracket").get_json()
        standings = client.get(f"/api/tournaments/{tid}/standings").get_json()
        with db.begin() as s:
            t = s.get(Tournament, tid)
            assert t is not None
            want = plain_bracket(s, t)
            if t.format == "knockout":
                want["round_sizes"] = bracket["round_sizes"]  # the plan: not read from rows
            assert bracket == want, tid
            assert standings == plain_standings(s, t), tid
    rounds = [r for tid in (data.swiss, data.knockout)
              for r in client.get(f"/api/tournaments/{tid}/bracket").get_json()["rounds"]]
    shapes = {(r["state"], t["result"] is not None, t["state"])
              for r in rounds for t in r["tables"]}
    assert ("done", True, "done") in shapes  # stored results
    assert ("playing", True, "playing") in shapes  # partial results
    assert ("playing", False, "playing") in shapes  # no result yet
    assert any(r["advanced"] for r in rounds)


# --- a match's log and replay ------------------------------------------------------------


@both_backends
def test_log_and_replay_answer_as_before_in_one_and_two_statements(app: Flask) -> None:
    """The log download and the replay read the match, its result, whether its deals are
    still in play and the log in one statement (the replay adds the seats' names): the
    answers and refusals are the ones of the four (five) statements they replaced."""
    data = seed(app, 12)
    client = app.test_client()
    with get_db(app).begin() as s:
        queued = s.scalar(select(Match.id).where(Match.state == "queued").limit(1))
    done = data.matches[-1]
    for url, sent in ((f"/api/matches/{done}/log", 1), (f"/matches/{done}/replay.json", 2)):
        assert len(selects_sent(app, url)) == sent, url
    replay = client.get(f"/matches/{done}/replay.json").get_json()
    with get_db(app).begin() as s:
        seats = s.get(Match, done).seats  # type: ignore[union-attr]
        assert [(x["seat"], x["bot_id"], x["name"]) for x in replay["seats"]] == [
            (x.seat, x.bot_id, x.bot.name) for x in seats]
    assert replay["match_url"] == f"/matches/{done}"
    for url, tail in ((f"/api/matches/{queued}/log", "; its log exists once it has finished"),
                      (f"/matches/{queued}/replay.json", "")):
        r = client.get(url)
        assert r.status_code == 409, url
        assert r.get_json()["error"] == {"code": "not_finished",
                                         "message": f"match {queued} is queued{tail}"}, url
    for url in ("/api/matches/999999/log", "/matches/999999/replay.json"):
        r = client.get(url)
        assert r.status_code == 404, url
        assert r.get_json()["error"] == {"code": "not_found", "message": "no match 999999"}


@both_backends
def test_tournament_answers_leave_the_frozen_standings_unread(app: Flask) -> None:
    """A finished tournament keeps its final standings in a JSON column that no answer
    shows (the standings are computed from the rounds): the API's reads do not select it,
    so a page of finished 256-entrant tournaments does not decode ~25 KB each."""
    data = seed(app, 12)
    urls = ["/api/tournaments", f"/api/tournaments/{data.swiss}",
            f"/api/tournaments/{data.swiss}/bracket", f"/api/tournaments/{data.swiss}/standings"]
    for url in urls:
        sent = [statement for statement, _ in selects_sent(app, url)
                if not statement.startswith("SELECT count(")]  # (the list's total)
        assert any("FROM tournaments" in x for x in sent), url
        assert not any("tournaments.standings" in x for x in sent), url
