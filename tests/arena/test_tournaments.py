"""Tournaments through the service: API, job bodies, real workers, archive, resume after crashes.

Real sample bots over loopback HTTP, the real Redis and (``both_backends``) PostgreSQL.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import signal
import zipfile
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from sqlalchemy import func, select, update

from arena.core.models import Bot, BotVersion, Match, MatchResult
from arena.core.storage import get_db
from arena.core.tournament_models import Tournament, TournamentMatch
from arena.core.zipwriter import gzip_parts
from arena.jobs import bodies as jobs
from arena.jobs.clock import Clock
from arena.jobs.reconcile import reconcile
from arena.ops.cli import main
from arena.ops.procs import Child, descendants
from arena.tournaments import service
from referee.runner import log as referee_log

from .conftest import (
    ADMIN,
    MARKER,
    admin_headers,
    both_backends,
    both_backends_drill_on_postgres,
    register,
    submit,
    wait_for,
)


@pytest.fixture
def five_bots(client: FlaskClient, sample_bots: dict[str, str]) -> list[int]:
    names = ["random", "greedy", "planner", "random-2", "greedy-2"]
    return [register(client, n, sample_bots[n])[0] for n in names]


def create(client: FlaskClient, **body: Any) -> dict[str, Any]:
    r = client.post("/api/tournaments", json=body, headers=admin_headers())
    assert r.status_code == 201, r.get_json()
    out: dict[str, Any] = r.get_json()
    return out


def play_queued(app: Flask) -> int:
    """Play every queued match with the job body, in this process (as a worker would)."""
    played = 0
    while True:
        with get_db(app).begin() as s:
            ids = list(s.scalars(select(Match.id).where(Match.state == "queued")
                                 .order_by(Match.id)))
        if not ids:
            return played
        for match_id in ids:
            with app.app_context():
                jobs.play_match(match_id)
            played += 1


def matches_per_table(app: Flask, tid: int) -> Counter[int]:
    with get_db(app).begin() as s:
        rows = s.execute(select(TournamentMatch.table_id, func.count())
                         .where(TournamentMatch.tournament_id == tid)
                         .group_by(TournamentMatch.table_id)).all()
    return Counter(dict(rows))


# --- the whole thing, in process ---------------------------------------------------------------


@pytest.mark.drill
def test_round_robin_with_duplicate_play_to_the_end(
    app: Flask, client: FlaskClient, five_bots: list[int]
) -> None:
    t = create(client, name="RR dup", format="round_robin", bots=five_bots, deals=1,
               duplicate=True, seed=3, start=True)
    assert t["state"] == "running" and t["current_round"] == 1
    assert sorted(e["seed"] for e in t["entrants"]) == [1, 2, 3, 4, 5]
    play_queued(app)
    body = client.get(f"/api/tournaments/{t['id']}").get_json()
    assert body["state"] == "finished", body
    rounds = body["rounds"]
    # Five players, four seats: every pair meets; everyone sits out the same (or one more).
    bracket = client.get(f"/api/tournaments/{t['id']}/bracket").get_json()
    assert len(bracket["rounds"]) == rounds
    met: Counter[frozenset[int]] = Counter()
    for rnd in bracket["rounds"]:
        assert rnd["state"] == "done"
        for table in rnd["tables"]:
            ids = [b["id"] for b in table["seats"]]
            met.update(frozenset(p) for p in itertools.combinations(ids, 2))
            assert len(table["matches"]) == 4  # duplicate: one match per rotation
            assert all(m["state"] == "finished" for m in table["matches"])
            result = table["result"]
            assert [x["place"] for x in result] == [1, 2, 3, 4]
            assert sorted(x["points"] for x in result) == [0, 1, 2, 3] or \
                sum(x["points"] for x in result) == 6
            # Duplicate scores are measured against the same cards: they sum to zero.
            assert abs(sum(x["score"] for x in result)) < 0.01  # rounded to 3 places
    assert all(met[frozenset(p)] >= 1 for p in itertools.combinations(five_bots, 2))
    standings = client.get(f"/api/tournaments/{t['id']}/standings").get_json()
    assert standings["final"] is True
    assert [x["rank"] for x in standings["items"]] == [1, 2, 3, 4, 5]
    keys = [(-x["points"], -x["score"], -x["buchholz"], -x["wins"], x["strikes"], x["seed"])
            for x in standings["items"]]
    assert keys == sorted(keys)
    byes = [x["byes"] for x in standings["items"]]
    assert max(byes) - min(byes) <= 1
    # Every match of a duplicate table was played on the same deals.
    with get_db(app).begin() as s:
        for table_id, n in matches_per_table(app, t["id"]).items():
            seeds = set(s.scalars(select(Match.seed).join(
                TournamentMatch, TournamentMatch.match_id == Match.id)
                .where(TournamentMatch.table_id == table_id)))
            assert n == 4 and len(seeds) == 1


def test_archive_holds_every_log_and_the_standings(
    app: Flask, client: FlaskClient, five_bots: list[int]
) -> None:
    t = create(client, format="swiss", bots=five_bots[:4], deals=1, rounds=2, start=True)
    play_queued(app)
    r = client.get(f"/api/tournaments/{t['id']}/archive")
    assert r.status_code == 200 and r.mimetype == "application/zip"
    z = zipfile.ZipFile(io.BytesIO(r.data))
    names = z.namelist()
    prefix = f"tournament-{t['id']}/"
    logs = [n for n in names if n.startswith(prefix + "logs/")]
    with get_db(app).begin() as s:
        n_matches = s.scalar(select(func.count()).select_from(TournamentMatch)
                             .where(TournamentMatch.tournament_id == t["id"]))
    assert len(logs) == n_matches == 2
    for name in logs:
        assert referee_log.verify(json.loads(z.read(name))).ok
    # Each log's stored deflate stream is in the zip as it is: not deflated a second time.
    with get_db(app).begin() as s:
        stored = list(s.scalars(select(MatchResult.log_gz).join(
            TournamentMatch, TournamentMatch.match_id == MatchResult.match_id)
            .where(TournamentMatch.tournament_id == t["id"])))
    assert len(stored) == 2
    for log_gz in stored:
        parts = gzip_parts(log_gz)
        assert parts is not None and parts[0] in r.data
    rows = list(csv.DictReader(io.StringIO(z.read(prefix + "standings.csv").decode())))
    doc = json.loads(z.read(prefix + "standings.json"))
    assert [int(r["bot_id"]) for r in rows] == [x["bot"]["id"] for x in doc["items"]]
    assert len(rows) == 4 and rows[0]["rank"] == "1"
    # A knockout's order keys are blank outside a knockout (and absent from its JSON).
    assert rows[0]["round_reached"] == rows[0]["place_in_round"] == ""
    assert "round_reached" not in doc["items"][0]
    assert {prefix + "tournament.json", prefix + "bracket.json"} <= set(names)
    # The documents are the API's answers (read once for the standings and the bracket
    # together), indented for reading.
    for doc_name, path in (("tournament", ""), ("standings", "/standings"),
                           ("bracket", "/bracket")):
        text = z.read(f"{prefix}{doc_name}.json").decode()
        assert json.loads(text) == client.get(f"/api/tournaments/{t['id']}{path}").get_json()
        assert text.startswith('{\n  "'), text[:20]


def test_swiss_avoids_repeat_meetings_where_it_can(
    app: Flask, client: FlaskClient, bot_urls: list[str]
) -> None:
    ids = [register(client, f"bot-{i}", bot_urls[i])[0] for i in range(8)]
    t = create(client, format="swiss", bots=ids, deals=1, rounds=3, start=True)
    play_queued(app)
    bracket = client.get(f"/api/tournaments/{t['id']}/bracket").get_json()
    assert [r["state"] for r in bracket["rounds"]] == ["done"] * 3
    met: Counter[frozenset[int]] = Counter()
    for rnd in bracket["rounds"][:2]:
        for table in rnd["tables"]:
            met.update(frozenset(p) for p in itertools.combinations(
                [b["id"] for b in table["seats"]], 2))
    # Eight players at two tables of four: any second round repeats a pair at each table
    # twice over (each table takes four of the eight, at best two from each first-round
    # table).  The scheduler keeps to that minimum: four pairs met twice, none three times.
    assert max(met.values()) <= 2
    assert sum(1 for v in met.values() if v == 2) == 4


@pytest.mark.drill
def test_knockout_with_byes_advances_the_top_two(
    app: Flask, client: FlaskClient, bot_urls: list[str]
) -> None:
    ids = [register(client, f"ko-{i}", bot_urls[i])[0] for i in range(10)]
    t = create(client, format="knockout", bots=ids, deals=1, advance=2, start=True)
    # Ten entrants: round 1 is one table of the four lowest seeds (six byes), then 8, then 4.
    assert t["rounds"] == 3
    play_queued(app)
    bracket = client.get(f"/api/tournaments/{t['id']}/bracket").get_json()
    assert bracket["state"] == "finished"
    r1, r2, final = bracket["rounds"]
    assert len(r1["tables"]) == 1 and len(r1["byes"]) == 6
    assert [b["seed"] for b in r1["byes"]] == [1, 2, 3, 4, 5, 6]
    assert sorted(b["seed"] for b in r1["tables"][0]["seats"]) == [7, 8, 9, 10]
    top2 = {x["bot"]["id"] for x in r1["tables"][0]["result"] if x["place"] <= 2}
    assert {b["id"] for b in r1["advanced"]} == {b["id"] for b in r1["byes"]} | top2
    assert all(x["advanced"] == (x["place"] <= 2) for x in r1["tables"][0]["result"])
    assert len(r2["tables"]) == 2 and not r2["byes"]
    # Snake seeding: the top two seeds are at different tables.
    tables_of = {b["seed"]: i for i, tb in enumerate(r2["tables"]) for b in tb["seats"]
                 if b["seed"] is not None}
    assert tables_of.get(1) != tables_of.get(2)
    assert len(final["tables"]) == 1 and len(final["tables"][0]["seats"]) == 4
    assert {b["id"] for b in final["tables"][0]["seats"]} == {b["id"] for b in r2["advanced"]}
    standings = client.get(f"/api/tournaments/{t['id']}/standings").get_json()
    winner = final["tables"][0]["result"][0]["bot"]["id"]
    assert standings["items"][0]["bot"]["id"] == winner
    # Out in round 1: last four places.
    out_r1 = {x["bot"]["id"] for x in r1["tables"][0]["result"] if x["place"] > 2}
    assert {x["bot"]["id"] for x in standings["items"][-2:]} == out_r1
    # The keys that decide the order are in every row (issue 11), and they do decide it.
    items = standings["items"]
    place_of = {(n, x["bot"]["id"]): x["place"] for n, rnd in enumerate(bracket["rounds"], 1)
                for tb in rnd["tables"] for x in tb["result"]}
    for x in items:
        assert x["place_in_round"] == place_of[(x["round_reached"], x["bot"]["id"])]
    assert [x["round_reached"] for x in items] == [3] * 4 + [2] * 4 + [1] * 2
    assert [x["place_in_round"] for x in items[:4]] == [1, 2, 3, 4]
    assert items == sorted(items, key=lambda x: (-x["round_reached"], x["place_in_round"],
                                                 -x["score"], x["seed"]))
    assert standings["order"][:2] == ["round_reached (later first)",
                                      "place_in_round (not placed yet first)"]
    from arena.tournaments.present import standings_csv

    rows = list(csv.DictReader(io.StringIO(standings_csv(standings))))
    assert [(int(r["round_reached"]), int(r["place_in_round"])) for r in rows] == [
        (x["round_reached"], x["place_in_round"]) for x in items]


@pytest.fixture
def two_player_rules(monkeypatch: pytest.MonkeyPatch) -> str:
    """A two-player rule set the whole service can name.  No preset has two seats, so until
    :func:`referee.find_ruleset` resolves option suffixes itself, the arena's modules get a
    ``find_ruleset`` that understands ``standard+players=2``."""
    from referee import find_ruleset

    name = "standard+players=2"
    try:
        if find_ruleset(name).players == 2:
            return name
    except ValueError:
        pass

    def resolve(text: str = "standard", **overrides: Any) -> Any:
        base, _, suffix = text.partition("+")
        for item in filter(None, suffix.split(",")):
            key, _, value = item.partition("=")
            overrides[key] = int(value) if value.isdigit() else value
        return find_ruleset(base, **overrides)

    import arena.core.families
    import arena.jobs.bodies
    import arena.play.matches
    import arena.routes.matches

    for module in (arena.routes.matches, arena.core.families, arena.jobs.bodies,
                   arena.play.matches, service):
        monkeypatch.setattr(module, "find_ruleset", resolve)
    assert resolve(name).players == 2 and resolve(name).name == name
    return name


@pytest.mark.drill
def test_heads_up_bracket_for_a_two_player_rule_set(
    app: Flask, client: FlaskClient, bot_urls: list[str], two_player_rules: str
) -> None:
    ids = [register(client, f"hu-{i}", bot_urls[i])[0] for i in range(5)]
    t = create(client, format="knockout", bots=ids, deals=1, ruleset=two_player_rules,
               duplicate=True, start=True)
    assert t["seats"] == 2 and t["advance"] == 1 and t["family"] == "classic/2p"
    play_queued(app)
    bracket = client.get(f"/api/tournaments/{t['id']}/bracket").get_json()
    assert bracket["state"] == "finished"
    sizes = [sum(len(tb["seats"]) for tb in r["tables"]) + len(r["byes"])
             for r in bracket["rounds"]]
    assert sizes == [5, 4, 2]  # a bracket of 8 with three byes, then 4, then the final
    assert [b["seed"] for b in bracket["rounds"][0]["byes"]] == [1, 2, 3]
    assert sorted(b["seed"] for b in bracket["rounds"][0]["tables"][0]["seats"]) == [4, 5]
    for r in bracket["rounds"]:
        for tb in r["tables"]:
            assert len(tb["seats"]) == 2
            assert len(tb["matches"]) == 2  # duplicate heads-up: both seatings, same cards
            assert sum(x["advanced"] for x in tb["result"]) == (1 if r["target"] else 0)
    final = bracket["rounds"][-1]["tables"][0]["result"]
    standings = client.get(f"/api/tournaments/{t['id']}/standings").get_json()
    assert standings["items"][0]["bot"]["id"] == final[0]["bot"]["id"]


# --- API checks -------------------------------------------------------------------------------


def test_api_refuses_what_makes_no_tournament(
    client: FlaskClient, five_bots: list[int]
) -> None:
    def post(body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        return client.post("/api/tournaments", json=body,
                           headers=admin_headers() if headers is None else headers)

    base = {"format": "knockout", "bots": five_bots}
    assert post(base, {}).status_code == 401
    assert post(base, {"Authorization": "Bearer nope"}).status_code == 403
    assert post({**base, "format": "ladder"}).get_json()["error"]["code"] == "bad_format"
    assert post({**base, "bots": five_bots[:3]}).get_json()["error"]["code"] == \
        "too_few_entrants"
    assert post({**base, "bots": [*five_bots[:3], five_bots[0]]}).get_json()["error"][
        "code"] == "duplicate_bot"
    assert post({**base, "advance": 4}).status_code == 400
    assert post({**base, "bots": [*five_bots, 999]}).status_code == 404
    assert post({**base, "ruleset": "nope"}).get_json()["error"]["code"] == "unknown_ruleset"
    assert post({**base, "colour": "red"}).get_json()["error"]["code"] == "unknown_field"
    assert client.get("/api/tournaments/12345").status_code == 404


def test_entrants_must_have_passed_their_check_and_differ_in_endpoint(
    app: Flask, client: FlaskClient, five_bots: list[int], bot_urls: list[str]
) -> None:
    def post(bots: list[int]) -> Any:
        return client.post("/api/tournaments", json={"format": "knockout", "bots": bots},
                           headers=admin_headers())

    pending, _ = submit(client, "not-checked-yet", bot_urls[0])  # no worker has run it
    r = post([*five_bots, pending])
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "bot_not_ready"
    # Two bots at one endpoint (registered before endpoints were unique): refused.
    with get_db(app).begin() as s:
        first = s.get(Bot, five_bots[0])
        assert first is not None
        url = first.url
        s.execute(update(BotVersion).where(BotVersion.bot_id == five_bots[1])
                  .values(url=url + "/"))
        s.execute(update(Bot).where(Bot.id == five_bots[1]).values(url=url + "/",
                                                                    endpoint=None))
    r = post(five_bots)
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "duplicate_endpoint"
    assert post([five_bots[0], *five_bots[2:]]).status_code == 201


def test_start_twice_conflicts_and_cancel_stops(
    app: Flask, client: FlaskClient, five_bots: list[int]
) -> None:
    t = create(client, format="round_robin", bots=five_bots[:4], deals=1)
    assert t["state"] == "created"
    url = f"/api/tournaments/{t['id']}"
    assert client.post(url + "/start").status_code == 401
    r = client.post(url + "/start", headers=admin_headers())
    assert r.status_code == 200 and r.get_json()["report"]["opened_rounds"] == [1]
    assert len(r.get_json()["report"]["new_matches"]) == 1
    again = client.post(url + "/start", headers=admin_headers())
    assert again.status_code == 409
    # Advancing again creates nothing (idempotent).
    r = client.post(url + "/advance", headers=admin_headers())
    assert r.get_json()["report"]["new_matches"] == []
    assert client.post(url + "/cancel", headers=admin_headers()).get_json()["state"] == \
        "cancelled"
    assert client.post(url + "/cancel", headers=admin_headers()).status_code == 409
    listed = client.get("/api/tournaments?state=cancelled").get_json()
    assert [x["id"] for x in listed["items"]] == [t["id"]]


def test_advance_is_idempotent_under_repeated_and_concurrent_calls(
    app: Flask, client: FlaskClient, five_bots: list[int]
) -> None:
    import threading

    t = create(client, format="knockout", bots=five_bots, deals=1, duplicate=True,
               start=True)
    tid = t["id"]
    for _ in range(3):
        assert service.advance(app, tid).new_matches == []
    # Finish the first round's matches without the tournament hook, then advance from
    # several threads at once: the next round's matches are created exactly once.
    with get_db(app).begin() as s:
        ids = list(s.scalars(select(Match.id).where(Match.state == "queued")))
    for match_id in ids:
        with app.app_context():
            jobs.run_match_job(app, match_id)
    reports: list[service.AdvanceReport] = []
    threads = [threading.Thread(target=lambda: reports.append(service.advance(app, tid)))
               for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sum(len(r.new_matches) for r in reports) == 4  # one final table, four rotations
    assert all(n == 4 for n in matches_per_table(app, tid).values())


# --- crashes --------------------------------------------------------------------------------


@pytest.fixture
def settings(settings: dict[str, Any]) -> dict[str, Any]:
    settings["LEASE_S"] = 3.0
    settings["RECONCILE_QUEUED_AFTER_S"] = 0.0
    settings["RECONCILE_INTERVAL_S"] = 0.5
    settings["TOURNAMENT_ADVANCE_INTERVAL_S"] = 0.5
    settings["HEALTH_SWEEP_INTERVAL_S"] = 3600.0
    settings["LADDER_ENABLED"] = False
    return settings


@pytest.mark.drill
@both_backends
def test_tournament_survives_a_killed_worker_and_a_flushed_redis(
    app: Flask, client: FlaskClient, five_bots: list[int], redis: Redis,
    start_worker: Callable[[], Child],
) -> None:
    t = create(client, format="knockout", bots=five_bots, deals=2, duplicate=True,
               start=True)
    tid = t["id"]
    first = start_worker()

    def running_match() -> int | None:
        with get_db(app).begin() as s:
            return s.scalar(select(Match.id).where(Match.state == "running"))

    wait_for(running_match, 60, what="a worker to start a tournament match")
    for pid in [first.pid, *descendants(first.pid)]:  # the machine dies mid-match
        os.kill(pid, signal.SIGKILL)
    first.proc.wait()
    marker = redis.get(MARKER)
    redis.flushdb()  # ...and Redis loses every job
    if marker is not None:
        redis.set(MARKER, marker, ex=3600)
    # A new worker and the clock (reconciler + tournament advance) bring it home.
    start_worker()
    clock = Clock(app)

    def done() -> bool:
        clock.tick()
        with get_db(app).begin() as s:
            tt = s.get(Tournament, tid)
            return tt is not None and tt.state == "finished"

    wait_for(done, 240, every_s=0.5, what="the tournament to finish")
    assert reconcile(app).total == 0
    assert all(n == 4 for n in matches_per_table(app, tid).values())
    with get_db(app).begin() as s:
        states = Counter(s.scalars(select(Match.state).join(
            TournamentMatch, TournamentMatch.match_id == Match.id)
            .where(TournamentMatch.tournament_id == tid)))
    assert set(states) == {"finished"}
    standings = client.get(f"/api/tournaments/{tid}/standings").get_json()
    assert standings["final"] and len(standings["items"]) == 5


@pytest.mark.drill
def test_the_cli_creates_starts_shows_and_archives(
    app: Flask, five_bots: list[int], tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from .conftest import worker_env

    for key, value in worker_env(app).items():
        if key in ("DATABASE_URL", "REDIS_URL", "QUEUE_NAME", "SECRET_KEY",
                   "ARENA_INSTANCE_PATH", "ALLOW_PRIVATE_BOT_URLS"):
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("ADMIN_TOKEN", ADMIN)
    args = ["tournament", "create", "--format", "round_robin", "--deals", "1", "--start"]
    for name in ("random", "greedy", "planner", "random-2"):
        args += ["--bot", name]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "created tournament" in out and "opened rounds [1]" in out
    tid = int(out.split("created tournament ")[1].split()[0])
    play_queued(app)
    assert main(["tournament", "show", str(tid)]) == 0
    shown = capsys.readouterr().out
    assert "finished" in shown and "planner" in shown
    zpath = tmp_path / "t.zip"
    assert main(["tournament", "archive", str(tid), str(zpath)]) == 0
    assert any(n.endswith("standings.csv") for n in zipfile.ZipFile(zpath).namelist())
    assert main(["tournament", "create", "--format", "knockout", "--bot", "nobody"]) != 0


# --- rule sets named with options (docs/rules.md 'Naming a rule set in one string') -----------


@both_backends_drill_on_postgres
def test_tournament_plays_a_rule_set_named_with_options(
    app: Flask, client: FlaskClient, five_bots: list[int]
) -> None:
    """Scoring conventions the arena could not choose before (issue 11 part 4): the assistance
    penalty and steeper steps, named through ``standard+...``, reach the matches the tournament
    plays and their logs."""
    name = "standard+penalty.assist_penalty=true,penalty.tiers=8:2/10:3/13:4"
    t = create(client, format="round_robin", bots=five_bots[:4], deals=1, ruleset=name,
               start=True)
    assert t["ruleset"] == name and t["seats"] == 4 and t["family"] == "classic"
    assert play_queued(app) == 1
    with get_db(app).begin() as s:
        match_id, stored = s.execute(select(Match.id, Match.ruleset)).one()
    assert stored == name
    doc = client.get(f"/api/matches/{match_id}/log").get_json()
    assert doc["rules"]["name"] == name
    assert doc["rules"]["options"]["penalty"]["assist_penalty"] is True
    assert doc["rules"]["options"]["penalty"]["tiers"] == [[8, 2], [10, 3], [13, 4]]
    assert referee_log.verify(doc).ok


@both_backends_drill_on_postgres
def test_long_rule_set_names_are_kept_whole_and_only_overlong_ones_refused(
    app: Flask, client: FlaskClient, five_bots: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A canonical name longer than the old 64-character columns (issue 11; migration 0007)
    is stored whole by the tournament and match APIs; one longer than the columns is refused
    with a reason (a name cut short would name other rules)."""
    name = ("standard+penalty.assist_penalty=true,penalty.twos_double=true,"
            "penalty.unused_power_doubles=true")
    assert len(name) > 64
    r = client.post("/api/tournaments", json={"format": "knockout", "bots": five_bots,
                                              "ruleset": name}, headers=admin_headers())
    assert r.status_code == 201 and r.get_json()["ruleset"] == name
    r = client.post("/api/matches", json={"bots": five_bots[:4], "ruleset": name},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    with get_db(app).begin() as s:
        assert s.scalar(select(Match.ruleset).where(Match.id == r.get_json()["id"])) == name
    import arena.core.families

    monkeypatch.setattr(arena.core.families, "RULESET_NAME_MAX", len(name) - 1)
    r = client.post("/api/tournaments", json={"format": "knockout", "bots": five_bots,
                                              "ruleset": name}, headers=admin_headers())
    assert r.status_code == 400
    err = r.get_json()["error"]
    assert err["code"] == "unknown_ruleset"
    assert f"at most {len(name) - 1} characters" in err["message"]
    r = client.post("/api/matches", json={"bots": five_bots[:4], "ruleset": name},
                    headers=admin_headers())
    assert r.status_code == 400 and "at most" in r.get_json()["error"]["message"]
    bad = client.post("/api/tournaments", json={"format": "knockout", "bots": five_bots,
                                                "ruleset": "standard+penalty=flat"},
                      headers=admin_headers())
    assert bad.status_code == 400 and "cannot read rule-set option" in \
        bad.get_json()["error"]["message"]


@both_backends
def test_the_form_offers_the_highest_rated_bots_then_unrated_ones_up_to_the_cap(
        app: Flask, client: FlaskClient) -> None:
    """``/tournaments/new`` lists at most TOURNAMENT_MAX_ENTRANTS bots: the highest rated in
    the classic family first, then unrated bots by id; deleted bots never; and it says when
    there are more."""
    from arena.core.models import Rating, utcnow

    app.config["TOURNAMENT_MAX_ENTRANTS"] = 4
    with get_db(app).begin() as s:
        ids = []
        for i in range(7):
            b = Bot(name=f"form-{chr(ord('g') - i)}", url=f"http://127.0.0.1:{9100 + i}/",
                    token_hash="0" * 64, check_state="passed")
            s.add(b)
            s.flush()
            ids.append(b.id)
        # Rated: ids[1] (1700) above ids[4] (1600) above ids[6] (deleted); ids[5] rated in
        # another family only.
        for bot_id, family, rating in ((ids[1], "classic", 1700.0), (ids[4], "classic", 1600.0),
                                       (ids[6], "classic", 1800.0), (ids[5], "other", 2000.0)):
            s.add(Rating(bot_id=bot_id, family=family, rating=rating, games=3))
        s.execute(update(Bot).where(Bot.id == ids[6]).values(deleted_at=utcnow()))

    def offered() -> list[str]:
        page = client.get("/tournaments/new").get_data(as_text=True)
        return [f"form-{c}" for c in "abcdefg" if f"> form-{c}</label>" in page]

    # ids[1], ids[4] rated; then unrated by id: ids[0], ids[2]; ids[3] and ids[5] left out.
    assert sorted(offered()) == sorted(["form-f", "form-c", "form-g", "form-e"])
    assert "highest-rated bots are listed" in client.get("/tournaments/new").get_data(
        as_text=True)
    app.config["TOURNAMENT_MAX_ENTRANTS"] = 6
    assert sorted(offered()) == sorted(["form-f", "form-c", "form-g", "form-e", "form-d",
                                        "form-b"])
    assert "highest-rated bots are listed" not in client.get("/tournaments/new").get_data(
        as_text=True)
