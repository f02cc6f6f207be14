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
import itertools
import json
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, func, insert, select, update

from arena.core.families import family_of
from arena.core.models import (
    Bot,
    BotVersion,
    Challenge,
    ChallengeOpponent,
    HealthCheck,
    Match,
    MatchResult,
    MatchSeat,
    RatingEvent,
    utcnow,
)
from arena.core.storage import get_db
from arena.core.tournament_models import TournamentMatch
from arena.play.ratings import Placement, apply_result, lock_family
from arena.routes.tournaments import TOURNAMENT_RENDERS
from arena.tournaments import service
from referee import find_ruleset
from referee.runner import log as referee_log
from referee.runner.match import Limits, run_match
from referee.wire.players import LocalPlayer

from .conftest import both_backends, both_backends_drill_on_postgres

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
    challenge: int = 0
    """A challenge that played ``matches[-1]`` (its opponents: the match's other seats)."""


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
             "last_health_reason": "", "idle_since": now, "info": {"name": f"b{i}"},
             "check_state": "passed", "endpoint": f"http://127.0.0.1:9/{i}"}
            for i in range(n)])
        bots = list(s.scalars(select(Bot.id).order_by(Bot.id)))
        s.execute(insert(BotVersion), [
            {"bot_id": b, "version": 1, "url": f"http://127.0.0.1:9/{b}", "created_at": now,
             "info": {}} for b in bots])
        versions = dict(s.execute(select(BotVersion.bot_id, BotVersion.id)).all())
        s.execute(insert(HealthCheck), [
            {"bot_id": b, "at": now, "url": "http://127.0.0.1:9/", "ok": True, "reason": "",
             "state": "done", "purpose": "submit" if i == 0 else "sweep"}
            for b in bots for i in range(3)])
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
    with db.begin() as s:  # a few tables being played now (the "live now" pages)
        # The newest queued ones, except the Swiss round's (the tests finish one of those)
        # and the busy bot's (the match list's filters need some of its queued ones).
        swiss = select(TournamentMatch.match_id).where(TournamentMatch.tournament_id == tid)
        busy_seats = select(MatchSeat.match_id).where(MatchSeat.bot_id == busy)
        running = list(s.scalars(select(Match.id).where(Match.state == "queued",
                                                        Match.id.not_in(swiss),
                                                        Match.id.not_in(busy_seats))
                                 .order_by(Match.id.desc()).limit(3)))
        s.execute(update(Match).where(Match.id.in_(running))
                  .values(state="running", started_at=utcnow()))
    with db.begin() as s:  # a challenge that played the newest match
        seats = s.scalars(select(MatchSeat).where(MatchSeat.match_id == matches[-1])
                          .order_by(MatchSeat.seat)).all()
        ch = Challenge(bot_id=seats[0].bot_id, owner=f"bot:{seats[0].bot_id}", mode="chosen",
                       ruleset="standard", deals=1, rated=False, state="started",
                       match_id=matches[-1], reason="", started_at=utcnow())
        s.add(ch)
        s.flush()
        for i, x in enumerate(seats[1:]):
            s.add(ChallengeOpponent(challenge_id=ch.id, position=i, bot_id=x.bot_id))
        challenge = ch.id
    return Seeded(bots, busy, matches, tournaments["swiss"], tournaments["knockout"],
                  tournaments["round_robin"], challenge)


