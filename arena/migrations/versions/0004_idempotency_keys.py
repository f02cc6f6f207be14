"""idempotency keys: stored (encrypted) responses of creating requests (arena.web.idempotency)

Revision ID: 0004
Revises: 0005
Create Date: 2026-12-01 09:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import arena.core.models

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("route", sa.String(length=200), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("claim", sa.String(length=32), nullable=False),
        sa.Column("locked_until", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("response", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.Column("expires_at", arena.core.models.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_idempotency_keys_key_hash")),
    )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_idempotency_keys_expires_at"), ["expires_at"],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_idempotency_keys_expires_at"))
    op.drop_table("idempotency_keys")
