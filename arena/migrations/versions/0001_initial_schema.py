"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-30 02:26:04.266965
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import arena.core.models

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "bots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("updated_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("deleted_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.Column("owner_paused", sa.Boolean(), nullable=False),
        sa.Column("health_paused", sa.Boolean(), nullable=False),
        sa.Column("health_failures", sa.Integer(), nullable=False),
        sa.Column("last_health_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.Column("last_health_reason", sa.Text(), nullable=False),
        sa.Column("idle_since", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bots")),
        sa.UniqueConstraint("name", name=op.f("uq_bots_name")),
    )
    op.create_table(
        "matches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("ruleset", sa.String(length=64), nullable=False),
        sa.Column("family", sa.String(length=64), nullable=False),
        sa.Column("deals", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.Column("rated", sa.Boolean(), nullable=False),
        sa.Column("created_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("queued_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("started_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.Column("finished_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("enqueues", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.String(length=64), nullable=True),
        sa.Column("lease_token", sa.String(length=64), nullable=True),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", arena.core.models.UTCDateTime(), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_matches")),
    )
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.create_index("ix_matches_state_created", ["state", "created_at"], unique=False)

    op.create_table(
        "rating_families",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("results", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_rating_families")),
    )
    op.create_table(
        "bot_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("created_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_bot_versions_bot_id_bots")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bot_versions")),
        sa.UniqueConstraint("bot_id", "version", name=op.f("uq_bot_versions_bot_id")),
    )
    with op.batch_alter_table("bot_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_bot_versions_bot_id"), ["bot_id"], unique=False)

    op.create_table(
        "health_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("describe_ms", sa.Float(), nullable=True),
        sa.Column("move_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_health_checks_bot_id_bots")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_health_checks")),
    )
    with op.batch_alter_table("health_checks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_health_checks_bot_id"), ["bot_id"], unique=False)

    op.create_table(
        "match_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("family", sa.String(length=64), nullable=False),
        sa.Column("created_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("totals", sa.JSON(), nullable=False),
        sa.Column("log_gz", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_match_results_match_id_matches")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_match_results")),
        sa.UniqueConstraint("match_id", name=op.f("uq_match_results_match_id")),
    )
    with op.batch_alter_table("match_results", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_match_results_family"), ["family"], unique=False)

    op.create_table(
        "ratings",
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("family", sa.String(length=64), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("updated_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_ratings_bot_id_bots")),
        sa.PrimaryKeyConstraint("bot_id", "family", name=op.f("pk_ratings")),
    )
    op.create_table(
        "match_seats",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("bot_version_id", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=True),
        sa.Column("score", sa.Integer(), nullable=True),
        sa.Column("wins", sa.Integer(), nullable=True),
        sa.Column("strikes", sa.Integer(), nullable=True),
        sa.Column("forfeited", sa.Boolean(), nullable=True),
        sa.Column("calls", sa.Integer(), nullable=True),
        sa.Column("p50_ms", sa.Float(), nullable=True),
        sa.Column("p95_ms", sa.Float(), nullable=True),
        sa.Column("max_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_match_seats_bot_id_bots")),
        sa.ForeignKeyConstraint(
            ["bot_version_id"],
            ["bot_versions.id"],
            name=op.f("fk_match_seats_bot_version_id_bot_versions"),
        ),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_match_seats_match_id_matches")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_match_seats")),
        sa.UniqueConstraint("match_id", "seat", name=op.f("uq_match_seats_match_id")),
    )
    with op.batch_alter_table("match_seats", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_match_seats_bot_id"), ["bot_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_match_seats_match_id"), ["match_id"], unique=False)

    op.create_table(
        "rating_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("family", sa.String(length=64), nullable=False),
        sa.Column("before", sa.Float(), nullable=False),
        sa.Column("after", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("created_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_rating_events_bot_id_bots")),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_rating_events_match_id_matches")
        ),
        sa.ForeignKeyConstraint(
            ["result_id"],
            ["match_results.id"],
            name=op.f("fk_rating_events_result_id_match_results"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rating_events")),
        sa.UniqueConstraint("match_id", "bot_id", name=op.f("uq_rating_events_match_id")),
    )
    with op.batch_alter_table("rating_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rating_events_bot_id"), ["bot_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_rating_events_result_id"), ["result_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("rating_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rating_events_result_id"))
        batch_op.drop_index(batch_op.f("ix_rating_events_bot_id"))

    op.drop_table("rating_events")
    with op.batch_alter_table("match_seats", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_match_seats_match_id"))
        batch_op.drop_index(batch_op.f("ix_match_seats_bot_id"))

    op.drop_table("match_seats")
    op.drop_table("ratings")
    with op.batch_alter_table("match_results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_match_results_family"))

    op.drop_table("match_results")
    with op.batch_alter_table("health_checks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_health_checks_bot_id"))

    op.drop_table("health_checks")
    with op.batch_alter_table("bot_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_bot_versions_bot_id"))

    op.drop_table("bot_versions")
    op.drop_table("rating_families")
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_index("ix_matches_state_created")

    op.drop_table("matches")
    op.drop_table("bots")
