"""Drill: Redis goes away under a busy pool worker and comes back.

Found in a drill: after a 30 s outage the worker took its first new job 42.9 s later.  Its
dequeue loop doubled its wait each time it woke up, a finishing match woke it up, and the
ceiling was RQ's built-in 60 s, not ``WORKER_REDIS_RETRY_MAX_S`` (which the pool worker was
never given).  Now every wait between two attempts is at most the setting, a finishing match
does not advance the back-off, and a successful dequeue starts it over.  (The time to the
first job after an outage: ``python bench/redis_outage.py``.)
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from arena.core.queue import QueueService
from arena.ops.procs import Child, stop_all

from .conftest import wait_for
from .drills import SlowTable, logged_worker, post_match
from .test_supervision import PrivateRedis, finished
from .test_threadpool_worker import states

pytestmark = pytest.mark.drill

RETRY_RE = re.compile(r"Redis unreachable .*?retrying in ([0-9.]+) ?s")


@pytest.fixture
def slow() -> Iterator[SlowTable]:
    table = SlowTable(move_s=0.04)
    yield table
    table.close()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def workers() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    stop_all(started)


def test_the_redis_back_off_honours_the_setting_while_matches_finish(
    app: Flask, client: FlaskClient, slow: SlowTable, private_redis: PrivateRedis,
    workers: list[Child], tmp_path: Path,
) -> None:
    app.config["REDIS_URL"] = private_redis.url
    app.extensions["arena.queue"] = QueueService(app)
    bots = slow.register(client)
    log = tmp_path / "worker.log"
    workers.append(logged_worker(app, log, WORKER_REDIS_RETRY_MAX_S="1",
                                 REDIS_URL=private_redis.url))
    # Matches of different lengths, so that they end one after another during the outage
    # (each end used to wake the dequeue loop and double its wait).
    ids = [post_match(client, bots, deals=d, seed=d) for d in (1, 2, 2, 3, 3, 4)]
    wait_for(lambda: all(s == "running" for s in states(app, ids)), 60,
             what="every match to be running")
    private_redis.kill()
    wait_for(lambda: all(s == "finished" for s in states(app, ids)), 120,
             what="the matches to finish while Redis is away")
    time.sleep(3)  # a few more attempts at a Redis that is still away
    private_redis.start()
    after = post_match(client, bots, deals=1)
    finished(app, after)
    text = log.read_text(errors="replace")
    waits = [float(w) for w in RETRY_RE.findall(text)]
    assert len(waits) >= 3, text[-3000:]
    assert max(waits) <= 1.0, waits  # WORKER_REDIS_RETRY_MAX_S, not RQ's 60 s
    assert waits[0] == 0.5  # the back-off starts at half a second
    # The matches that ended during the outage were stored once, not replayed.
    from .test_threadpool_worker import assert_ratings_exact, matches

    assert all(m.attempts == 1 for m in matches(app, [*ids, after]).values())
    assert_ratings_exact(app, [*ids, after])
