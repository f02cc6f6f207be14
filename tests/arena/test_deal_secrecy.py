"""A duplicate table deals the same cards to every rotation: while one rotation plays, no
finished sibling's hands reach anyone (:mod:`arena.play.deal_secrecy`).  Every channel that
publishes a finished match's hidden information is tried: the replay, the log in both forms,
the seed in the API and on the page, the tournament archive and the owner's calls."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event, select

from arena.core.models import Match
from arena.core.storage import get_db
from arena.core.tournament_models import TournamentMatch
from arena.jobs import bodies as jobs

from .conftest import admin_headers, both_backends, register

pytestmark = pytest.mark.drill


def rotations(app: Flask, tournament_id: int) -> list[int]:
    with get_db(app).begin() as s:
        return list(s.scalars(select(TournamentMatch.match_id)
                              .where(TournamentMatch.tournament_id == tournament_id)
                              .order_by(TournamentMatch.rotation)))


def play(app: Flask, match_id: int) -> None:
    with app.app_context():
        assert jobs.play_match(match_id) == "finished"


def archived_logs(client: FlaskClient, tournament_id: int) -> set[str]:
    r = client.get(f"/api/tournaments/{tournament_id}/archive")
    assert r.status_code == 200
    with zipfile.ZipFile(io.BytesIO(r.data)) as z:
        return {n.rsplit("/", 1)[-1] for n in z.namelist() if "/logs/" in n}


def blobs_read(app: Flask, client: FlaskClient, tournament_id: int) -> set[int]:
    """The matches whose stored log the archive's request reads from the database: each
    statement it sends that selects ``log_gz`` is run again as sent (same SQL, same
    parameters), and the ``match_id`` of every row it returns is collected."""
    engine = get_db(app).engine
    sent: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
               executemany: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "log_gz" in statement:
            sent.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        assert client.get(f"/api/tournaments/{tournament_id}/archive").status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert len(sent) == 1, sent  # the logs are read in one statement
    with engine.connect() as conn:
        result = conn.exec_driver_sql(*sent[0])
        return {row._mapping["match_id"] for row in result}


def call_matches(client: FlaskClient, bot_id: int, token: str) -> set[int]:
    r = client.get(f"/api/bots/{bot_id}/calls", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.get_json()
    return {c["match_id"] for c in r.get_json()["items"]}


@both_backends
def test_a_finished_rotation_keeps_its_deals_secret_until_its_siblings_finish(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    # Every rotation's calls must fit the owner's kept calls (the newest BOT_CALLS_KEPT): the
    # random bot's moves are not seeded, and at 50 the first rotation's were cut at times.
    app.config["BOT_CALLS_KEPT"] = 1000
    bots = [register(client, n, sample_bots[n]) for n in ("random", "greedy", "planner",
                                                           "random-2")]
    r = client.post("/api/tournaments", headers=admin_headers(), json={
        "name": "dup", "format": "round_robin", "bots": [b for b, _ in bots], "deals": 1,
        "duplicate": True, "seed": 11, "start": True})
    assert r.status_code == 201, r.get_json()
    tid = r.get_json()["id"]
    first, *siblings = rotations(app, tid)
    assert len(siblings) == 3  # four rotations of one table, one seed
    play(app, first)
    bot_id, token = bots[0]

    # While a sibling still plays the same cards: nothing that shows a hand.
    for url in (f"/matches/{first}/replay.json", f"/api/matches/{first}/log",
                f"/api/matches/{first}/log?format=jsonl"):
        r = client.get(url)
        assert r.status_code == 409 and r.get_json()["error"]["code"] == "deals_in_play", url
    shown = client.get(f"/api/matches/{first}").get_json()
    assert shown["state"] == "finished" and "seed" not in shown
    with get_db(app).begin() as s:
        seed = s.get(Match, first).seed  # type: ignore[union-attr]
    page = client.get(f"/matches/{first}").get_data(as_text=True)
    assert 'data-test="deals-in-play"' in page and f"seed {seed}" not in page
    assert "replay.json" not in page and "download-json" not in page
    assert f"match-{first}.json" not in archived_logs(client, tid)
    assert first not in blobs_read(app, client, tid)  # not even read, then dropped
    assert first not in call_matches(client, bot_id, token)

    for m in siblings[:-1]:
        play(app, m)
    assert client.get(f"/api/matches/{first}/log").status_code == 409  # one still to play
    play(app, siblings[-1])

    # Every rotation is over: all of it opens.
    assert client.get(f"/matches/{first}/replay.json").status_code == 200
    assert client.get(f"/api/matches/{first}/log").status_code == 200
    assert client.get(f"/api/matches/{first}").get_json()["seed"] == seed
    page = client.get(f"/matches/{first}").get_data(as_text=True)
    assert 'data-test="deals-in-play"' not in page and f"seed {seed}" in page
    assert archived_logs(client, tid) == {f"match-{m}.json" for m in [first, *siblings]}
    assert blobs_read(app, client, tid) == {first, *siblings}
    assert call_matches(client, bot_id, token) == {first, *siblings}
