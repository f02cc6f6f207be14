"""ladder duplicate sets: which ladder matches are rotations of one set (same deals)

``ladder_set_matches``: one row per rotation of a duplicate set played by the ladder
(``LADDER_FORMAT=duplicate``, :mod:`arena.play.duplicate_sets`); ``set_id`` is the id of the
set's rotation-0 match.  Plain ladder matches, and every match before this revision, have no row.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 21:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ladder_set_matches",
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("rotation", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"],
                                name=op.f("fk_ladder_set_matches_match_id_matches")),
        sa.ForeignKeyConstraint(["set_id"], ["matches.id"],
                                name=op.f("fk_ladder_set_matches_set_id_matches")),
        sa.PrimaryKeyConstraint("match_id", name=op.f("pk_ladder_set_matches")),
        sa.UniqueConstraint("set_id", "rotation", name=op.f("uq_ladder_set_matches_set_id")),
    )
    op.create_index(op.f("ix_ladder_set_matches_set_id"), "ladder_set_matches", ["set_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_ladder_set_matches_set_id"), table_name="ladder_set_matches")
    op.drop_table("ladder_set_matches")
