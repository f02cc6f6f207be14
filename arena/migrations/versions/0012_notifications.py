"""notifications: webhooks and webhook_deliveries

Owners register webhooks (issue 21 §4): an account's hear about every bot it owns, a bot
owner token's about that bot.  Each event for a webhook is a ``webhook_deliveries`` row written
in the transaction of the change it reports, then sent by a queue job with retries and
back-off; the row keeps the attempts, the answer's status, the latency and the next retry for
the owner's delivery log.  The signing secret of a webhook is derived, not stored
(``arena.core.signing.webhook_secret``): only its generation is.  Two new tables, so nothing
existing is copied on either database.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=True),
        sa.Column("bot_id", sa.Integer(), nullable=True),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("events", sa.String(length=200), nullable=False),
        sa.Column("secret_generation", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"],
                                name=op.f("fk_webhooks_account_id_accounts")),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_webhooks_bot_id_bots")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhooks")),
    )
    op.create_index(op.f("ix_webhooks_account_id"), "webhooks", ["account_id"])
    op.create_index(op.f("ix_webhooks_bot_id"), "webhooks", ["bot_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("webhook_id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(length=40), nullable=False),
        sa.Column("event_id", sa.String(length=32), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=True),
        sa.Column("last_attempt_at", sa.DateTime(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(), nullable=True),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(length=300), nullable=False),
        sa.ForeignKeyConstraint(["webhook_id"], ["webhooks.id"],
                                name=op.f("fk_webhook_deliveries_webhook_id_webhooks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
        sa.UniqueConstraint("event_id", name=op.f("uq_webhook_deliveries_event_id")),
    )
    op.create_index("ix_webhook_deliveries_webhook_id_id", "webhook_deliveries",
                    ["webhook_id", "id"])
    op.create_index("ix_webhook_deliveries_state_next", "webhook_deliveries",
                    ["state", "next_attempt_at"])


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_state_next", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_webhook_id_id", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index(op.f("ix_webhooks_bot_id"), table_name="webhooks")
    op.drop_index(op.f("ix_webhooks_account_id"), table_name="webhooks")
    op.drop_table("webhooks")
