"""Storage: the SQLAlchemy engine and sessions of an app, and the Alembic migrations.

``init_app(app)`` builds one engine per app (``DATABASE_URL``, or an SQLite file in the
instance folder) and closes the request's session at teardown.  Views use :func:`session`
(one per request); jobs and commands use ``db.begin()`` blocks.

SQLite (the embedded default) is opened in WAL mode with ``BEGIN IMMEDIATE`` transactions, so
concurrent writers (web + several workers) queue on the lock instead of failing half-way, and
read-modify-write sequences are serialised exactly as ``SELECT ... FOR UPDATE`` serialises
them on PostgreSQL.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from flask import Flask, current_app, g
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from . import counts as _counts  # noqa: F401  (its listener moves the listing counts)
from . import metrics

MIGRATIONS = Path(__file__).resolve().parents[1] / "migrations"
READ_SNAPSHOT = "arena_read_snapshot"
"""Execution option of a connection that only reads, in one snapshot (see
:func:`arena.play.ratings.snapshot`)."""


def database_url(app: Flask) -> str:
    return resolve_database_url(str(app.config["DATABASE_URL"] or ""), app.instance_path)


def resolve_database_url(url: str, instance_path: str) -> str:
    """``DATABASE_URL`` as the engine is given it: empty means the instance's SQLite file."""
    if not url:
        return f"sqlite:///{Path(instance_path) / 'arena.sqlite3'}"
    # The usual PostgreSQL spellings mean the psycopg 3 driver here.
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


@dataclass(frozen=True)
class PoolSize:
    """How many connections one process may hold (see ``DATABASE_POOL_SIZE``)."""

    size: int = 5
    overflow: int = 5
    timeout_s: float = 30.0


