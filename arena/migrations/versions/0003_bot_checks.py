"""bot checks off the web thread: admission state, pending URLs, endpoints, pause reasons

Revision ID: 0003
Revises: 0005 (re-chained onto main's 0005 when rebasing)
Create Date: 2026-12-01 09:30:00

Existing bots were health-checked synchronously when they were submitted, so they start out
``passed``.  Each live bot gets the normalized endpoint of its URL; where several live bots
share one (possible before this revision), the oldest keeps it and the others keep none: they
go on playing (the ladder still never seats one endpoint twice), and their next URL change
takes an endpoint like any bot's.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import arena.models

revision = "0003"
down_revision = "0005"
branch_labels = None
depends_on = None


def _endpoint(url: str) -> str | None:
    from referee.netguard import GuardError, NetPolicy, check_url

    try:
        t = check_url(url, NetPolicy(allow_private=True))
    except GuardError:
        return None
    host = f"[{t.host}]" if ":" in t.host else t.host
    return f"{t.scheme}://{host}:{t.port}{t.base_path or '/'}"


def upgrade() -> None:
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.add_column(sa.Column("endpoint", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("pending_url", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("pending_endpoint", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("check_state", sa.String(length=16), nullable=False,
                                      server_default="passed"))
        batch_op.add_column(sa.Column("pause_reason", sa.Text(), nullable=False,
                                      server_default=""))
        batch_op.add_column(sa.Column("judged_since", arena.models.UTCDateTime(),
                                      nullable=True))
        batch_op.create_unique_constraint(batch_op.f("uq_bots_endpoint"), ["endpoint"])
        batch_op.create_unique_constraint(batch_op.f("uq_bots_pending_endpoint"),
                                          ["pending_endpoint"])
    with op.batch_alter_table("health_checks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("state", sa.String(length=16), nullable=False,
                                      server_default="done"))
        batch_op.add_column(sa.Column("purpose", sa.String(length=16), nullable=False,
                                      server_default="sweep"))
        batch_op.add_column(sa.Column("finished_at", arena.models.UTCDateTime(),
                                      nullable=True))
    conn = op.get_bind()
    bots = sa.table("bots", sa.column("id", sa.Integer()), sa.column("url", sa.Text()),
                    sa.column("deleted_at", sa.DateTime()),
                    sa.column("endpoint", sa.Text()))
    taken: set[str] = set()
    rows = conn.execute(sa.select(bots.c.id, bots.c.url)
                        .where(bots.c.deleted_at.is_(None)).order_by(bots.c.id)).all()
    for bot_id, url in rows:
        endpoint = _endpoint(url)
        if endpoint is None or endpoint in taken:
            continue
        taken.add(endpoint)
        conn.execute(sa.update(bots).where(bots.c.id == bot_id).values(endpoint=endpoint))


def downgrade() -> None:
    with op.batch_alter_table("health_checks", schema=None) as batch_op:
        batch_op.drop_column("finished_at")
        batch_op.drop_column("purpose")
        batch_op.drop_column("state")
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_bots_pending_endpoint"), type_="unique")
        batch_op.drop_constraint(batch_op.f("uq_bots_endpoint"), type_="unique")
        batch_op.drop_column("judged_since")
        batch_op.drop_column("pause_reason")
        batch_op.drop_column("check_state")
        batch_op.drop_column("pending_endpoint")
        batch_op.drop_column("pending_url")
        batch_op.drop_column("endpoint")
