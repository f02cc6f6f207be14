"""signing rotation grace: bots.signing_previous_generation, bots.signing_rotated_at

After a rotation the arena signs with the new and the previous secret for
SIGNING_ROTATION_GRACE_S (issue 19 §4: rotating benched the bot before its owner had restarted
it).  The secrets are derived, not stored (``arena.core.signing``), so the previous one needs only
its generation, and the grace its start.  Both are NULL for every existing bot: no grace is in
progress when this runs (a rotation made just before it ends the old secret at once, as it did).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 20:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import arena.core.models

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE on both databases (nullable columns): no copy of the bots table,
    # which other tables reference.
    op.add_column("bots", sa.Column("signing_previous_generation", sa.Integer(), nullable=True))
    op.add_column("bots", sa.Column("signing_rotated_at", arena.core.models.UTCDateTime(),
                                    nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE bots DROP COLUMN signing_rotated_at")
    op.execute("ALTER TABLE bots DROP COLUMN signing_previous_generation")
