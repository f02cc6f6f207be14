"""private bot URLs and signing secrets: bots.signing_generation; scrub stored URLs

Adds the generation counter the per-bot signing secret is derived from (``arena.core.signing``;
existing bots start at 1, and their owners rotate to learn a secret).  Then removes bot URLs
from everything stored before log v2: the ``url`` of every v1 log seat and of the seats in
``match_results.totals``, and the bot's host, path and query from strike, note and
health-check texts (``arena.core.privacy``).  The scrub cannot be undone (that is its point), so
the downgrade only drops the column.

Revision ID: 0005
Revises: 0002
Create Date: 2026-12-01 09:30:00
"""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa
from alembic import op

from arena.core.privacy import redactor, scrub_log_gz, scrub_totals

revision = "0005"
down_revision = "0002"
branch_labels = None
depends_on = None

BATCH = 200

bots = sa.table("bots", sa.column("id", sa.Integer), sa.column("url", sa.Text),
                sa.column("last_health_reason", sa.Text))
versions = sa.table("bot_versions", sa.column("bot_id", sa.Integer), sa.column("url", sa.Text))
seats = sa.table("match_seats", sa.column("match_id", sa.Integer),
                 sa.column("bot_id", sa.Integer))
results = sa.table("match_results", sa.column("id", sa.Integer),
                   sa.column("match_id", sa.Integer), sa.column("totals", sa.JSON),
                   sa.column("log_gz", sa.LargeBinary))
checks = sa.table("health_checks", sa.column("id", sa.Integer), sa.column("bot_id", sa.Integer),
                  sa.column("reason", sa.Text))
matches = sa.table("matches", sa.column("id", sa.Integer), sa.column("error", sa.Text))


def upgrade() -> None:
    op.add_column("bots", sa.Column("signing_generation", sa.Integer(), nullable=False,
                                    server_default="1"))
    scrub_stored(op.get_bind())


def scrub_stored(conn: sa.Connection) -> None:
    """Scrub every stored result, match error and health text (in batches: the seats of a
    batch of results are read with it, so memory stays flat however many matches there are;
    only every bot's URLs are held, and bots are few next to matches)."""
    urls: dict[int, set[str]] = defaultdict(set)
    for bot_id, url in conn.execute(sa.select(bots.c.id, bots.c.url)):
        urls[bot_id].add(url)
    for bot_id, url in conn.execute(sa.select(versions.c.bot_id, versions.c.url)):
        urls[bot_id].add(url)

    def seated(match_ids: list[int]) -> dict[int, set[str]]:
        out: dict[int, set[str]] = defaultdict(set)
        for match_id, bot_id in conn.execute(sa.select(seats.c.match_id, seats.c.bot_id)
                                             .where(seats.c.match_id.in_(match_ids))):
            out[match_id] |= urls.get(bot_id, set())
        return out

    last = 0
    while True:
        rows = conn.execute(sa.select(results.c.id, results.c.match_id, results.c.totals,
                                      results.c.log_gz)
                            .where(results.c.id > last).order_by(results.c.id)
                            .limit(BATCH)).all()
        if not rows:
            break
        by_match = seated([r.match_id for r in rows])
        for rid, match_id, totals, log_gz in rows:
            scrub = redactor(by_match.get(match_id, ()))
            conn.execute(sa.update(results).where(results.c.id == rid).values(
                totals=scrub_totals(totals or {}, scrub),
                log_gz=scrub_log_gz(log_gz, scrub)))
            last = rid
    failed = conn.execute(sa.select(matches.c.id, matches.c.error)
                          .where(matches.c.error != "")).all()
    for i in range(0, len(failed), BATCH):
        chunk = failed[i:i + BATCH]
        by_match = seated([m for m, _ in chunk])
        for mid, error in chunk:
            cleaned = redactor(by_match.get(mid, ()))(error or "")
            if cleaned != error:
                conn.execute(sa.update(matches).where(matches.c.id == mid)
                             .values(error=cleaned))
    last = 0
    while True:
        checked = conn.execute(sa.select(checks.c.id, checks.c.bot_id, checks.c.reason)
                               .where(checks.c.id > last, checks.c.reason != "")
                               .order_by(checks.c.id).limit(BATCH)).all()
        if not checked:
            break
        for hid, bot_id, reason in checked:
            cleaned = redactor(urls.get(bot_id, ()))(reason or "")
            if cleaned != reason:
                conn.execute(sa.update(checks).where(checks.c.id == hid)
                             .values(reason=cleaned))
            last = hid
    for bot_id, reason in conn.execute(sa.select(bots.c.id, bots.c.last_health_reason)
                                       .where(bots.c.last_health_reason != "")).all():
        cleaned = redactor(urls.get(bot_id, ()))(reason or "")
        if cleaned != reason:
            conn.execute(sa.update(bots).where(bots.c.id == bot_id)
                         .values(last_health_reason=cleaned))


def downgrade() -> None:
    # A plain DROP COLUMN (SQLite has it since 3.35): batch mode would copy and drop the
    # "bots" table, which the foreign keys of every other table refuse once there is data.
    op.execute("ALTER TABLE bots DROP COLUMN signing_generation")
