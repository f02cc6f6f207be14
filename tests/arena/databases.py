"""Test databases: the migrations run once per test process into a template, and every test
gets a copy of it.

Running the Alembic migrations for each test cost more than most tests (ten revisions of DDL,
and on PostgreSQL a ``DROP SCHEMA ... CASCADE`` before and after); a copy of an already
migrated database is what each test needs and is much cheaper (``bench/db_setup.py``
measures both side by side):

* SQLite: one migrated file per process; a test's database is a file copy of it.
* PostgreSQL: one migrated template database per process; a test's database is
  ``CREATE DATABASE ... TEMPLATE`` of it.  After the test it is emptied in place for the next
  test when that provably gives what a new copy would (``PgDatabases.release``: no session
  left on it, its schema and Alembic revision still the template's; then every table emptied
  and every sequence restarted), and dropped otherwise.  A copy and a drop cost ~0.3 s on a
  quiet machine and seconds on a busy one (each waits for the server's disk); emptying the few
  rows a test wrote costs milliseconds.

The migration tests (``tests/arena/test_migrations.py``) keep migrating for real: they take an
empty database (``empty_database_url``), never a copy.
"""

from __future__ import annotations

import graphlib
import itertools
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

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


# What a test could change in its database's schema (a downgrade and upgrade, a table of its
# own, an index): relations with their columns, constraints and indexes, and the functions and
# triggers of the public schema.  Equal to the template's, the schema is the template's.
SCHEMA_FINGERPRINT = """
SELECT md5(string_agg(x, ',' ORDER BY x)) FROM (
  SELECT c.relname::text || ':' || c.relkind::text || ':' || coalesce(a.attname::text, '')
         || ':' || coalesce(a.attnum, 0)::text || ':' || coalesce(a.atttypid, 0)::text
         || ':' || coalesce(a.attnotnull::text, '') || ':' || coalesce(a.atthasdef::text, '') AS x
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
     AND n.nspname NOT LIKE 'pg_temp%' AND n.nspname NOT LIKE 'pg_toast_temp%'
  UNION ALL SELECT conname::text || ':' || pg_get_constraintdef(oid) FROM pg_constraint
   WHERE connamespace = 'public'::regnamespace
  UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'
  UNION ALL SELECT 'fn:' || p.oid::regprocedure::text FROM pg_proc p
   WHERE p.pronamespace = 'public'::regnamespace
  UNION ALL SELECT 'tg:' || tgname::text FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL SELECT 'ns:' || nspname::text FROM pg_namespace) s
"""

# The tables of the public schema and their foreign keys (child -> parent).
TABLES = """
SELECT oid::regclass::text FROM pg_class
 WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')"""
FOREIGN_KEYS = """
SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint
 WHERE contype = 'f' AND connamespace = 'public'::regnamespace"""


class PgDatabases:
    """The run's PostgreSQL databases on one server: an empty one (for the migration tests),
    a migrated template, and a copy of the template per test (emptied in place and handed to
    the next test when that is provably the same as a new copy: ``release``)."""

    def __init__(self, admin: str) -> None:
        self.admin = admin
        self.prefix = f"arena_test_{uuid.uuid4().hex[:10]}"
        self.template = f"{self.prefix}_template"
        self._numbers = itertools.count(1)
        self._migrated = False
        self._spare: str | None = None  # an emptied copy, ready for the next test
        self._schema: tuple[str, list[tuple[str, ...]]] | None = None  # the template's
        self.reused = 0  # copies handed out again (bench/db_setup.py, the tests of this)
        self._handouts = itertools.count(1)

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
        """A test's own migrated database: (name, SQLAlchemy URL).  The URL is the test's
        own even when the database is an emptied one: it names the hand-out
        (``application_name``), so what a process keeps per ``DATABASE_URL`` (the rendered
        tournament pages, say) is never another test's."""
        if self._spare is not None:
            name, self._spare = self._spare, None
            self.reused += 1
        else:
            if not self._migrated:
                migrate(self.create(self.template))
                self._schema = self._state(self.template)
                self._migrated = True
            name = f"{self.prefix}_{next(self._numbers)}"
            self.create(name, template=self.template)
        return name, f"{sqlalchemy_url(self.admin, name)}?application_name={name}-" \
                     f"{next(self._handouts)}"

    def release(self, name: str) -> None:
        """The test is done with its copy: empty it for the next test, or drop it when an
        emptied copy could differ from a new one in any way this can see."""
        if self._spare is None and self._empty_in_place(name):
            self._spare = name
        else:
            self.drop(name)

    def _connect(self, name: str) -> Any:
        import psycopg

        return psycopg.connect(f"{self.admin.rsplit('/', 1)[0]}/{name}", connect_timeout=10)

    def _state(self, name: str) -> tuple[str, list[tuple[str, ...]]]:
        """The schema's fingerprint and the Alembic revision rows of database ``name``."""
        with self._connect(name) as conn:
            fingerprint = conn.execute(SCHEMA_FINGERPRINT).fetchone()[0]
            revisions = [tuple(r) for r in conn.execute("SELECT * FROM alembic_version")]
            return fingerprint, sorted(revisions)

    @staticmethod
    def _other_sessions(conn: Any) -> int:
        """Sessions on this database besides ``conn``'s (a fresh reading each time: the
        statistics views keep one snapshot per transaction unless it is cleared)."""
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone()
        return 1 if row is None else int(row[0])

    def _empty_in_place(self, name: str) -> bool:
        """Delete every row (children before parents), restart every sequence, in one
        transaction; only when no other session is on the database (a leftover connection of
        the test could write into the next test's rows: the drop ends it instead) and the
        schema and revision are still the template's.  False, with nothing promised about the
        database, when any of that does not hold or anything fails."""
        try:
            with self._connect(name) as conn:
                others = self._other_sessions(conn)
                # A connection the test closed has a backend that exits a moment later (longer
                # on a busy machine): give it that moment.  One still open stays, and the
                # copy is dropped, as before.
                deadline = time.monotonic() + 5.0
                while others and time.monotonic() < deadline:
                    time.sleep(0.05)
                    others = self._other_sessions(conn)
                if others or self._schema is None:
                    return False
                fingerprint = conn.execute(SCHEMA_FINGERPRINT).fetchone()[0]
                revisions = sorted(tuple(r) for r in conn.execute("SELECT * FROM alembic_version"))
                if (fingerprint, revisions) != self._schema:
                    return False
                conn.execute("SET LOCAL lock_timeout = '10s'")
                # Each table after the tables whose rows point at it (a table's own rows may
                # point at each other: one DELETE removes them all).
                referrers: dict[str, set[str]] = {t: set() for (t,) in conn.execute(TABLES)}
                for child, parent in conn.execute(FOREIGN_KEYS):
                    if child != parent:
                        referrers[parent].add(child)
                for table in graphlib.TopologicalSorter(referrers).static_order():
                    if table != "alembic_version":
                        conn.execute(f"DELETE FROM {table}")
                conn.execute(
                    "SELECT setval(format('%I.%I', schemaname, sequencename), start_value, false)"
                    " FROM pg_sequences WHERE schemaname = 'public'")
                conn.commit()
                return True
        except Exception:
            return False

    def close(self) -> None:
        if self._spare is not None:
            self.drop(self._spare)
            self._spare = None
        if self._migrated:
            self.drop(self.template)
