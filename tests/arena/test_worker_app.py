"""The worker owns the app (arena.jobs.worker): a job body runs in the context its worker
pushes, and never builds an app or imports the worker itself.

* RQ's own command with the service's worker class (``rq worker -w
  arena.jobs.worker.AppWorker``, docs/operations.md) runs a queued health check to its end:
  that worker built the app from the environment and ran the job inside its context.
* A job body called outside any app context refuses at once instead of building an app of
  its own (it used to ask the worker for one).
* Jobs enqueued before the rooms (``arena.jobs.play_match``) still find their bodies.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from rq.utils import import_attribute

from arena.jobs import bodies

from .conftest import submit, worker_env


@pytest.mark.drill
def test_rqs_own_command_with_the_app_worker_runs_a_check(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str],
) -> None:
    bot_id, _ = submit(client, "by-rq-worker", sample_bots["random"])
    assert client.get(f"/api/bots/{bot_id}/check").get_json()["state"] == "queued"
    rq = Path(sys.executable).parent / "rq"
    done = subprocess.run(
        [str(rq), "worker", "-w", "arena.jobs.worker.AppWorker", "--burst",
         "--url", str(app.config["REDIS_URL"]), str(app.config["QUEUE_NAME"])],
        env=worker_env(app), capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    check = client.get(f"/api/bots/{bot_id}/check").get_json()
    assert check["state"] == "passed", (check, done.stderr[-2000:])


def test_a_job_body_outside_a_workers_context_refuses() -> None:
    with pytest.raises(RuntimeError, match="application context"):
        bodies.check_bot(1)


def test_jobs_enqueued_before_the_rooms_still_find_their_bodies() -> None:
    """Their dotted names, stored in Redis with them, resolve as RQ resolves them; no other
    name of the old flat module does."""
    assert import_attribute("arena.jobs.play_match") is bodies.play_match
    assert import_attribute("arena.jobs.check_bot") is bodies.check_bot
    assert import_attribute(bodies.__name__ + ".play_match") is bodies.play_match
    with pytest.raises(ValueError, match="run_match_job"):
        import_attribute("arena.jobs.run_match_job")
