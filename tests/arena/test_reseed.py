"""A retried match deals new cards; a retried rotation of a duplicate table keeps its table's
(:mod:`arena.play.reseed`).

The first attempt is stopped in the middle of deal 0 the way a thread-pool worker stops a match
when it shuts down past its grace (:mod:`arena.jobs.execution`: the match hands itself back to the
queue at the next turn); the second attempt is the job run again.  Real bots over HTTP: the
sample bots and an in-process one that records the hand it is shown at its first move of each
deal, and asks for the hand-back at its second move of the first attempt.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from sqlalchemy import select

from arena.core.models import Match, MatchResult
from arena.core.storage import get_db
from arena.core.tournament_models import TournamentMatch
from arena.jobs import bodies as jobs
from arena.jobs import execution
from arena.live.channel import match_key, prefix_of
from arena.play.matches import wire_match_id
from arena.play.reseed import attempt_seed
from referee.runner import log as referee_log
from sample_bots.sdk import serve_in_thread

from .conftest import admin_headers, both_backends, both_backends_drill_on_postgres, register


@dataclass
class Recorder:
    """What the recording bot was shown: per attempt (1, 2, ...) and match (the wire id), the
    hand at its first move of each deal; ``control`` is handed back at its second move of
    attempt 1."""

    control: execution.JobControl = field(default_factory=execution.JobControl)
    attempt: int = 1
    moves: int = 0
    hands: dict[tuple[int, str], dict[int, list[str]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def choose(self, request: dict[str, Any]) -> str:
        with self.lock:
            if self.attempt:  # not a health check
                seen = self.hands.setdefault((self.attempt, request["match_id"]), {})
                seen.setdefault(request["deal_index"], list(request["hand"]))
                self.moves += 1
                if self.attempt == 1 and self.moves == 2:
                    self.control.handback.set()  # the worker shuts down: mid-deal 0
        move: str = request["legal_moves"][0]["id"]
        return move


@pytest.fixture
def recorder() -> Iterator[tuple[Recorder, str]]:
    rec = Recorder(attempt=0)
    server = serve_in_thread(rec.choose, name="recorder")
    yield rec, server.url
    server.shutdown()
    server.server_close()


def hand_back_mid_deal(app: Flask, rec: Recorder, match_id: int) -> None:
    """Attempt 1, stopped at the recording bot's second move; then the job again (attempt 2)."""
    rec.attempt, rec.moves = 1, 0
    with app.app_context(), execution.bind(rec.control):
        outcome = jobs.run_match_job(app, match_id)
    assert outcome.startswith("handed back"), outcome
    assert rec.control.handback.is_set()
    rec.attempt = 2
    with app.app_context():
        assert jobs.play_match(match_id) == "finished"


def stored_log(app: Flask, match_id: int) -> dict[str, Any]:
    with get_db(app).begin() as s:
        result = s.scalar(select(MatchResult).where(MatchResult.match_id == match_id))
        assert result is not None
        doc: dict[str, Any] = json.loads(gzip.decompress(result.log_gz))
        assert result.totals["seed"] == doc["seed"]
        return doc


def retry_broadcast(redis: Redis, app: Flask, match_id: int) -> list[tuple[str, Any]]:
    """The live events of the match's second attempt (from its ``start`` on)."""
    key = match_key(prefix_of(app.config), match_id)
    events = [(f[b"t"].decode(), json.loads(f[b"d"])) for _, f in redis.xrange(key)]
    starts = [i for i, (kind, _) in enumerate(events) if kind == "start"]
    assert len(starts) == 2, [kind for kind, _ in events]  # one per attempt
    assert events[starts[1]][1]["attempt"] == 2
    return events[starts[1]:]


def seat_of(app: Flask, match_id: int, bot_id: int) -> int:
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None
        return next(x.seat for x in m.seats if x.bot_id == bot_id)


def test_attempt_seeds_are_the_documented_derivation() -> None:
    digest = hashlib.sha256(b"arena-attempt:5:2").digest()
    assert attempt_seed(5, 2) == int.from_bytes(digest[:8], "big") >> 2 == 4518052225729524841
    # (the example in docs/logs.md, "Retried matches")
    assert attempt_seed(5, 1) == attempt_seed(5, 0) == 5
    seeds = {attempt_seed(5, n) for n in range(2, 50)} | {attempt_seed(2**62 - 1, 2)}
    assert len(seeds) == 49 and 5 not in seeds
    assert all(0 <= x < 2**62 for x in seeds)  # a seed a client could have given


