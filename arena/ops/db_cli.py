"""``arena db``: the database's own bookkeeping.

    arena db counts            every maintained listing count beside its count(*)
    arena db counts --check    exit 1 if any differs (drift)
    arena db counts --repair   rewrite the ones that differ from the rows

The listing counts (:mod:`arena.core.counts`) are moved in the transactions that change what
they count, so they never drift from the service's own writes; a hand-made ``UPDATE`` or a
restore of one table without the other can make them, and this is how to find and fix it.
"""

from __future__ import annotations

import sys

import click

from arena.core import counts
from arena.core.storage import get_db

from .cli_app import command_app


@click.group("db")
def db() -> None:
    """The database's bookkeeping: the maintained listing counts."""


@db.command("counts")
@click.option("--check", is_flag=True, help="compare with count(*); exit 1 on a difference")
@click.option("--repair", is_flag=True, help="rewrite the counts that differ from count(*)")
def counts_command(check: bool, repair: bool) -> None:
    """The listing counts (bots by status, ratings by family) against count(*)."""
    from arena.play.ratings import snapshot

    if check and repair:
        raise click.UsageError("--check or --repair, not both")
    database = get_db(command_app())
    if repair:
        with database.engine.begin() as conn:
            fixed = counts.repair(conn)
        for name, (was, now) in fixed.items():
            click.echo(f"{name}: {was} -> {now}")
        click.echo(f"{len(fixed)} count(s) repaired" if fixed else "no drift: nothing to repair")
        return
    with snapshot(database) as s:  # the counts and the rows as of one moment
        have, want = counts.stored(s), counts.recount(s)
    drift = 0
    for name in sorted(set(have) | set(want)):
        a, b = have.get(name, 0), want.get(name, 0)
        drift += a != b
        if not check or a != b:
            click.echo(f"{name}: {a}" + ("" if a == b else f"  (count(*): {b}: DRIFT)"))
    if check:
        click.echo(f"{drift} count(s) drifted: run arena db counts --repair" if drift
                   else "every count equals count(*)")
        sys.exit(1 if drift else 0)
