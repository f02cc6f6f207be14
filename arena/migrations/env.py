"""Alembic environment: the engine comes from the app (``arena.storage.alembic_config``)."""

from __future__ import annotations

from alembic import context

from arena.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    engine = config.attributes["engine"]
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():  # pragma: no cover - we only migrate live databases
    raise SystemExit("offline migrations are not supported; run `arena migrate`")
run_migrations_online()
