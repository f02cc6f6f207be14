"""rule-set names: widen matches.ruleset and tournaments.ruleset from 64 to 1000 characters;
an index for the match list filtered by rule set

A preset with option changes is named in one string, ``name+key=value,...`` (docs/rules.md);
a few options already take more than 64 characters, and a name cut short would name other
rules.  PostgreSQL widens the columns in place (no rewrite: a longer ``varchar`` limit).
SQLite keeps lengths only in the declared type, so the batch mode copies each table; its
foreign keys are switched off around the migrations for that copy (``migrations/env.py``),
and checked afterwards.  The downgrade narrows the columns again and refuses, naming them,
while any stored name is longer than 64 characters.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 12:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

WIDE = 1000
NARROW = 64
TABLES = ("matches", "tournaments")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column("ruleset", existing_type=sa.String(NARROW),
                                  type_=sa.String(WIDE), existing_nullable=False)
    with op.batch_alter_table("matches", schema=None) as batch_op:
        # The match list filtered by rule set (/matches?ruleset=): WHERE ruleset = ? AND
        # id < :cursor ORDER BY id DESC LIMIT n.
        batch_op.create_index("ix_matches_ruleset_id", ["ruleset", "id"])


def downgrade() -> None:
    conn = op.get_bind()
    for table in TABLES:
        t = sa.table(table, sa.column("id", sa.Integer), sa.column("ruleset", sa.String))
        long_ids = list(conn.execute(sa.select(t.c.id).where(
            sa.func.length(t.c.ruleset) > NARROW).order_by(t.c.id).limit(10)).scalars())
        if long_ids:
            raise RuntimeError(f"cannot narrow {table}.ruleset to {NARROW} characters: rows "
                               f"{long_ids} have longer rule-set names")
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_index("ix_matches_ruleset_id")
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column("ruleset", existing_type=sa.String(WIDE),
                                  type_=sa.String(NARROW), existing_nullable=False)