@both_backends_drill_on_postgres
def test_a_match_handed_back_mid_deal_is_replayed_with_other_hands(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str],
        recorder: tuple[Recorder, str], redis: Redis) -> None:
    rec, url = recorder
    bots = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    me = register(client, "recorder", url)[0]
    r = client.post("/api/matches", json={"bots": [*bots, me], "deals": 2, "seed": 5},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    match_id: int = r.get_json()["id"]

    hand_back_mid_deal(app, rec, match_id)

    [(wire, first)] = [(w, h) for (a, w), h in rec.hands.items() if a == 1]
    assert list(first) == [0]  # attempt 1 was stopped inside deal 0
    wire_again = wire_match_id(app.config, match_id, 2)
    assert wire_again != wire == wire_match_id(app.config, match_id, 1)
    second = rec.hands[(2, wire_again)]  # new cards under a new id: nothing remembered replays
    doc = stored_log(app, match_id)
    assert doc["seed"] == attempt_seed(5, 2)
    assert referee_log.verify(doc).ok  # the log re-deals exactly what was played
    seat = seat_of(app, match_id, me)
    dealt = [sorted(d["hands"][seat]) for d in doc["deals"]]
    assert dealt == [sorted(second[i]) for i in range(2)]  # the log's hands were the ones played
    assert sorted(first[0]) != dealt[0]  # ... and not the hand attempt 1 showed

    # Live viewers see the retry's hands at each deal's end: they are not dealt again.
    retry = retry_broadcast(redis, app, match_id)
    assert retry[0][1]["reveal"] is True
    ends = [data for kind, data in retry if kind == "deal_end"]
    assert [e["frames"]["hands"] for e in ends] == [d["hands"] for d in doc["deals"]]

    body = client.get(f"/api/matches/{match_id}").get_json()
    assert body["attempts"] == 2
    assert (body["seed"], body["match_seed"]) == (doc["seed"], 5)
    page = client.get(f"/matches/{match_id}").get_data(as_text=True)
    assert f"seed {doc['seed']}" in page and 'data-test="retry-seed"' in page


@pytest.mark.drill
@both_backends
def test_a_retried_duplicate_rotation_keeps_the_tables_deals(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str],
        recorder: tuple[Recorder, str], redis: Redis) -> None:
    rec, url = recorder
    bots = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    me = register(client, "recorder", url)[0]
    r = client.post("/api/tournaments", headers=admin_headers(), json={
        "name": "dup", "format": "round_robin", "bots": [*bots, me], "deals": 1,
        "duplicate": True, "seed": 11, "start": True})
    assert r.status_code == 201, r.get_json()
    with get_db(app).begin() as s:
        rotations = list(s.scalars(select(TournamentMatch.match_id)
                                   .where(TournamentMatch.tournament_id == r.get_json()["id"])
                                   .order_by(TournamentMatch.rotation)))
        table_seed = {s.get(Match, m).seed for m in rotations}  # type: ignore[union-attr]
    assert len(rotations) == 4 and len(table_seed) == 1
    retried, *siblings = rotations

    hand_back_mid_deal(app, rec, retried)
    for m in siblings:
        with app.app_context():
            assert jobs.play_match(m) == "finished"

    logs = {m: stored_log(app, m) for m in rotations}
    assert {doc["seed"] for doc in logs.values()} == table_seed  # one deal for the table
    assert all(referee_log.verify(doc).ok for doc in logs.values())
    [(wire, first)] = [(w, h) for (a, w), h in rec.hands.items() if a == 1]
    wire_again = wire_match_id(app.config, retried, 2)  # (the siblings played after it)
    assert wire_again != wire
    assert rec.hands[(2, wire_again)][0] == first[0]  # the rotation's hand, dealt again
    # Every bot held every hand of the deal once, the retried rotation's included.
    held = {(bot, tuple(sorted(logs[m]["deals"][0]["hands"][seat_of(app, m, bot)])))
            for m in rotations for bot in [*bots, me]}
    assert len(held) == 16 and len({h for _, h in held}) == 4
    retry = retry_broadcast(redis, app, retried)  # the table's hands stay face down
    assert retry[0][1]["reveal"] is False
    assert [data["revealed"] for kind, data in retry if kind == "deal_end"] == [False]
    body = client.get(f"/api/matches/{retried}").get_json()
    assert body["attempts"] == 2 and body["seed"] == body["match_seed"] == table_seed.pop()
