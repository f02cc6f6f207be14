"""The tests' PostgreSQL copies (tests/arena/databases.py): a copy released by one test is
handed to the next one only when it is what a new copy of the template would be."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from .conftest import pg_admin_or_skip
from .databases import PgDatabases

pytestmark = pytest.mark.postgres


@pytest.fixture
def dbs() -> Iterator[PgDatabases]:
    databases = PgDatabases(pg_admin_or_skip())
    yield databases
    databases.close()


def connect(dbs: PgDatabases, name: str) -> psycopg.Connection:
    return psycopg.connect(f"{dbs.admin.rsplit('/', 1)[0]}/{name}", autocommit=True)


def exists(dbs: PgDatabases, name: str) -> bool:
    with psycopg.connect(dbs.admin, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() \
            is not None


def write_rows(dbs: PgDatabases, name: str) -> None:
    """An account and a token of it (a row pointing at another: emptied child first)."""
    with connect(dbs, name) as conn:
        conn.execute("INSERT INTO accounts (username, username_key, password_hash, created_at,"
                     " password_changed_at) VALUES ('A', 'a', 'x', now(), now())")
        conn.execute("INSERT INTO account_tokens (account_id, name, token_hash, scopes,"
                     " created_at) SELECT id, 't', md5(random()::text), 'bots:read', now()"
                     " FROM accounts")


def test_a_released_copy_comes_back_empty_with_its_sequences_restarted(
        dbs: PgDatabases) -> None:
    first, first_url = dbs.copy()
    write_rows(dbs, first)
    dbs.release(first)
    again, again_url = dbs.copy()
    assert again == first and dbs.reused == 1
    # What a process keeps per DATABASE_URL (rendered tournament pages) is the test's own.
    assert again_url != first_url
    with connect(dbs, again) as conn:
        tables = [t for (t,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            " AND tablename <> 'alembic_version'")]
        assert tables
        for table in tables:
            assert conn.execute(f'SELECT count(*) FROM "{table}"').fetchone() == (0,), table
        assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
    # The next row gets the id a new copy's first row gets.
    write_rows(dbs, again)
    with connect(dbs, again) as conn:
        assert conn.execute("SELECT id FROM accounts").fetchone() == (1,)
        assert conn.execute("SELECT id FROM account_tokens").fetchone() == (1,)
    dbs.release(again)


def test_a_copy_whose_schema_changed_is_dropped(dbs: PgDatabases) -> None:
    first, _ = dbs.copy()
    with connect(dbs, first) as conn:
        conn.execute("CREATE TABLE of_a_test (id int)")
    dbs.release(first)
    assert not exists(dbs, first)
    second, _ = dbs.copy()
    assert second != first and dbs.reused == 0
    dbs.release(second)


def test_a_copy_at_another_revision_is_dropped(dbs: PgDatabases) -> None:
    first, _ = dbs.copy()
    with connect(dbs, first) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0012_notifications'")
    dbs.release(first)
    assert not exists(dbs, first)


def test_a_copy_with_a_session_still_on_it_is_dropped_ending_the_session(
        dbs: PgDatabases) -> None:
    first, _ = dbs.copy()
    leftover = connect(dbs, first)
    try:
        dbs.release(first)
        assert not exists(dbs, first)
        with pytest.raises(psycopg.OperationalError):
            leftover.execute("SELECT 1")
    finally:
        leftover.close()
