"""``arena queue``: the operator's view of the job queue (why a command and not a dashboard:
:mod:`arena.core.queue_report`).

    arena queue status             jobs by state and the oldest waiting job's age (Redis),
                                   unfinished matches and the oldest queued one (database)
    arena queue failed [--limit N] the newest failed jobs with their reasons
    arena queue retry JOB_ID...    put failed jobs back on the queue
    arena queue retry --all        all of them

Retrying is safe: every job is idempotent (a match job whose match the database already
calls finished or failed does nothing), so the command also says, for a match job, what the
database says of its match.
"""

from __future__ import annotations

import datetime as dt
import re
import sys

import click
from flask import Flask
from sqlalchemy import select

from arena.core import queue_report
from arena.core.models import Match
from arena.core.queue import get_queue
from arena.core.storage import get_db

from .cli_app import command_app

MATCH_JOB = re.compile(r"^match-([0-9]+)-[0-9]+$")


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _match_state(app: Flask, job_id: str) -> str:
    """What the database says of a match job's match ('' for another job)."""
    m = MATCH_JOB.match(job_id)
    if m is None:
        return ""
    with get_db(app).begin() as s:
        state = s.scalar(select(Match.state).where(Match.id == int(m.group(1))))
    return f"match {m.group(1)} is {state or 'missing'} in the database"


@click.group("queue")
def queue() -> None:
    """The job queue: jobs by state and age, failed jobs, retries."""


@queue.command()
def status() -> None:
    """Jobs by state, the oldest waiting job, workers; unfinished matches (database)."""
    app = command_app()
    rep = queue_report.report(app)
    click.echo(f"queue {get_queue(app).queue.name!r}: {rep.workers} worker(s)")
    for state in queue_report.JOB_STATES:
        extra = f"  (oldest waiting {_age(rep.oldest_queued_s)})" if state == "queued" \
            and rep.jobs.get(state) else ""
        click.echo(f"  {state:<10} {rep.jobs.get(state, 0):>7}{extra}")
    click.echo("matches (database):")
    for state in queue_report.MATCH_STATES:
        extra = f"  (oldest {_age(rep.oldest_queued_match_s)})" if state == "queued" \
            and rep.matches.get(state) else ""
        click.echo(f"  {state:<10} {rep.matches.get(state, 0):>7}{extra}")


@queue.command()
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000))
def failed(limit: int) -> None:
    """The newest failed jobs, with their reasons."""
    app = command_app()
    jobs = queue_report.failed_jobs(get_queue(app).queue, limit)
    if not jobs:
        click.echo("no failed jobs")
        return
    now = dt.datetime.now(dt.UTC)
    for job in jobs:
        ended = job.ended_at.replace(tzinfo=job.ended_at.tzinfo or dt.UTC) \
            if job.ended_at else None
        age = _age((now - ended).total_seconds()) + " ago" if ended else "-"
        func = job.func.rsplit(".", 1)[-1]
        click.echo(f"{job.id}  {func}{job.args!r}  failed {age}")
        click.echo(f"    {job.reason}")
        said = _match_state(app, job.id)
        if said:
            click.echo(f"    {said}")


@queue.command()
@click.argument("job_ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="every failed job")
def retry(job_ids: tuple[str, ...], everything: bool) -> None:
    """Put failed jobs back on the queue."""
    if bool(job_ids) == everything:
        raise click.UsageError("name the failed jobs to retry, or give --all")
    app = command_app()
    q = get_queue(app).queue
    ids = queue_report.all_failed_ids(q) if everything else list(job_ids)
    problems = 0
    for job_id, what in queue_report.retry(q, ids):
        said = _match_state(app, job_id)
        click.echo(f"{job_id}: {what}" + (f" ({said})" if said else ""))
        problems += what != "requeued"
    if everything and not ids:
        click.echo("no failed jobs")
    sys.exit(1 if problems else 0)