ROUTES: dict[str, Callable[[Seeded], list[str]]] = {
    "site.home": lambda d: ["/"],
    "ratings.leaderboard": lambda d: ["/leaderboard", "/leaderboard?q=BOT-00"],
    "bots.bot_page": lambda d: [f"/bots/{d.busy}", f"/bots/{d.bots[-1]}"],
    "bots.bot_new": lambda d: ["/bots/new"],
    "bots.bot_welcome": lambda d: [f"/bots/{d.busy}/welcome"],
    "accounts.sign_in": lambda d: ["/account/sign-in"],
    "accounts.sign_up": lambda d: ["/account/sign-up"],
    "matches.match_page": lambda d: [f"/matches/{d.matches[-1]}"],
    "matches.match_list": lambda d: ["/matches", "/matches?state=finished",
                                     "/matches?bot=bot-0000",
                                     "/matches?bot=bot-0000&state=queued",
                                     "/matches?ruleset=standard&state=finished",
                                     "/matches?bot=nobody"],
    "bots.bot_list": lambda d: ["/bots", "/bots?q=BOT-00", "/bots?q=no-such-bot"],
    "docs.api_docs": lambda d: ["/docs/api"],
    "docs.starters": lambda d: ["/docs/starters"],
    "matches.match_replay": lambda d: [f"/matches/{d.matches[-1]}/replay.json"],
    "tournaments.tournaments": lambda d: ["/tournaments"],
    "tournaments.tournament_new": lambda d: ["/tournaments/new"],
    "tournaments.tournament_page": lambda d: [
        f"/tournaments/{d.swiss}", f"/tournaments/{d.knockout}",
        f"/tournaments/{d.round_robin}", f"/tournaments/{d.swiss}?round=1&tables=2"],
    "tournaments.tournament_live": lambda d: [f"/tournaments/{d.swiss}/live",
                                              f"/tournaments/{d.knockout}/live"],
    "live.live_page": lambda d: ["/live"],
    "live.live_json": lambda d: ["/api/live"],
    "site.healthz": lambda d: ["/healthz"],
    "site.readyz": lambda d: ["/readyz"],
    # Without METRICS_TOKEN: a 404 (tests/arena/test_metrics.py counts the scrape's own two
    # statements, an index range each over the unfinished matches).
    "metrics.scrape": lambda d: ["/metrics"],
    "bots.list_bots": lambda d: ["/api/bots", "/api/bots?limit=200"],
    "bots.show_bot": lambda d: [f"/api/bots/{d.busy}"],
    "bots.bot_versions": lambda d: [f"/api/bots/{d.busy}/versions"],
    "bots.bot_health": lambda d: [f"/api/bots/{d.busy}/health"],
    "bots.bot_check": lambda d: [f"/api/bots/{d.busy}/check"],
    "ratings.bot_rating_history": lambda d: [f"/api/bots/{d.busy}/ratings?limit=200"],
    "matches.bot_matches": lambda d: [f"/api/bots/{d.busy}/matches?limit=200"],
    "ratings.list_families": lambda d: ["/api/families"],
    "ratings.leaderboard_json": lambda d: ["/api/ratings?limit=200"],
    "matches.list_matches": lambda d: ["/api/matches?limit=200", "/api/matches?state=finished",
                                       f"/api/matches?bot={d.busy}&limit=200"],
    "matches.show_match": lambda d: [f"/api/matches/{d.matches[-1]}"],
    "matches.match_log": lambda d: [f"/api/matches/{d.matches[-1]}/log"],
    "docs.openapi": lambda d: ["/api/openapi.json"],
    "tournaments.index": lambda d: ["/api/tournaments"],
    "tournaments.show": lambda d: [f"/api/tournaments/{d.swiss}"],
    "tournaments.standings": lambda d: [f"/api/tournaments/{d.swiss}/standings"],
    "tournaments.bracket": lambda d: [f"/api/tournaments/{d.swiss}/bracket",
                                      f"/api/tournaments/{d.knockout}/bracket"],
    "tournaments.download": lambda d: [f"/api/tournaments/{d.swiss}/archive"],
    "challenges.challenge_new": lambda d: ["/challenges/new", f"/challenges/new?bot={d.busy}"],
    "challenges.challenge_page": lambda d: [f"/challenges/{d.challenge}"],
    "challenges.show": lambda d: [f"/api/challenges/{d.challenge}"],
}
"""Every GET route (endpoint) and the URLs that exercise it."""

OWNER_ONLY = {"bots.bot_calls", "bots.bot_calls_json", "accounts.my_bots",
              "accounts.account_bots", "accounts.reset", "webhooks.webhooks_page",
              "webhooks.list_webhooks", "webhooks.webhook_deliveries"}
"""GET routes only a bot's owner or an account may read (a signed-in session, the owner
token, an account token or a reset link, which the seeded bots here have none of): their
statements are counted in
``tests/arena/test_bot_calls.py::test_the_calls_cost_a_fixed_number_of_statements`` and
``tests/arena/test_accounts.py::test_my_bots_costs_a_fixed_number_of_statements`` (the
reset form reads one account) and
``tests/arena/test_webhooks.py::test_the_webhook_reads_cost_a_fixed_number_of_statements``."""

