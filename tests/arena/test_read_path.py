"""Every page and API endpoint costs the same number of SQL statements however many rows
the database holds (no N+1, no per-row lazy load), and the lists that grow without bound
page by keyset.

The database is filled at three sizes (bots, finished matches with results and rating
events, a Swiss and a knockout tournament with that many entrants up to 256, a round robin)
and every GET route of the app is requested at each size; the statements each request
sends (an SQLAlchemy ``before_cursor_execute`` listener on the engine) must not grow with
the size.  The route table is walked from ``app.url_map``: a new GET route without an entry
here fails the test, so no page escapes the check.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, insert, select

from arena.families import family_of
from arena.models import (
    Bot,
    BotVersion,
    HealthCheck,
    Match,
    MatchResult,
    MatchSeat,
    utcnow,
)
from arena.ratings import Placement, apply_result, lock_family
from arena.storage import get_db
from arena.tournaments import service
from arena.tournaments.models import TournamentMatch
from referee import find_ruleset
from referee import log as referee_log
from referee.match import Limits, run_match
from referee.players import LocalPlayer

from .conftest import both_backends

SIZES = (12, 100, 400)
"""Bots and finished matches at each step (tournaments: that many entrants, up to 256)."""


def first_legal(request: dict[str, Any]) -> dict[str, Any]:
    return {"move": request["legal_moves"][0]["id"]}


def real_log() -> tuple[bytes, dict[str, Any]]:
    """One real match log (gzip) and its totals, shared by every seeded result."""
    rec = run_match(find_ruleset("standard"), [LocalPlayer(first_legal) for _ in range(4)],
                    seed=5, deals=1)
    doc = referee_log.to_document(rec)
    gz = gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), mtime=0)
    totals = {"totals": list(rec.totals), "forfeits": [], "notes": [], "seats": [],
              "strikes": [{"seat": 0, "deal": 0, "turn": 1, "reason": "timeout",
                           "detail": "seeded"}]}
    return gz, totals


@dataclass
class Seeded:
    bots: list[int]
    busy: int
    matches: list[int]
    swiss: int
    knockout: int
    round_robin: int


def finish_directly(app: Flask, match_id: int, log_gz: bytes, totals: dict[str, Any],
                    rng: random.Random) -> None:
    """What the finishing job writes (state, seats, result, ratings, family counter), in
    one transaction, without playing."""
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None
        now = utcnow()
        m.state, m.finished_at, m.started_at = "finished", now, now
        family = lock_family(s, m.family)
        result = MatchResult(match_id=m.id, family=m.family, created_at=now, totals=totals,
                             log_gz=log_gz)
        s.add(result)
        s.flush()
        seats = s.scalars(select(MatchSeat).where(MatchSeat.match_id == m.id)).all()
        ranks = list(range(1, len(seats) + 1))
        rng.shuffle(ranks)
        for x, r in zip(seats, ranks, strict=True):
            x.rank, x.score, x.wins, x.strikes, x.forfeited = r, 10 - r, 1, 0, False
            x.calls, x.p50_ms, x.p95_ms, x.max_ms = 10, 3.0, 9.0, 12.0
        if m.rated:
            apply_result(s, family=m.family, result_id=result.id, match_id=m.id,
                         placements=[Placement(x.bot_id, x.rank or 0) for x in seats],
                         initial=1500.0, k=32.0)
        family.results += 1


def seed(app: Flask, n: int) -> Seeded:
    rng = random.Random(n)
    log_gz, totals = real_log()
    db = get_db(app)
    now = utcnow()
    with db.begin() as s:
        s.execute(insert(Bot), [
            {"name": f"bot-{i:04d}", "url": f"http://127.0.0.1:9/{i}", "version": 1,
             "token_hash": "0" * 64, "created_at": now, "updated_at": now,
             "owner_paused": False, "health_paused": False, "health_failures": 0,
             "last_health_reason": "", "idle_since": now, "info": {"name": f"b{i}"}}
            for i in range(n)])
        bots = list(s.scalars(select(Bot.id).order_by(Bot.id)))
        s.execute(insert(BotVersion), [
            {"bot_id": b, "version": 1, "url": f"http://127.0.0.1:9/{b}", "created_at": now,
             "info": {}} for b in bots])
        versions = dict(s.execute(select(BotVersion.bot_id, BotVersion.id)).all())
        s.execute(insert(HealthCheck), [
            {"bot_id": b, "at": now, "url": "http://127.0.0.1:9/", "ok": True, "reason": ""}
            for b in bots for _ in range(3)])
        limits = Limits().to_json()
        s.execute(insert(Match), [
            {"kind": "ladder", "state": "queued", "ruleset": "standard",
             "family": family_of("standard"), "deals": 1, "seed": i, "limits": limits,
             "rated": True, "created_at": now, "queued_at": now, "attempts": 1,
             "enqueues": 1, "error": ""} for i in range(n)])
        matches = list(s.scalars(select(Match.id).order_by(Match.id)))
        busy = bots[0]
        seat_rows = []
        for m in matches:
            others = rng.sample(bots[1:], 3)
            for seat, b in enumerate([busy, *others]):
                seat_rows.append({"match_id": m, "seat": seat, "bot_id": b,
                                  "bot_version_id": versions[b]})
        s.execute(insert(MatchSeat), seat_rows)
    for m in matches:
        finish_directly(app, m, log_gz, totals, rng)
    entrants = min(n, 256)
    tournaments = {}
    for fmt, count in (("swiss", entrants), ("knockout", entrants), ("round_robin", 8)):
        with db.begin() as s:
            chosen = s.scalars(select(Bot).order_by(Bot.id).limit(count)).all()
            t = service.create_tournament(s, name=f"{fmt} cup", format=fmt, ruleset="standard",
                                          bots=chosen, deals=1, limits=Limits(), seed=n)
            tournaments[fmt] = t.id
        service.start(app, t.id)
    # Swiss: round 1 played, round 2 paired and half played (partial table results).
    tid = tournaments["swiss"]
    for number in (1, 2):
        with db.begin() as s:
            ids = list(s.scalars(select(TournamentMatch.match_id)
                                 .where(TournamentMatch.tournament_id == tid)
                                 .join(Match, Match.id == TournamentMatch.match_id)
                                 .where(Match.state == "queued").order_by(Match.id)))
        for m in ids if number == 1 else ids[: len(ids) // 2]:
            finish_directly(app, m, log_gz, totals, rng)
        service.advance(app, tid)
    return Seeded(bots, busy, matches, tournaments["swiss"], tournaments["knockout"],
                  tournaments["round_robin"])


ROUTES: dict[str, Callable[[Seeded], list[str]]] = {
    "web.home": lambda d: ["/"],
    "web.leaderboard": lambda d: ["/leaderboard", "/leaderboard?q=BOT-00"],
    "web.bot_page": lambda d: [f"/bots/{d.busy}", f"/bots/{d.bots[-1]}"],
    "web.bot_new": lambda d: ["/bots/new"],
    "web.match_page": lambda d: [f"/matches/{d.matches[-1]}"],
    "web.match_replay": lambda d: [f"/matches/{d.matches[-1]}/replay.json"],
    "web.tournaments": lambda d: ["/tournaments"],
    "web.tournament_new": lambda d: ["/tournaments/new"],
    "web.tournament_page": lambda d: [f"/tournaments/{d.swiss}", f"/tournaments/{d.knockout}",
                                      f"/tournaments/{d.round_robin}",
                                      f"/tournaments/{d.swiss}?round=1&tables=2"],
    "web.tournament_live": lambda d: [f"/tournaments/{d.swiss}/live",
                                      f"/tournaments/{d.knockout}/live"],
    "web.healthz": lambda d: ["/healthz"],
    "web.readyz": lambda d: ["/readyz"],
    "api.list_bots": lambda d: ["/api/bots", "/api/bots?limit=200"],
    "api.show_bot": lambda d: [f"/api/bots/{d.busy}"],
    "api.bot_versions": lambda d: [f"/api/bots/{d.busy}/versions"],
    "api.bot_health": lambda d: [f"/api/bots/{d.busy}/health"],
    "api.bot_rating_history": lambda d: [f"/api/bots/{d.busy}/ratings?limit=200"],
    "api.bot_matches": lambda d: [f"/api/bots/{d.busy}/matches?limit=200"],
    "api.list_families": lambda d: ["/api/families"],
    "api.leaderboard": lambda d: ["/api/ratings?limit=200"],
    "api.list_matches": lambda d: ["/api/matches?limit=200", "/api/matches?state=finished",
                                   f"/api/matches?bot={d.busy}&limit=200"],
    "api.show_match": lambda d: [f"/api/matches/{d.matches[-1]}"],
    "api.match_log": lambda d: [f"/api/matches/{d.matches[-1]}/log"],
    "api.openapi": lambda d: ["/api/openapi.json"],
    "tournaments_api.index": lambda d: ["/api/tournaments"],
    "tournaments_api.show": lambda d: [f"/api/tournaments/{d.swiss}"],
    "tournaments_api.standings": lambda d: [f"/api/tournaments/{d.swiss}/standings"],
    "tournaments_api.bracket": lambda d: [f"/api/tournaments/{d.swiss}/bracket",
                                          f"/api/tournaments/{d.knockout}/bracket"],
    "tournaments_api.download": lambda d: [f"/api/tournaments/{d.swiss}/archive"],
}
"""Every GET route (endpoint) and the URLs that exercise it."""

SIZE_BOUND_EXEMPT = {"web.match_replay", "api.match_log", "tournaments_api.download",
                     "tournaments_api.bracket", "tournaments_api.standings",
                     "tournaments_api.show", "api.openapi"}
"""Endpoints whose body legitimately grows with what they are asked for (a whole match
log, a whole tournament's archive, bracket or standings as JSON): statements are still
checked, bytes are not."""

STATEMENT_SLACK = 2
"""Statements a request may differ by between sizes without counting as growth."""

PAGE_BYTES_MAX = 200_000
"""Largest HTML/JSON body of a page at the top size (a 256-entrant tournament included)."""


@contextmanager
def counting(app: Flask) -> Iterator[list[str]]:
    statements: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = get_db(app).engine
    event.listen(engine, "before_cursor_execute", before)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", before)


def get_routes(app: Flask) -> set[str]:
    return {r.endpoint for r in app.url_map.iter_rules()
            if "GET" in (r.methods or set()) and r.endpoint != "static"}


def test_every_get_route_has_a_statement_count_check(app: Flask) -> None:
    missing = get_routes(app) - set(ROUTES)
    assert not missing, f"GET routes without a statement-count check in ROUTES: {missing}"
    assert not set(ROUTES) - get_routes(app), "ROUTES names routes that no longer exist"


def _empty(app: Flask) -> None:
    from arena.models import Base

    db = get_db(app)
    with db.begin() as s:
        for table in reversed(Base.metadata.sorted_tables):
            s.execute(table.delete())


@pytest.mark.slow
@both_backends
def test_statements_per_request_do_not_grow_with_the_rows(app: Flask) -> None:
    app.config["SITE_COUNTS_TTL_S"] = 0.0  # count the counts' statements on every hit
    client = app.test_client()
    counts: dict[str, list[int]] = {}
    sizes: dict[str, int] = {}
    for n in SIZES:
        _empty(app)
        data = seed(app, n)
        for endpoint, urls in ROUTES.items():
            for i, url in enumerate(urls(data)):
                client.get(url)  # warm: the first hit of a process loads what it caches
                with counting(app) as statements:
                    resp = client.get(url)
                assert resp.status_code == 200, (url, resp.status_code, resp.data[:300])
                key = f"{endpoint}#{i}"
                counts.setdefault(key, []).append(len(statements))
                if n == SIZES[-1] and endpoint not in SIZE_BOUND_EXEMPT \
                        and "limit=" not in url:  # a page of limit=200 rows: bounded
                    sizes[url] = len(resp.data)
    # A lazy load per row adds at least (rows at 100) - (rows at 12) statements; the slack
    # allows the one optional query of a page whose rows differ in kind (e.g. no partially
    # played table among the tables shown).
    grown = {k: v for k, v in counts.items() if max(v) - min(v) > STATEMENT_SLACK}
    assert not grown, f"statements per request grew with the rows ({SIZES}): {grown}"
    big = {u: b for u, b in sizes.items() if b > PAGE_BYTES_MAX}
    assert not big, f"pages larger than {PAGE_BYTES_MAX} bytes at {SIZES[-1]} rows: {big}"
    for key, v in sorted(counts.items()):
        print(f"{key:40} statements at {SIZES}: {v}")
