"""Drill: every thread of a pool worker stuck on the database.

A job blocked where it cannot stop itself (its claim waits on a row lock, a database that
stopped answering) is given up at its timeout plus ``WORKER_TIMEOUT_GRACE_S`` and its thread
abandoned.  When as many threads are abandoned and still stuck as the pool has slots, the
worker is *wedged*.  Found in a drill: it said it was stopping, and then the supervision
started a new loop in the same process beside the stuck threads (nothing read the flag).
Now the process exits with status 3 (``EXIT_WEDGED``) and its process manager starts a
fresh one, which plays the match once the database answers again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from arena.jobs.reconcile import reconcile
from arena.jobs.supervisor import EXIT_WEDGED
from arena.ops.procs import Child, stop_all

from .conftest import wait_for
from .drills import SlowTable, logged_worker, post_match
from .test_threadpool_worker import (
    _normal_budget,
    _tiny_budget,
    all_finished,
    assert_ratings_exact,
    matches,
)

pytestmark = pytest.mark.drill


@pytest.fixture
def slow() -> Iterator[SlowTable]:
    table = SlowTable(move_s=0.01)
    yield table
    table.close()


@pytest.fixture
def workers() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    stop_all(started)


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_wedged_worker_exits_for_its_process_manager_to_replace_it(
    app: Flask, client: FlaskClient, slow: SlowTable, workers: list[Child], tmp_path: Path,
    database_url: str,
) -> None:
    import psycopg

    app.config.update({"WORKER_CONCURRENCY": 1, "WORKER_TIMEOUT_GRACE_S": 1.0,
                       "MATCH_JOB_RETRIES": 0, "RECONCILE_QUEUED_AFTER_S": 0.0})
    bots = slow.register(client)
    _tiny_budget(app)  # a 3 s job timeout: given up 4 s after it starts
    stuck = post_match(client, bots)
    _normal_budget(app)
    log = tmp_path / "worker.log"
    locker = psycopg.connect(database_url.replace("postgresql+psycopg", "postgresql"))
    try:
        # Its claim waits on this row lock, inside a bookkeeping slot: the one thread of the
        # pool is stuck where nothing can stop it.
        locker.execute("SELECT id FROM matches WHERE id = %s FOR UPDATE", (stuck,))
        worker = logged_worker(app, log)
        workers.append(worker)

        def ended_or_looped_again() -> bool:
            return not worker.alive() or "starting it again" in log.read_text(errors="replace")

        wait_for(ended_or_looped_again, 120, what="the wedged worker to exit")
        text = log.read_text(errors="replace")
        assert "starting it again" not in text, text[-3000:]
        assert worker.proc.wait(timeout=30) == EXIT_WEDGED, text[-3000:]
        assert "wedged" in text
        assert matches(app, [stuck])[stuck].attempts == 0  # it never got past its claim
    finally:
        locker.rollback()
        locker.close()
    # The process manager starts a fresh worker; the database answers again; the match
    # (its job recorded as failed when it was given up) is enqueued again and played once.
    assert reconcile(app).requeued_queued == [stuck]
    workers.append(logged_worker(app, tmp_path / "fresh.log"))
    wait_for(lambda: all_finished(app, [stuck]), 120, what="the fresh worker to play it")
    assert_ratings_exact(app, [stuck])
