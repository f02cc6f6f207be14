"""Drill: the database goes away while matches are being played, and comes back.

Found in a drill: 140 matches that finished during a 20 s PostgreSQL outage were played
again from the start (the store failed, the job raised, and the match went back to the
queue once its lease ran out; a retry deals new cards).  Now a finished match keeps its
result (in Redis, for the next attempt too) and tries its store again with a back-off for
``MATCH_STORE_RETRY_S``: stored once, by the attempt that played it, ratings applied once.

The worker reaches PostgreSQL through a TCP proxy on loopback (:mod:`.tcpproxy`) that the
test cuts and restores: the scratch database stays up for the test itself, and the machine's
PostgreSQL server is never touched.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.engine import make_url

from arena.core.models import MatchResult
from arena.core.storage import get_db
from arena.jobs.reconcile import reconcile
from arena.ops.procs import Child, stop_all
from arena.play.matches import wire_match_id

from .conftest import wait_for
from .drills import SlowTable, logged_worker, post_match
from .tcpproxy import TcpProxy
from .test_threadpool_worker import all_finished, assert_ratings_exact, matches, states

pytestmark = pytest.mark.drill


@pytest.fixture
def slow() -> Iterator[SlowTable]:
    table = SlowTable(move_s=0.05)
    yield table
    table.close()


@pytest.fixture
def workers() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    stop_all(started)


def stored_attempts(app: Flask, ids: list[int]) -> dict[int, str]:
    """Each match's stored log's wire match id (which names the attempt that played it)."""
    with get_db(app).begin() as s:
        rows = s.execute(select(MatchResult.match_id, MatchResult.log_gz)
                         .where(MatchResult.match_id.in_(ids))).all()
    return {m: json.loads(gzip.decompress(raw))["match_id"] for m, raw in rows}


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_matches_that_finish_while_the_database_is_away_are_stored_not_replayed(
    app: Flask, client: FlaskClient, slow: SlowTable, workers: list[Child], tmp_path: Path,
    database_url: str,
) -> None:
    url = make_url(database_url)
    proxy = TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    try:
        app.config.update({"LEASE_S": 20.0, "RECONCILE_QUEUED_AFTER_S": 0.0})
        bots = slow.register(client)
        ids = [post_match(client, bots, deals=d, seed=d) for d in (2, 2, 3, 3)]
        log = tmp_path / "worker.log"
        proxied = url.set(host="127.0.0.1", port=proxy.port)
        workers.append(logged_worker(
            app, log, DATABASE_URL=proxied.render_as_string(hide_password=False),
            MATCH_STORE_RETRY_S="60", MATCH_STORE_RETRY_MAX_WAIT_S="1"))
        # Every match past its start (its seats read from the database) and playing.
        wait_for(lambda: len(slow.playing) == len(ids), 90, what="every match to be playing")
        proxy.cut()
        moves = slow.moves
        # Every match plays on to its end (bots need no database), then cannot store.
        wait_for(lambda: slow.quiet_for(2.0), 120, every_s=0,
                 what="every match to play to its end")
        assert slow.moves > moves
        assert all(s == "running" for s in states(app, ids))
        text = log.read_text(errors="replace")
        assert text.count("database unreachable while storing") >= len(ids), text[-3000:]
        proxy.restore()

        def done() -> bool:
            reconcile(app)  # as the clock would: an abandoned match is handed on
            return all_finished(app, ids)

        wait_for(done, 120, every_s=0.5, what="the kept results to be stored")
        # Stored once, by the attempt that played it: not played again.
        first = {m: wire_match_id(app.config, m, 1) for m in ids}
        assert stored_attempts(app, ids) == first
        assert all(m.attempts == 1 for m in matches(app, ids).values())
        assert_ratings_exact(app, ids)
        assert "result stored after" in log.read_text(errors="replace")
    finally:
        proxy.close()
