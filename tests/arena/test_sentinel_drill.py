"""Drill: the Redis primary is SIGKILLed under a busy arena deployed on Redis Sentinel.

One primary, one replica and three sentinels (``redis-server --sentinel``) on loopback; a
web app, a pool worker, the clock and the live relay, all given ``REDIS_SENTINELS`` and
nothing else about Redis; real sample bots.  The primary dies while matches run, others
wait on the queue and ladder rounds come due: every match finishes, once (one result,
four rating events, ratings equal to a recompute), and every process reconnects to the
promoted replica by itself.  The time it takes is measured by ``python
bench/sentinel_drill.py`` (docs/operations.md, "Redis Sentinel"); here, correctness only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena import create_app
from arena.core.storage import get_db

from .sentinel_drill import Drill, describe
from .sentinels import SentinelCluster, cluster_or_skip

pytestmark = [pytest.mark.drill, pytest.mark.postgres,
              pytest.mark.parametrize("backend", ["postgres"], indirect=True)]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SentinelCluster]:
    made = cluster_or_skip(tmp_path / "redis", "arena-drill")
    try:
        made.start()
        yield made
    finally:
        made.stop()


@pytest.mark.parametrize(("matches", "concurrency"), [(20, 8), (3, 0)],
                         ids=["pool-worker", "forking-worker"])
def test_a_failover_loses_no_match_and_applies_none_twice(
        settings: dict[str, Any], cluster: SentinelCluster, tmp_path: Path, matches: int,
        concurrency: int) -> None:
    """The pool worker (20 matches, 8 at once) and RQ's forking worker (3 matches,
    ``WORKER_CONCURRENCY=0``, one at a time, whose RQ loop quits on the Redis error and is
    started again by the supervision in the same process)."""
    app = create_app({**settings, "REDIS_URL": "", "REDIS_SENTINELS": cluster.hosts,
                      "REDIS_SENTINEL_SERVICE": cluster.service})
    drill = Drill(app, cluster, tmp_path / "drill", matches=matches, concurrency=concurrency,
                  # 60 ms a move: the pool's matches take waves of seconds, so jobs still
                  # wait in the queue when the first are done, however late this process
                  # gets the CPU to see it (at 20 ms a saturated run saw none queued).
                  think_ms=60, timeout_s=300,
                  # A job lost with the primary waits for the reconciler: sooner than the
                  # defaults (30 s passes, 60 s in the queue), to keep the test short.
                  settings={"RECONCILE_INTERVAL_S": "2", "RECONCILE_QUEUED_AFTER_S": "8",
                            "WORKER_REDIS_RETRY_MAX_S": "2"})
    try:
        figures = drill.run()
    finally:
        drill.stop()
        get_db(app).dispose()
    print(describe(figures))
    assert figures.problems == [], describe(figures)
    assert figures.queued_at_kill > 0, describe(figures)  # jobs waited through the failover
    if concurrency:
        assert figures.running_at_kill > 0, describe(figures)
    assert figures.first_job_s is not None, describe(figures)  # it took jobs again
    assert figures.ladder_after_kill >= 1
    assert figures.matches >= figures.posted + figures.ladder_after_kill
