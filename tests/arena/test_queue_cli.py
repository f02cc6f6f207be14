"""``arena queue``: jobs by state and age, failed jobs with their reasons, retry; on a real
Redis (the test run's own database number) and the test's database."""

from __future__ import annotations

import pytest
from flask import Flask
from rq import SimpleWorker
from sqlalchemy import select

from arena.core.models import Bot
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.ops.cli import main
from arena.play.matches import create_match, enqueue_match
from referee.runner.match import Limits

from .conftest import worker_env


@pytest.fixture
def env(app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    values = worker_env(app)
    for key in ("DATABASE_URL", "REDIS_URL", "QUEUE_NAME", "REDIS_NAMESPACE", "SECRET_KEY",
                "ADMIN_TOKEN",
                "ARENA_INSTANCE_PATH", "ALLOW_PRIVATE_BOT_URLS"):
        monkeypatch.setenv(key, values[key])


def boom(n: int) -> None:
    """A job that fails (what a failed job looks like, with its reason)."""
    raise RuntimeError(f"database unreachable while storing {n}")


def fail_jobs(app: Flask, count: int) -> list[str]:
    q = get_queue(app).queue
    ids = [q.enqueue(boom, n, job_id=f"boom-{n}").id for n in range(count)]
    with app.app_context():
        SimpleWorker([q], connection=q.connection).work(burst=True, logging_level="ERROR")
    return ids


def test_status_counts_jobs_and_unfinished_matches(
        app: Flask, env: None, four_bots: list[int], capsys: pytest.CaptureFixture[str]) -> None:
    with get_db(app).begin() as s:
        bots = list(s.scalars(select(Bot).where(Bot.id.in_(four_bots)).order_by(Bot.id)))
        ids = [create_match(s, bots=bots, ruleset="standard", deals=1, limits=Limits(),
                            kind="admin", seed=n).id for n in range(3)]
    fail_jobs(app, 1)
    enqueue_match(app, ids[0])  # the other two: queued in the database, not on the queue
    capsys.readouterr()
    assert main(["queue", "status"]) == 0
    out = capsys.readouterr().out
    jobs, matches = out.split("matches (database):")
    counts = {line.split()[0]: line.split()[1] for line in jobs.splitlines()[1:]}
    assert counts["queued"] == "1" and counts["failed"] == "1"
    assert counts["finished"] == "4"  # the four bots' health checks
    assert "oldest waiting" in jobs
    unfinished = {line.split()[0]: line.split()[1] for line in matches.strip().splitlines()}
    assert unfinished == {"queued": "3", "running": "0"}


def test_failed_lists_reasons_and_retry_requeues(
        app: Flask, env: None, capsys: pytest.CaptureFixture[str]) -> None:
    ids = fail_jobs(app, 2)
    capsys.readouterr()
    assert main(["queue", "failed"]) == 0
    out = capsys.readouterr().out
    for job_id in ids:
        assert job_id in out
    assert "RuntimeError: database unreachable while storing 1" in out
    q = get_queue(app).queue
    assert main(["queue", "retry", ids[0]]) == 0
    assert f"{ids[0]}: requeued" in capsys.readouterr().out
    assert q.count == 1 and q.failed_job_registry.count == 1
    assert main(["queue", "retry", ids[0]]) == 1  # no longer a failed job
    assert "not a failed job" in capsys.readouterr().out
    assert main(["queue", "retry", "--all"]) == 0
    assert q.count == 2 and q.failed_job_registry.count == 0
    assert main(["queue", "failed"]) == 0
    assert "no failed jobs" in capsys.readouterr().out


def test_retry_needs_ids_or_all(app: Flask, env: None) -> None:
    assert main(["queue", "retry"]) != 0
    assert main(["queue", "retry", "x", "--all"]) != 0


def test_a_failed_match_job_says_what_the_database_says(
        app: Flask, env: None, four_bots: list[int], capsys: pytest.CaptureFixture[str]) -> None:
    q = get_queue(app).queue
    with get_db(app).begin() as s:
        bots = list(s.scalars(select(Bot).where(Bot.id.in_(four_bots)).order_by(Bot.id)))
        match_id = create_match(s, bots=bots, ruleset="standard", deals=1, limits=Limits(),
                                kind="admin", seed=1).id
    # Attempt 99: match ids start again in each test's database while Redis is the run's, and
    # an earlier test's "match-1-1" (with RQ retries) would lend this job its retries.
    q.enqueue(boom, match_id, job_id=f"match-{match_id}-99")
    with app.app_context():
        SimpleWorker([q], connection=q.connection).work(burst=True, logging_level="ERROR")
    capsys.readouterr()
    assert main(["queue", "failed"]) == 0
    assert f"match {match_id} is queued in the database" in capsys.readouterr().out