SIZE_BOUND_EXEMPT = {"matches.match_replay", "matches.match_log", "tournaments.download",
                     "tournaments.bracket", "tournaments.standings",
                     "tournaments.show", "docs.openapi", "docs.api_docs"}
"""Endpoints whose body legitimately grows with what they are asked for (a whole match
log, a whole tournament's archive, bracket or standings as JSON; the API reference, which
grows with the API, not the rows): statements are still checked, bytes are not."""

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
    missing = get_routes(app) - set(ROUTES) - OWNER_ONLY
    assert not missing, f"GET routes without a statement-count check in ROUTES: {missing}"
    assert not set(ROUTES) - get_routes(app), "ROUTES names routes that no longer exist"


def _empty(app: Flask) -> None:
    from arena.core.models import Base

    db = get_db(app)
    with db.begin() as s:
        for table in reversed(Base.metadata.sorted_tables):
            s.execute(table.delete())


@pytest.mark.drill
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
                TOURNAMENT_RENDERS.clear()  # count a full render, not a cached one
                with counting(app) as statements:
                    resp = client.get(url)
                expected = 404 if endpoint == "metrics.scrape" else 200  # (no token here)
                assert resp.status_code == expected, (url, resp.status_code, resp.data[:300])
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


# --- keyset pagination -----------------------------------------------------------------------


def walk(client: Any, url: str, cursor: str | None = None) -> list[dict[str, Any]]:
    """Every item of a keyset list, following next_cursor (from ``cursor``, if given)."""
    items: list[dict[str, Any]] = []
    sep = "&" if "?" in url else "?"
    page = client.get(url if cursor is None else f"{url}{sep}cursor={cursor}").get_json()
    items += page["items"]
    for _ in range(10_000):
        if page["next_cursor"] is None:
            break
        page = client.get(f"{url}{sep}cursor={page['next_cursor']}").get_json()
        items += page["items"]
    return items


def add_matches(app: Flask, bots: list[int], count: int) -> None:
    now = utcnow()
    with get_db(app).begin() as s:
        versions = dict(s.execute(select(BotVersion.bot_id, BotVersion.id)).all())
        for _ in range(count):
            m = Match(kind="admin", state="queued", ruleset="standard", family="classic",
                      deals=1, seed=1, limits=Limits().to_json(), rated=True, created_at=now,
                      queued_at=now, attempts=0, enqueues=0, error="")
            s.add(m)
            s.flush()
            for seat, b in enumerate(bots[:4]):
                s.add(MatchSeat(match_id=m.id, seat=seat, bot_id=b, bot_version_id=versions[b]))


@both_backends_drill_on_postgres
def test_match_lists_page_by_cursor_and_stay_stable_under_inserts(app: Flask) -> None:
    data = seed(app, 12)
    client = app.test_client()
    for url in ("/api/matches?limit=5", f"/api/bots/{data.busy}/matches?limit=5",
                f"/api/matches?bot={data.busy}&limit=5", "/api/matches?state=finished&limit=5"):
        before = [m["id"] for m in walk(client, url)]
        assert before == sorted(before, reverse=True) and len(set(before)) == len(before)
        first = client.get(url).get_json()
        assert len(first["items"]) == 5 and "total" not in first
        add_matches(app, data.bots, 3)  # newer matches arrive while the client pages
        rest = walk(client, url, first["next_cursor"])
        after = [m["id"] for m in first["items"]] + [m["id"] for m in rest]
        assert after == before, url  # nothing shown twice, nothing skipped
    with get_db(app).begin() as s:
        sat = s.scalar(select(func.count(func.distinct(MatchSeat.match_id)))
                       .where(MatchSeat.bot_id == data.busy))
    assert len(walk(client, f"/api/bots/{data.busy}/matches?limit=7")) == sat
    history = walk(client, f"/api/bots/{data.busy}/ratings?limit=5")
    with get_db(app).begin() as s:
        events = list(s.scalars(select(RatingEvent.match_id)
                                .where(RatingEvent.bot_id == data.busy).order_by(RatingEvent.id)))
    assert [e["match_id"] for e in history] == events  # oldest first, every one
    assert events[: len(data.matches)] == data.matches
    checks = walk(client, f"/api/bots/{data.busy}/health?limit=2")
    assert len(checks) == 3


