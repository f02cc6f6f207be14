"""Test databases: the migrations run once per test process into a template, and every test
gets a copy of it.

Running the Alembic migrations for each test cost more than most tests (ten revisions of DDL,
and on PostgreSQL a ``DROP SCHEMA ... CASCADE`` before and after); a copy of an already
migrated database is what each test needs and is much cheaper (``bench/db_setup.py``
measures both side by side):

* SQLite: one migrated file per process; a test's database is a file copy of it.
* PostgreSQL: one migrated template database per process; a test's database is
  ``CREATE DATABASE ... TEMPLATE`` of it, dropped after the test.

The migration tests (``tests/arena/test_migrations.py``) keep migrating for real: they take an
empty database (``empty_database_url``), never a copy.
"""

from __future__ import annotations

import itertools
import shutil
import uuid
from pathlib import Path

from arena.core.storage import Database, upgrade


def migrate(url: str) -> None:
    """Bring the database at ``url`` to the newest revision and close every connection."""
    db = Database(url)
    try:
        upgrade(db)
    finally:
        db.dispose()


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def sqlite_template(folder: Path) -> Path:
    """A migrated SQLite file (closed, so its write-ahead log is folded into it)."""
    path = folder / "template.sqlite3"
    migrate(sqlite_url(path))
    assert not Path(f"{path}-wal").exists(), "the template's WAL was not checkpointed"
    return path


def sqlite_copy(template: Path, dest: Path) -> str:
    """A test's own migrated SQLite database: a copy of the template file."""
    shutil.copyfile(template, dest)
    return sqlite_url(dest)


def sqlalchemy_url(admin: str, name: str) -> str:
    """The SQLAlchemy URL (psycopg 3 driver) of database ``name`` on the admin URL's server."""
    base = admin.rsplit("/", 1)[0]
    return f"postgresql+psycopg://{base.split('://', 1)[1]}/{name}"


class PgDatabases:
    """The run's PostgreSQL databases on one server: an empty one (for the migration tests),
    a migrated template, and a copy of the template per test."""

    def __init__(self, admin: str) -> None:
        self.admin = admin
        self.prefix = f"arena_test_{uuid.uuid4().hex[:10]}"
        self.template = f"{self.prefix}_template"
        self._numbers = itertools.count(1)
        self._migrated = False

    def _execute(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def create(self, name: str, template: str | None = None) -> str:
        """A new database (a copy of ``template`` if given); its SQLAlchemy URL."""
        copy = f' TEMPLATE "{template}"' if template else ""
        self._execute(
            f'CREATE DATABASE "{name}"{copy}',
            # A commit need not wait for its WAL flush here (a crash of the server loses the
            # test database anyway); what the tests see of transactions is unchanged.  On a
            # busy machine a flush costs ~10 ms per commit, and the seeding tests commit
            # thousands.  (A setting of a database is not copied with it.)
            f'ALTER DATABASE "{name}" SET synchronous_commit TO off')
        return sqlalchemy_url(self.admin, name)

    def drop(self, name: str) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def copy(self) -> tuple[str, str]:
        """A test's own migrated database: (name, SQLAlchemy URL)."""
        if not self._migrated:
            migrate(self.create(self.template))
            self._migrated = True
        name = f"{self.prefix}_{next(self._numbers)}"
        return name, self.create(name, template=self.template)

    def close(self) -> None:
        if self._migrated:
            self.drop(self.template)
