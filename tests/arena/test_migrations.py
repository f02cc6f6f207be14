"""The Alembic migrations build exactly the schema the models describe."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from flask import Flask
from sqlalchemy import inspect

from arena.models import Base
from arena.storage import Database, alembic_config, current_revision, get_db, upgrade

from .conftest import both_backends


def head_revision(db: Database) -> str | None:
    from alembic.script import ScriptDirectory

    head: str | None = ScriptDirectory.from_config(alembic_config(db)).get_current_head()
    return head


@both_backends
def test_migrated_schema_equals_the_models(app: Flask) -> None:
    db = get_db(app)
    upgrade(db)  # a second upgrade is a no-op
    assert current_revision(db) == head_revision(db)
    with db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(ctx, Base.metadata)
    assert diff == []
    tables = set(inspect(db.engine).get_table_names())
    assert set(Base.metadata.tables) <= tables