# --- leaderboard ------------------------------------------------------------------------------


@both_backends_drill_on_postgres
def test_leaderboard_is_paginated_and_searchable_with_global_ranks(app: Flask) -> None:
    app.config["LEADERBOARD_PAGE_SIZE"] = 5
    data = seed(app, 12)
    client = app.test_client()
    board = client.get("/api/ratings?limit=100").get_json()["items"]
    rank_of = {e["bot"]["name"]: e["rank"] for e in board}
    order = [e["bot"]["name"] for e in board]
    assert len(order) == len(data.bots)

    def rows(html: str) -> list[tuple[int, str]]:
        import re

        return [(int(r), n) for r, n in re.findall(
            r'<td class="num rank">(\d+)</td>\s*<td><a class="bot" href="/bots/\d+">([^<]+)</a>',
            html)]

    page1 = client.get("/leaderboard").get_data(as_text=True)
    assert rows(page1) == [(i + 1, order[i]) for i in range(5)]
    assert 'rel="next"' in page1 and 'rel="prev"' not in page1
    page3 = client.get("/leaderboard?page=3").get_data(as_text=True)
    assert rows(page3) == [(i + 1, order[i]) for i in range(10, 12)]
    assert 'rel="next"' not in page3 and 'rel="prev"' in page3
    found = rows(client.get("/leaderboard?q=BOT-000").get_data(as_text=True))
    want = sorted((rank_of[n], n) for n in order if n.startswith("bot-000"))
    assert found == want[:5] and len(want) == 10  # ranks in the whole family, paginated
    found2 = rows(client.get("/leaderboard?q=BOT-000&page=2").get_data(as_text=True))
    assert found2 == want[5:10]
    for q in ("%", "_", "bot-0%", "\\"):  # wildcards are literal text
        assert rows(client.get("/leaderboard", query_string={"q": q}).get_data(
            as_text=True)) == []
    assert client.get("/leaderboard?page=999999999").status_code == 200


