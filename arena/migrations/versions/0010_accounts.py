"""owner accounts: accounts, account_tokens, sign_in_delays; bots.account_id

Accounts that own bots (issue 21): an account (username, argon2id password hash, optional
e-mail, the one outstanding operator reset), its named scoped API tokens (hashed), and the
failed sign-ins per account and client that slow guessing down.  ``bots.account_id`` is
nullable: every existing bot keeps its owner token and has no account until its owner adopts
it.  SQLite adds the column with its foreign key by copying ``bots`` in batch mode (foreign
keys are off around migrations there, ``migrations/env.py``); PostgreSQL adds it in place.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 21:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(length=32), nullable=False),
        sa.Column("username_key", sa.String(length=32), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=True),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("password_changed_at", sa.DateTime(), nullable=False),
        sa.Column("reset_hash", sa.String(length=64), nullable=True),
        sa.Column("reset_expires_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
        sa.UniqueConstraint("username_key", name=op.f("uq_accounts_username_key")),
    )
    op.create_table(
        "account_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"],
                                name=op.f("fk_account_tokens_account_id_accounts")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_account_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_account_tokens_token_hash")),
    )
    op.create_index(op.f("ix_account_tokens_account_id"), "account_tokens", ["account_id"])
    op.create_table(
        "sign_in_delays",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("client", sa.String(length=80), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("until", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"],
                                name=op.f("fk_sign_in_delays_account_id_accounts")),
        sa.PrimaryKeyConstraint("account_id", "client", name=op.f("pk_sign_in_delays")),
    )
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.add_column(sa.Column("account_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_bots_account_id"), ["account_id"])
        batch_op.create_foreign_key(batch_op.f("fk_bots_account_id_accounts"), "accounts",
                                    ["account_id"], ["id"])
    _restore_0008_indexes()


def _restore_0008_indexes() -> None:
    """SQLite's batch mode rebuilds ``bots`` from what it can reflect, and it cannot reflect
    0008's expression index (nor keep its partial one): put both back, as 0008 made them."""
    if op.get_bind().dialect.name == "sqlite":
        op.execute("CREATE INDEX IF NOT EXISTS ix_bots_name_lower ON bots (lower(name))")
        op.execute("CREATE INDEX IF NOT EXISTS ix_bots_deleted ON bots (id) "
                   "WHERE deleted_at IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_bots_account_id_accounts"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_bots_account_id"))
        batch_op.drop_column("account_id")
    _restore_0008_indexes()
    op.drop_table("sign_in_delays")
    op.drop_index(op.f("ix_account_tokens_account_id"), table_name="account_tokens")
    op.drop_table("account_tokens")
    op.drop_table("accounts")
