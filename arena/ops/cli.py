"""The ``arena`` command.

    arena init-db            create or upgrade the schema (alias: migrate)
    arena serve              the web app (development server; production: gunicorn, Procfile)
    arena worker             an RQ worker (plus the clock, unless --no-clock)
    arena clock              periodic duties only: reconciler, ladder, health sweep
    arena reconcile          re-enqueue matches lost by Redis or by dead workers, once
    arena ladder             one matchmaking round
    arena sweep              enqueue the health checks that are due
    arena ratings --check    recompute every rating from the stored results and compare
    arena db counts --check  the maintained listing counts against count(*) (--repair)
    arena config             every setting with its value and what it does
    arena demo [--once]      everything on this machine, with sample bots
    arena tournament ...     create, start, advance, show, archive tournaments
    arena queue ...          the job queue: status, failed jobs, retry

Configuration comes from the environment (see ``arena config`` and ``docs/operations.md``).
A command given no instance (no ``ARENA_INSTANCE_PATH``, no ``DATABASE_URL``) uses the
``arena demo`` running on this machine, if any; a missing or unmigrated database is reported
in words, and read-only commands create no file (:mod:`arena.ops.cli_app`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

import click
from flask import Flask

from arena import create_app
from arena.core.config import SettingError
from arena.core.storage import get_db, upgrade

from .cli_app import adopt_running_demo, command_app


def _app() -> Flask:
    """The app of ``init-db`` or ``live``: created as needed."""
    return create_app()


def _service_app(command: str) -> Flask:
    """The app of ``serve``, ``worker`` or ``clock``, once its database answers and is at
    this code's schema (waiting up to ``STARTUP_DB_WAIT_S``; the embedded SQLite database
    is migrated): otherwise the process exits with one line saying why
    (:mod:`arena.ops.startup`), instead of serving errors or failing every job."""
    from arena.core import logs

    from .startup import wait_for_database

    logs.configure(_log_format(), process=command)
    app = create_app()
    wait_for_database(app, what=f"arena {command}")
    return app


def _log_format() -> str:
    """``LOG_FORMAT`` from the environment, before the app exists (so that its own start-up
    lines are written in it; a wrong value is refused by ``create_app`` right after)."""
    from arena.core import logs

    fmt = logs.log_format_from_env()
    return fmt if fmt in logs.FORMATS else "text"


@click.group(help=__doc__.split("\n\n")[0] if __doc__ else None)
@click.pass_context
def cli(ctx: click.Context) -> None:
    from arena.core.processes import die_with_parent_from_env

    die_with_parent_from_env()  # a child of `arena worker` or `arena demo`: die with it
    if ctx.invoked_subcommand != "demo":  # a demo makes an instance of its own
        adopt_running_demo()


@cli.command("init-db")
def init_db() -> None:
    """Create the database schema, or upgrade it to the newest migration."""
    app = _app()
    db = get_db(app)
    upgrade(db)
    click.echo(f"database ready: {db.engine.url.render_as_string(hide_password=True)}")


@cli.command("migrate")
def migrate() -> None:
    """Same as init-db: apply every pending migration."""
    init_db.callback()  # type: ignore[misc]


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
def serve(host: str, port: int) -> None:
    """Serve the web app with a threaded development server."""
    from werkzeug.serving import run_simple

    app = _service_app("serve")
    run_simple(host, port, app, threaded=True, use_reloader=False)


@cli.command()
@click.option("--burst", is_flag=True, help="stop when the queue is empty")
@click.option("--no-clock", is_flag=True, help="do not start the clock beside the worker")
@click.option("--name", default=None,
              help="worker name (default: host.pid.random, unique across restarts)")
def worker(burst: bool, no_clock: bool, name: str | None) -> None:
    """Run an RQ worker on the arena queue."""
    from arena.jobs.supervisor import EXIT_WEDGED, WorkerWedgedError
    from arena.jobs.worker import run_worker

    _private_metrics_for_forking_worker()

    try:
        ok = run_worker(_service_app("worker"), burst=burst,
                        clock=False if no_clock else None, name=name)
    except WorkerWedgedError:
        # Its clock is stopped and its registration gone; what is left are the stuck
        # threads, which an orderly interpreter exit could wait on (a lock they hold):
        # leave at once, for the process manager to start a fresh worker.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_WEDGED)
    sys.exit(0 if ok else 1)


def _private_metrics_for_forking_worker() -> None:
    """RQ's forking worker (``WORKER_CONCURRENCY=0``) plays each job in a forked work horse,
    whose metrics would die with it.  With a metrics port, this process starts again (the
    same pid, ``exec``) in multiprocess mode over a folder of its own, which must be set
    before anything imports ``prometheus_client`` (:mod:`arena.core.metrics`): the horses
    write their metrics there and the worker's port adds them up.  The folder is removed
    when the worker exits."""
    import os

    from arena.core import metrics
    from arena.core.config import default_settings, from_environment

    cfg = {**default_settings(), **from_environment()}
    if not metrics.needs_private_multiprocess(int(cfg["WORKER_CONCURRENCY"]),
                                              int(cfg["WORKER_METRICS_PORT"])):
        return
    folder = metrics.fresh_multiprocess_dir(None)
    os.environ[metrics.MULTIPROC_ENV] = folder
    os.environ[metrics.PRIVATE_ENV] = folder
    args = list(sys.argv[1:])
    if "worker" not in args:  # called as a function (main(argv)): rebuild the command
        args = ["worker"]
    os.execv(sys.executable, [sys.executable, "-m", "arena", *args])


@cli.command()
@click.option("--host", default=None, help="address to listen on (default: LIVE_HOST)")
@click.option("--port", default=None, type=int, help="port (default: LIVE_PORT; 0: any)")
def live(host: str | None, port: int | None) -> None:
    """Run the live relay: server-sent events of running matches and tournaments."""
    import asyncio

    from arena.core import logs, metrics
    from arena.core.queue import get_queue
    from arena.live.channel import prefix_of
    from arena.live.relay import Relay, RelayLimits, serve

    logs.configure(_log_format(), process="live")
    app = _app()
    cfg = app.config
    metrics.serve_port(str(cfg["METRICS_HOST"]), int(cfg["LIVE_METRICS_PORT"]))
    relay = Relay(get_queue(app).url, str(cfg["LIVE_WEB_URL"]), RelayLimits.from_config(cfg),
                  prefix_of(cfg))
    asyncio.run(serve(relay, host or str(cfg["LIVE_HOST"]),
                      int(cfg["LIVE_PORT"]) if port is None else port))


@cli.command()
def clock() -> None:
    """Run the clock (reconciler, ladder, health sweep) until stopped."""
    import signal

    from arena.core import metrics
    from arena.jobs.clock import Clock

    app = _service_app("clock")
    metrics.serve_port(str(app.config["METRICS_HOST"]), int(app.config["CLOCK_METRICS_PORT"]))
    c = Clock(app)

    def stop(signum: int, frame: object) -> None:
        c.stopped = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    c.run()


@cli.command()
def reconcile() -> None:
    """Re-enqueue matches stuck queued or running (once)."""
    from arena.jobs.reconcile import reconcile as run

    click.echo(str(run(command_app())))


@cli.command()
@click.option("--max-matches", type=int, default=None, help="at most this many matches")
def ladder(max_matches: int | None) -> None:
    """Run one matchmaking round and enqueue its matches."""
    from arena.play.ladder import run_round

    created = run_round(command_app(), max_matches=max_matches)
    click.echo(f"created {len(created)} match(es): {created}")


@cli.command()
def sweep() -> None:
    """Enqueue the health checks that are due."""
    from arena.bots.sweep import sweep as run

    bots = run(command_app())
    click.echo(f"health checks enqueued for {len(bots)} bot(s)")


@cli.command()
@click.option("--check", is_flag=True, help="recompute and compare; exit 1 on a difference")
@click.option("--family", default=None, help="one family only")
def ratings(check: bool, family: str | None) -> None:
    """Show the leaderboards, or check them against a full recompute."""
    from sqlalchemy import select

    from arena.core.models import Rating
    from arena.play.ratings import check_all, families, snapshot

    app = command_app()
    cfg = app.config
    db = get_db(app)
    if check:
        names, problems = check_all(db, initial=float(cfg["ELO_INITIAL"]),
                                    k=float(cfg["ELO_K"]), family=family)
        for p in problems:
            click.echo(p)
        click.echo(f"{len(names)} famil{'y' if len(names) == 1 else 'ies'} checked: "
                   + ("ratings differ" if problems else "stored ratings equal the recompute"))
        sys.exit(1 if problems else 0)
    with snapshot(db) as s:
        for name in [family] if family else families(s):
            click.echo(f"{name}:")
            rows = s.scalars(select(Rating).where(Rating.family == name)
                             .order_by(Rating.rating.desc())).all()
            for i, r in enumerate(rows, 1):
                click.echo(f"  {i:>3}. {r.bot.name:<24} {r.rating:8.1f}  {r.games} games")


@cli.command("config")
def show_config() -> None:
    """Print every setting, its current value and what it does."""
    from arena.core.config import default_settings, setting_docs

    app = command_app(database=False)
    docs = setting_docs()
    from arena.core.security import SECRET_SETTINGS

    secret = {*SECRET_SETTINGS, "REDIS_PASSWORD", "REDIS_SENTINEL_PASSWORD"}
    for name in default_settings():
        value = app.config[name]
        shown = "(set)" if name in secret and value else repr(value)
        click.echo(f"{name} = {shown}\n    {docs.get(name, '')}")


@cli.command()
@click.option("--once", is_flag=True, help="exit when the demo matches are done")
@click.option("--port", default=5000, show_default=True, type=int,
              help="web server port (0: any free port)")
@click.option("--matches", default=6, show_default=True, type=int,
              help="ladder matches to play before printing the standings")
@click.option("--workers", default=2, show_default=True, type=int)
@click.option("--deals", default=4, show_default=True, type=int, help="deals per match")
@click.option("--instance", default=None, help="instance folder (default: a new temp folder)")
@click.option("--tournament", default="knockout", show_default=True,
              type=click.Choice(["knockout", "round_robin", "swiss", "none"]),
              help="the demo tournament after the ladder matches")
@click.option("--duplicate/--no-duplicate", default=True, show_default=True,
              help="duplicate play in the demo tournament")
def demo(once: bool, port: int, matches: int, workers: int, deals: int,
         instance: str | None, tournament: str, duplicate: bool) -> None:
    """Run everything on this machine with the sample bots (see arena/ops/demo.py)."""
    from .demo import run_demo

    sys.exit(run_demo(once=once, port=port, matches=matches, workers=workers, deals=deals,
                      instance=instance, tournament=tournament, duplicate=duplicate))


def _add_tournament_commands() -> None:
    from .queue_cli import queue
    from .tournament_cli import tournament

    cli.add_command(tournament)
    cli.add_command(queue)


_add_tournament_commands()


def _add_account_commands() -> None:
    from .account_cli import account
    from .db_cli import db

    cli.add_command(account)
    cli.add_command(db)


_add_account_commands()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="arena",
                 standalone_mode=False)
    except click.exceptions.Abort:
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except SettingError as exc:  # a setting the code cannot use: one line, not a traceback
        click.echo(f"arena: refusing to start: {exc}", err=True)
        return 2
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return 0
