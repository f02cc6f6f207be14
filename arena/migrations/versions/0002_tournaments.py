"""tournaments: formats, entrants, rounds, tables and their matches (arena.tournaments)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 02:45:59
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import arena.core.models

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tournaments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("ruleset", sa.String(length=64), nullable=False),
        sa.Column("family", sa.String(length=64), nullable=False),
        sa.Column("seats", sa.Integer(), nullable=False),
        sa.Column("deals", sa.Integer(), nullable=False),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.Column("duplicate", sa.Boolean(), nullable=False),
        sa.Column("advance", sa.Integer(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=True),
        sa.Column("cycles", sa.Integer(), nullable=False),
        sa.Column("rated", sa.Boolean(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("current_round", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("standings", sa.JSON(), nullable=True),
        sa.Column("created_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("started_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.Column("finished_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournaments")),
    )
    op.create_table(
        "tournament_entrants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("rating", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["bot_id"], ["bots.id"], name=op.f("fk_tournament_entrants_bot_id_bots")
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_tournament_entrants_tournament_id_tournaments"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournament_entrants")),
        sa.UniqueConstraint(
            "tournament_id", "bot_id", name=op.f("uq_tournament_entrants_tournament_id")
        ),
    )
    with op.batch_alter_table("tournament_entrants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tournament_entrants_bot_id"), ["bot_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_tournament_entrants_tournament_id"), ["tournament_id"], unique=False
        )

    op.create_table(
        "tournament_rounds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("byes", sa.JSON(), nullable=False),
        sa.Column("target", sa.Integer(), nullable=True),
        sa.Column("advanced", sa.JSON(), nullable=True),
        sa.Column("started_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.Column("finished_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_tournament_rounds_tournament_id_tournaments"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournament_rounds")),
        sa.UniqueConstraint(
            "tournament_id", "number", name=op.f("uq_tournament_rounds_tournament_id")
        ),
    )
    with op.batch_alter_table("tournament_rounds", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_tournament_rounds_tournament_id"), ["tournament_id"], unique=False
        )

    op.create_table(
        "tournament_tables",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("bots", sa.JSON(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["round_id"],
            ["tournament_rounds.id"],
            name=op.f("fk_tournament_tables_round_id_tournament_rounds"),
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_tournament_tables_tournament_id_tournaments"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournament_tables")),
        sa.UniqueConstraint("round_id", "number", name=op.f("uq_tournament_tables_round_id")),
    )
    with op.batch_alter_table("tournament_tables", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_tournament_tables_round_id"), ["round_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_tournament_tables_tournament_id"), ["tournament_id"], unique=False
        )

    op.create_table(
        "tournament_matches",
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("table_id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("rotation", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_tournament_matches_match_id_matches")
        ),
        sa.ForeignKeyConstraint(
            ["table_id"],
            ["tournament_tables.id"],
            name=op.f("fk_tournament_matches_table_id_tournament_tables"),
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_tournament_matches_tournament_id_tournaments"),
        ),
        sa.PrimaryKeyConstraint("match_id", name=op.f("pk_tournament_matches")),
        sa.UniqueConstraint("table_id", "rotation", name=op.f("uq_tournament_matches_table_id")),
    )
    with op.batch_alter_table("tournament_matches", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_tournament_matches_table_id"), ["table_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_tournament_matches_tournament_id"), ["tournament_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("tournament_matches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tournament_matches_tournament_id"))
        batch_op.drop_index(batch_op.f("ix_tournament_matches_table_id"))

    op.drop_table("tournament_matches")
    with op.batch_alter_table("tournament_tables", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tournament_tables_tournament_id"))
        batch_op.drop_index(batch_op.f("ix_tournament_tables_round_id"))

    op.drop_table("tournament_tables")
    with op.batch_alter_table("tournament_rounds", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tournament_rounds_tournament_id"))

    op.drop_table("tournament_rounds")
    with op.batch_alter_table("tournament_entrants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tournament_entrants_tournament_id"))
        batch_op.drop_index(batch_op.f("ix_tournament_entrants_bot_id"))

    op.drop_table("tournament_entrants")
    op.drop_table("tournaments")
