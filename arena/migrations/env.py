"""Alembic environment: the engine comes from the app (``arena.core.storage.alembic_config``).

On SQLite, changing a column's type means copying its table (Alembic's batch mode: create a
new table, copy the rows, drop the old one, rename).  With foreign keys enforced, dropping a
table that other rows reference fails, so they are switched off for the migrations (SQLite
only allows that outside a transaction, hence on the raw connection before Alembic begins
one), every foreign key is checked once the migrations have committed, and enforcement is
switched back on before the connection returns to the pool."""

from __future__ import annotations

from typing import Any

from alembic import context

from arena.core.models import Base, in_this_database

config = context.config
target_metadata = Base.metadata


def _sqlite_foreign_keys(connection: Any, on: bool) -> None:
    cur = connection.connection.dbapi_connection.cursor()
    try:
        cur.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")
    finally:
        cur.close()


def run_migrations_online() -> None:
    engine = config.attributes["engine"]
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            _sqlite_foreign_keys(connection, on=False)
        try:
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=sqlite,
                compare_type=True,
                include_object=in_this_database(connection.dialect.name),
            )
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
            if sqlite:
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                connection.commit()
                if broken:
                    raise RuntimeError(f"foreign keys broken by the migrations: {broken[:5]}")
        finally:
            if sqlite:
                connection.rollback()
                _sqlite_foreign_keys(connection, on=True)


if context.is_offline_mode():  # pragma: no cover - we only migrate live databases
    raise SystemExit("offline migrations are not supported; run `arena migrate`")
run_migrations_online()
