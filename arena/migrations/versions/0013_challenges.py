"""challenges: an owner's matches on demand, and a bot's opt-out

``bots.accepts_challenges`` (true for every bot already there: a bot may be challenged until
its owner opts out), ``challenges`` (one per request: the challenger, the owner its limits
count, the rule set, deals, rated, its state and, once started, its match) and
``challenge_opponents`` (the bots it challenged, in seat order).  See
:mod:`arena.play.challenges`.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06 02:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("bots", sa.Column("accepts_challenges", sa.Boolean(), nullable=False,
                                    server_default=sa.text("true")))
    op.create_table(
        "challenges",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=40), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("ruleset", sa.String(length=1000), nullable=False),
        sa.Column("deals", sa.Integer(), nullable=False),
        sa.Column("rated", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_challenges_bot_id_bots")),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"],
                                name=op.f("fk_challenges_match_id_matches")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_challenges")),
        sa.UniqueConstraint("match_id", name=op.f("uq_challenges_match_id")),
    )
    op.create_index("ix_challenges_state_id", "challenges", ["state", "id"])
    op.create_index("ix_challenges_owner_created_at", "challenges", ["owner", "created_at"])
    op.create_table(
        "challenge_opponents",
        sa.Column("challenge_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["challenge_id"], ["challenges.id"],
                                name=op.f("fk_challenge_opponents_challenge_id_challenges")),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"],
                                name=op.f("fk_challenge_opponents_bot_id_bots")),
        sa.PrimaryKeyConstraint("challenge_id", "position", name=op.f("pk_challenge_opponents")),
    )
    op.create_index("ix_challenge_opponents_bot_id_challenge_id", "challenge_opponents",
                    ["bot_id", "challenge_id"])


def downgrade() -> None:
    op.drop_index("ix_challenge_opponents_bot_id_challenge_id",
                  table_name="challenge_opponents")
    op.drop_table("challenge_opponents")
    op.drop_index("ix_challenges_owner_created_at", table_name="challenges")
    op.drop_index("ix_challenges_state_id", table_name="challenges")
    op.drop_table("challenges")
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_column("accepts_challenges")
    if op.get_bind().dialect.name == "sqlite":  # the batch rebuild loses 0008's indexes
        op.execute("CREATE INDEX IF NOT EXISTS ix_bots_name_lower ON bots (lower(name))")
        op.execute("CREATE INDEX IF NOT EXISTS ix_bots_deleted ON bots (id) "
                   "WHERE deleted_at IS NOT NULL")
