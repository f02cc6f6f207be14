"""listing counts: the totals of the bot list and the leaderboards, maintained

``listing_counts`` (``name`` -> ``n``): ``bots:<status>``, the live bots of each status, and
``ratings:<family>``, the ratings each family's leaderboard lists, filled from the rows in one
set-based statement (a pass over the bots and one over the ratings: the matches are not
read).  From then on the service moves them in the transactions that change what they count
(:mod:`arena.core.counts`).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07 12:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# Frozen here (a migration never changes): arena.core.counts.RECOUNT_SQL as of 0014.
BACKFILL = """
INSERT INTO listing_counts (name, n)
SELECT 'bots:' || CASE WHEN owner_paused THEN 'paused'
                       WHEN check_state = 'pending' THEN 'pending'
                       WHEN check_state = 'failed' THEN 'rejected'
                       WHEN health_paused THEN 'unhealthy'
                       ELSE 'active' END AS name, count(*) AS n
FROM bots WHERE deleted_at IS NULL GROUP BY 1
UNION ALL
SELECT 'ratings:' || r.family AS name, count(*) AS n FROM ratings r
WHERE NOT EXISTS (SELECT 1 FROM bots b WHERE b.id = r.bot_id AND b.deleted_at IS NOT NULL)
GROUP BY r.family
"""


def upgrade() -> None:
    op.create_table(
        "listing_counts",
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_listing_counts")),
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    op.drop_table("listing_counts")