def sqlite_file(url: str) -> Path | None:
    """The file of an SQLite URL (None: not SQLite, or an in-memory database)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def make_engine(url: str, *, echo: bool = False, busy_timeout_s: float = 30.0,
                pool: PoolSize = PoolSize(), statement_timeout_ms: int = 0,
                connect_timeout_s: float = 0.0) -> Engine:
    parsed = make_url(url)
    sizing: dict[str, Any] = {"pool_size": pool.size, "max_overflow": pool.overflow,
                              "pool_timeout": pool.timeout_s}
    if parsed.get_backend_name() == "sqlite":
        memory = not parsed.database or parsed.database == ":memory:"
        engine = create_engine(
            url, echo=echo, connect_args={"timeout": busy_timeout_s, "check_same_thread": False},
            **({} if memory else sizing),
        )

        @event.listens_for(engine, "do_connect")
        def _make_folder(dialect: Any, record: Any, cargs: Any, cparams: Any) -> None:
            # On the first connection, not when the app is built: building an app (as a
            # read-only command does) leaves no folder behind.
            if not memory and parsed.database:
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            # A read snapshot (arena.play.ratings.snapshot) needs no write lock: a deferred
            # transaction reads one consistent state of the WAL from its first read on.
            read_only = conn.get_execution_options().get(READ_SNAPSHOT, False)
            conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

        return engine
    connect_args: dict[str, Any] = {}
    if statement_timeout_ms > 0 and parsed.get_backend_name() == "postgresql":
        connect_args["options"] = f"-c statement_timeout={int(statement_timeout_ms)}"
    if connect_timeout_s > 0 and parsed.get_backend_name() == "postgresql" and (
            "connect_timeout" not in parsed.query):
        # libpq's, per host: a primary that vanished without a word (no RST) is given up
        # after this long and the next host of a multi-host URL tried.
        connect_args["connect_timeout"] = max(2, math.ceil(connect_timeout_s))
    return create_engine(url, echo=echo, pool_pre_ping=True, connect_args=connect_args,
                         json_deserializer=json_from_driver, **sizing)


_JSON = json.JSONDecoder()


def json_from_driver(data: bytes | str) -> Any:
    """A JSON column's value as the driver hands it over (PostgreSQL's text, UTF-8), decoded
    by orjson.  A bracket decodes ~200 such documents (each table's seats and result), a
    tenth of its render with json's decoder.  What orjson refuses and json takes (a lone
    surrogate's escape kept from before the text rule, a ``NaN``) is decoded by json,
    without ``json.loads``' wrapper and its guess of the encoding; so is a document with a
    run of 19 digits or more, where orjson would read an integer beyond 64 bits as a float
    (json keeps it exact)."""
    exact = (_LONG_DIGITS_TEXT.search(data) if isinstance(data, str)
             else _LONG_DIGITS.search(data)) is None
    if exact:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    text = data if isinstance(data, str) else data.decode("utf-8", "surrogatepass")
    return _JSON.decode(text)


_LONG_DIGITS = re.compile(rb"[0-9]{19}")
_LONG_DIGITS_TEXT = re.compile(r"[0-9]{19}")


def count_pool_use(engine: Engine, capacity: int) -> None:
    """Keep ``arena_db_pool_connections_in_use`` (checked out now) and ``..._max`` (the
    pool's size plus overflow) for ``engine``'s pool, from the pool's own events."""
    metrics.DB_POOL_MAX.set(capacity)

    @event.listens_for(engine, "checkout")
    def _out(dbapi_conn: Any, record: Any, proxy: Any) -> None:
        metrics.DB_POOL_IN_USE.inc()

    @event.listens_for(engine, "checkin")
    def _in(dbapi_conn: Any, record: Any) -> None:
        metrics.DB_POOL_IN_USE.dec()


class Database:
    """An app's engine and session factory."""

    def __init__(self, url: str, *, echo: bool = False, busy_timeout_s: float = 30.0,
                 pool: PoolSize = PoolSize(), statement_timeout_ms: int = 0,
                 connect_timeout_s: float = 0.0) -> None:
        self.url = url
        self.pid = os.getpid()
        self.engine = make_engine(url, echo=echo, busy_timeout_s=busy_timeout_s, pool=pool,
                                  statement_timeout_ms=statement_timeout_ms,
                                  connect_timeout_s=connect_timeout_s)
        count_pool_use(self.engine, pool.size + pool.overflow)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def begin(self) -> Iterator[Session]:
        """A session in one transaction: committed on success, rolled back on error."""
        with self.sessions() as s, s.begin():
            yield s

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def ensure_process(self) -> None:
        """After a fork (RQ runs each job in a forked work horse), drop the pooled
        connections inherited from the parent without closing them under its feet."""
        if self.pid != os.getpid():
            self.engine.dispose(close=False)
            self.pid = os.getpid()

    def dispose(self) -> None:
        self.engine.dispose()


CONNECTION_SQLSTATES = ("08", "57P01", "57P02", "57P03", "53300")
"""PostgreSQL error codes (prefixes) that mean "no usable connection": class 08 (connection
exception), the server shutting down or not yet accepting connections (57P01-57P03: a
failover's old primary, a standby being promoted), too many connections (53300).  Not
57014 (a statement cancelled by ``statement_timeout``): that is a slow query, not an outage."""


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached now (an outage, a failover) rather
    than that a statement is wrong: what the web answers 503 (try again) instead of 500.

    Connection-class: a connection SQLAlchemy found dead (``connection_invalidated``, a
    ``DisconnectionError``), no pooled connection in time (the pool's ``TimeoutError``), and
    the driver's own operational or interface errors that carry no SQLSTATE (psycopg: the
    server refused or dropped the connection) or one in :data:`CONNECTION_SQLSTATES`.
    SQLite has no connection to lose: its ``OperationalError`` is "no such table" or
    "database is locked", and its ``InterfaceError`` a parameter it cannot bind; both stay
    errors of ours (500)."""
    from sqlalchemy import exc as sa

    if isinstance(exc, (sa.DisconnectionError, sa.TimeoutError)):
        return True
    if not isinstance(exc, (sa.OperationalError, sa.InterfaceError)):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    if type(orig).__module__.startswith("sqlite3"):
        return False
    sqlstate = getattr(orig, "sqlstate", None)
    return sqlstate is None or str(sqlstate).startswith(CONNECTION_SQLSTATES)


def get_db(app: Flask | None = None) -> Database:
    a = app or current_app
    db: Database = a.extensions["arena.db"]
    db.ensure_process()
    return db


def session() -> Session:
    """The current request's session (closed at teardown)."""
    if "db_session" not in g:
        g.db_session = get_db().sessions()
    s: Session = g.db_session
    return s


def end_request_transaction() -> None:
    """Roll back the current request's transaction, if it has one, before this thread opens a
    transaction of its own on another connection (``db.begin()``).

    On SQLite every transaction of the app holds the database's one write lock (``BEGIN
    IMMEDIATE``, see the module docstring), reads included: a second transaction in the same
    thread would wait ``SQLITE_BUSY_TIMEOUT_S`` on its own request and then fail with
    "database is locked".  On PostgreSQL nothing waits, but the rule is the same: what the
    request's session has not committed by then was never going to be (teardown rolls it
    back), and its objects reload on their next use."""
    s: Session | None = g.get("db_session")
    if s is not None and s.in_transaction():
        s.rollback()


def _close_session(exc: BaseException | None) -> None:
    s = g.pop("db_session", None)
    if s is not None:
        s.close()


def init_app(app: Flask) -> None:
    from .changes import watch

    app.extensions["arena.db"] = db = Database(
        database_url(app),
        echo=bool(app.config["DATABASE_ECHO"]),
        busy_timeout_s=float(app.config["SQLITE_BUSY_TIMEOUT_S"]),
        pool=PoolSize(int(app.config["DATABASE_POOL_SIZE"]),
                      int(app.config["DATABASE_MAX_OVERFLOW"]),
                      float(app.config["DATABASE_POOL_TIMEOUT_S"])),
        statement_timeout_ms=int(app.config["DATABASE_STATEMENT_TIMEOUT_MS"]),
        connect_timeout_s=float(app.config["DATABASE_CONNECT_TIMEOUT_S"]),
    )
    watch(db.engine)  # which requests changed what pages show (arena.core.changes)
    app.teardown_request(_close_session)
    app.teardown_appcontext(_close_session)


# --- migrations ------------------------------------------------------------------------------


def alembic_config(db: Database) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = db.engine
    return cfg


def upgrade(db: Database, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` (``arena init-db`` / ``arena migrate``)."""
    from alembic import command

    command.upgrade(alembic_config(db), revision)


def current_revision(db: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with db.engine.connect() as conn:
        rev: str | None = MigrationContext.configure(conn).get_current_revision()
        return rev


def head_revision() -> str | None:
    """The newest migration this code ships (what ``arena migrate`` brings a database to)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    head: str | None = ScriptDirectory.from_config(cfg).get_current_head()
    return head


def known_revisions() -> set[str]:
    """Every migration this code ships (a database at another revision is a newer
    release's, or no arena database at all)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return {rev.revision for rev in ScriptDirectory.from_config(cfg).walk_revisions()}