@both_backends
@pytest.mark.parametrize("rare_prefix_max", [2000, 0, 12], ids=["name-first", "walk", "mixed"])
def test_search_ranks_equal_the_window_over_the_family(
        app: Flask, rare_prefix_max: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search's ranks, counted for its hits only, are the ranks of a window over the
    whole family: ties in rating (by the older bot), deleted bots (never listed, nor
    counted ahead of anyone), names in any case, every page and page size; whichever plan
    the prefix takes (name first for a rare prefix, the family's ratings in order for a
    common one)."""
    from sqlalchemy import update

    from arena.core.models import Rating
    from arena.routes import ratings
    from arena.routes.ratings import BY_RANK, listed, search

    monkeypatch.setattr(ratings, "RARE_PREFIX_MAX", rare_prefix_max)

    rng = random.Random(3)
    with get_db(app).begin() as s:
        ids = []
        for i in range(90):
            b = Bot(name=f"{rng.choice(['ab', 'AB', 'Ac', 'b'])}-{i:03}", url="http://x",
                    token_hash="0" * 64)
            s.add(b)
            s.flush()
            ids.append(b.id)
            s.add(Rating(bot_id=b.id, family="classic", games=1,
                         rating=rng.choice([1480.0, 1500.0, 1500.0, 1512.5, 1530.0])
                         + (rng.random() if i % 3 == 0 else 0.0)))
            s.add(Rating(bot_id=b.id, family="other", games=1, rating=1500.0))
        s.execute(update(Bot).where(Bot.id.in_(rng.sample(ids, 15))).values(deleted_at=utcnow()))
    with get_db(app).begin() as s:
        ranked = (select(Rating.bot_id, func.rank().over(order_by=BY_RANK).label("rank"))
                  .where(listed("classic")).subquery())
        window = {b: int(r) for b, r in s.execute(select(ranked.c.bot_id, ranked.c.rank))}
        names = dict(s.execute(select(Bot.id, Bot.name).where(Bot.deleted_at.is_(None))).all())
        for q in ("ab", "AB-0", "a", "b-", "ac-01", "zz", ""):
            want = sorted((window[b], b) for b, n in names.items()
                          if n.lower().startswith(q.lower()) and b in window)
            for limit, offset in ((5, 0), (5, 5), (7, 14), (100, 0), (3, 60)):
                got = search(s, "classic", q, limit, offset)
                assert got == [(b, r) for r, b in want[offset:offset + limit]], (q, limit,
                                                                                 offset)
        assert search(s, "other", "a", 100, 0)  # another family: ties all the way
        ranks = [r for _, r in search(s, "other", "", 100, 0)]
        assert ranks == list(range(1, 76))


# --- charts and counts ------------------------------------------------------------------------


def test_sample_games_keeps_both_ends_and_the_bound() -> None:
    from arena.play.ratings import sample_games

    assert sample_games(0, 10) == []
    assert sample_games(5, 10) == [1, 2, 3, 4, 5]
    for games in (11, 199, 200, 201, 62_773):
        got = sample_games(games, 200)
        assert got[0] == 1 and got[-1] == games and len(got) <= 200
        assert got == sorted(set(got))
        gaps = [b - a for a, b in itertools.pairwise(got)]
        assert max(gaps) - min(gaps) <= 1  # evenly spaced


@pytest.mark.drill
@both_backends
def test_rating_charts_are_downsampled_server_side(app: Flask) -> None:
    app.config["CHART_POINTS"] = 40
    data = seed(app, 100)  # the busy bot has 100 rated games
    client = app.test_client()
    import re

    for url in (f"/bots/{data.busy}", "/leaderboard"):
        html = client.get(url).get_data(as_text=True)
        lines = re.findall(r'<polyline points="([^"]+)"', html)
        assert lines, url
        assert all(len(pts.split()) <= 40 for pts in lines), url
    busy = re.findall(r'<polyline points="([^"]+)"',
                      client.get(f"/bots/{data.busy}").get_data(as_text=True))[0].split()
    assert len(busy) == 40  # 39 sampled games and the starting rating
    assert busy[0].startswith("48.0,")  # x of 0 games: the left edge


@both_backends_drill_on_postgres
def test_home_counts_come_from_the_counter_and_a_short_cache(app: Flask) -> None:
    app.config["SITE_COUNTS_TTL_S"] = 3600.0
    data = seed(app, 12)
    client = app.test_client()
    import re

    def stats() -> list[str]:
        return re.findall(r'<span class="stat-n">(\d+)</span>',
                          client.get("/").get_data(as_text=True))

    with get_db(app).begin() as s:
        finished = s.scalar(select(func.count()).select_from(Match)
                            .where(Match.state == "finished"))
    first = stats()
    assert first == [str(len(data.bots)), str(finished), "3"]
    with get_db(app).begin() as s:
        s.add(Bot(name="late", url="http://127.0.0.1:9/", token_hash="0" * 64))
    assert stats()[0] == str(len(data.bots))  # cached
    app.config["SITE_COUNTS_TTL_S"] = 0.0
    assert stats()[0] == str(len(data.bots) + 1)


@both_backends
def test_home_counts_are_cached_per_app_not_per_process(app: Flask) -> None:
    """Another app of the process on the same database URL (a test's, after the database was
    emptied and seeded anew) counts for itself: CI under pytest-xdist once read the previous
    test's counts."""
    import re

    from arena import create_app

    def bots_shown(a: Flask) -> str:
        html = a.test_client().get("/").get_data(as_text=True)
        return re.findall(r'<span class="stat-n">(\d+)</span>', html)[0]

    app.config["SITE_COUNTS_TTL_S"] = 3600.0
    data = seed(app, 12)
    assert bots_shown(app) == str(len(data.bots))
    with get_db(app).begin() as s:
        s.add(Bot(name="late", url="http://127.0.0.1:9/", token_hash="0" * 64))
    other = create_app({**app.config, "SITE_COUNTS_TTL_S": 3600.0})
    assert bots_shown(other) == str(len(data.bots) + 1)
    assert bots_shown(app) == str(len(data.bots))  # its own cache, within its TTL


# --- tournament pages -------------------------------------------------------------------------


@both_backends_drill_on_postgres
def test_large_tournament_pages_show_one_round_a_page_of_tables_and_top_standings(
        app: Flask) -> None:
    app.config["TOURNAMENT_PAGE_TABLES"] = 2
    app.config["TOURNAMENT_PAGE_STANDINGS"] = 5
    data = seed(app, 12)  # Swiss: 3 tables a round, round 2 being played
    client = app.test_client()
    import re

    def tables(html: str) -> list[str]:
        return re.findall(r'class="box-title">(Table \d+)<', html)

    html = client.get(f"/tournaments/{data.swiss}").get_data(as_text=True)
    assert 'data-test="round-nav"' in html
    assert tables(html) == ["Table 1", "Table 2"]
    assert "tables 1&ndash;2 of 3" in html and "The top 5 of 12" in html
    assert len(re.findall(r'<td class="num rank">', html)) == 5
    more = client.get(f"/tournaments/{data.swiss}?round=2&tables=2").get_data(as_text=True)
    assert tables(more) == ["Table 3"]
    live = client.get(f"/tournaments/{data.swiss}/live?round=1&tables=2")
    assert tables(live.get_data(as_text=True)) == ["Table 3"]
    page = client.get(f"/tournaments/{data.swiss}?round=1")
    live_url = f'data-live-url="/tournaments/{data.swiss}/live?round=1&amp;tables=1"'
    assert live_url in page.get_data(as_text=True)
    for bad in ("?round=99", "?round=x", "?tables=999", "?tables=-1"):
        assert client.get(f"/tournaments/{data.swiss}{bad}").status_code == 200
    small = client.get(f"/tournaments/{data.round_robin}").get_data(as_text=True)
    app.config["TOURNAMENT_PAGE_TABLES"] = 100  # every round drawn whole again
    whole = client.get(f"/tournaments/{data.swiss}").get_data(as_text=True)
    assert 'data-test="round-nav"' not in whole and len(tables(whole)) == 6
    assert 'data-test="round-nav"' in small  # 8 entrants, several rounds of 2 tables


@both_backends
def test_tournament_renders_are_reused_until_something_shown_changes(app: Flask) -> None:
    data = seed(app, 12)
    client = app.test_client()
    TOURNAMENT_RENDERS.clear()
    url = f"/tournaments/{data.swiss}"
    first = client.get(url).get_data(as_text=True)
    with counting(app) as statements:
        again = client.get(url).get_data(as_text=True)
    assert again == first and len(statements) <= 3  # the tournament, its tag: no render
    finish_one_queued(app, data.swiss)
    after = client.get(url).get_data(as_text=True)
    assert after != first  # one more match played: a new render
    live = client.get(f"{url}/live").get_data(as_text=True)
    assert live in after


@both_backends
def test_a_tournament_page_reads_its_entrants_and_rounds_once(app: Flask) -> None:
    """The bracket and the standings share one reading (``read_for_page``): the entrants,
    the rounds and the tables are each read once per render, whether the bracket is drawn
    whole or one round of it (they were read twice, and the round sizes once more)."""
    data = seed(app, 12)
    client = app.test_client()
    for tables_a_page in (2, 100):  # one round a page; the whole bracket
        app.config["TOURNAMENT_PAGE_TABLES"] = tables_a_page
        TOURNAMENT_RENDERS.clear()
        with counting(app) as statements:
            assert client.get(f"/tournaments/{data.swiss}").status_code == 200
        flat = [re.sub(r"\s+", " ", x) for x in statements]
        froms = [x.split(" FROM ", 1)[1].split(" ", 1)[0] for x in flat if " FROM " in x]
        for table in ("tournament_entrants", "tournament_rounds", "tournament_tables"):
            assert froms.count(table) == 1, (tables_a_page, table, statements)


@both_backends
def test_tournament_pages_show_names_as_text(app: Flask) -> None:
    """The bracket and the standings are drawn in Python (not the template): a name is still
    text there, as the template's autoescape made it, in the page and in its live part."""
    data = seed(app, 12)
    evil = "<script>alert('x')</script>&"
    with get_db(app).begin() as s:  # names from before today's rules (they forbid these)
        for b in data.bots:
            s.execute(update(Bot).where(Bot.id == b).values(name=f"{evil}{b}"))
    client = app.test_client()
    TOURNAMENT_RENDERS.clear()
    shown = re.escape("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;")
    for url in (f"/tournaments/{data.swiss}", f"/tournaments/{data.swiss}/live",
                f"/tournaments/{data.knockout}"):
        page = client.get(url).get_data(as_text=True)
        assert evil not in page and "<script>" not in page, url
        assert len(re.findall(rf'<td><a class="bot" href="/bots/(\d+)">{shown}\1</a></td>',
                              page)) == 12, url  # the standings' rows
        # The bracket's rows: names shortened to 20 characters.
        assert page.count(">&lt;script&gt;alert(&#39;x&#39;)&lt;\u2026</text>") >= 4, url


def finish_one_queued(app: Flask, tournament_id: int) -> None:
    """Store a result for one of the tournament's queued matches, as a worker would."""
    with get_db(app).begin() as s:
        queued = s.scalar(select(TournamentMatch.match_id)
                          .join(Match, Match.id == TournamentMatch.match_id)
                          .where(TournamentMatch.tournament_id == tournament_id,
                                 Match.state == "queued").limit(1))
    log_gz, totals = real_log()
    finish_directly(app, queued, log_gz, totals, random.Random(1))


@both_backends
def test_a_live_poll_costs_one_statement_and_is_as_fresh_as_the_database(app: Flask) -> None:
    """A poll of the live fragment, answered 304 or from the rendered fragment, sends one
    statement (the tag and the state together), and its tag is :func:`live_tag`'s: it
    changes the moment a match finishes."""
    from arena.core.tournament_models import Tournament
    from arena.tournaments.present import live_tag

    data = seed(app, 12)
    client = app.test_client()
    url = f"/tournaments/{data.swiss}/live"
    first = client.get(url)
    tag = first.headers["ETag"]
    with get_db(app).begin() as s:
        t = s.get(Tournament, data.swiss)
        assert t is not None and tag == live_tag(s, t)
    with counting(app) as statements:
        unchanged = client.get(url, headers={"If-None-Match": tag})
        rendered = client.get(url)
    assert unchanged.status_code == 304 and unchanged.headers["ETag"] == tag
    assert rendered.get_data() == first.get_data()
    sent = [x for x in statements if not x.startswith("BEGIN")]  # (SQLite's transaction)
    assert len(sent) == 2, sent  # one a poll
    finish_one_queued(app, data.swiss)
    after = client.get(url, headers={"If-None-Match": tag})
    assert after.status_code == 200 and after.headers["ETag"] != tag
    with get_db(app).begin() as s:
        t = s.get(Tournament, data.swiss)
        assert t is not None and after.headers["ETag"] == live_tag(s, t)
        assert after.headers["X-Tournament-State"] == t.state
    assert client.get("/tournaments/999999/live").status_code == 404


@both_backends_drill_on_postgres
def test_a_check_poll_costs_one_statement(app: Flask) -> None:
    """``/api/bots/<id>/check`` reads the bot and its newest admission check together; a
    deleted bot or one without a check is a 404 as before."""
    from sqlalchemy import update

    data = seed(app, 12)
    client = app.test_client()
    url = f"/api/bots/{data.busy}/check"
    client.get(url)
    with counting(app) as statements:
        r = client.get(url)
    assert r.status_code == 200 and r.get_json()["bot_status"]
    sent = [x for x in statements if not x.startswith("BEGIN")]
    assert len(sent) == 1, sent
    with get_db(app).begin() as s:
        s.execute(update(Bot).where(Bot.id == data.busy).values(deleted_at=utcnow()))
        s.execute(HealthCheck.__table__.delete().where(HealthCheck.bot_id == data.bots[1]))
    assert client.get(url).status_code == 404
    assert client.get(f"/api/bots/{data.bots[1]}/check").status_code == 404
    assert client.get("/api/bots/999999/check").status_code == 404
