"""The web tier while the database cannot be reached: 503 with ``Retry-After``, not 500.

A real outage: the app reaches PostgreSQL through a TCP proxy on loopback
(:mod:`.tcpproxy`) that the test cuts (its connections drop, new ones are refused, as from a
primary that died) and restores (the failover's new primary answering).  SQLite has no
connection to lose: its errors stay what they were.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from flask import Flask
from prometheus_client import REGISTRY
from sqlalchemy import exc as sa
from sqlalchemy import text
from sqlalchemy.engine import make_url

from arena import create_app
from arena.core.storage import get_db, is_connection_error
from arena.web.errors import DATABASE_RETRY_AFTER_S

from .conftest import both_backends
from .tcpproxy import TcpProxy

HTML = {"Accept": "text/html"}


def refused(route: str) -> float:
    return REGISTRY.get_sample_value("arena_db_unavailable_total", {"route": route}) or 0.0


@pytest.fixture
def proxied_app(settings: dict[str, Any], database_url: str) -> Iterator[tuple[Flask, TcpProxy]]:
    url = make_url(database_url)
    proxy = TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    via = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    app = create_app({**settings, "DATABASE_URL": via, "DATABASE_CONNECT_TIMEOUT_S": 5.0})
    try:
        yield app, proxy
    finally:
        get_db(app).dispose()
        proxy.close()


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_an_outage_answers_503_with_retry_after_and_the_first_request_after_it_works(
    proxied_app: tuple[Flask, TcpProxy],
) -> None:
    app, proxy = proxied_app
    client = app.test_client()
    assert client.get("/api/bots").status_code == 200  # a pooled connection now exists
    assert client.get("/", headers=HTML).status_code == 200
    before = refused("/api/bots"), refused("/"), refused("/api/bots")
    proxy.cut()  # the primary goes away: the pooled connection dies, new ones are refused

    r = client.get("/api/bots")
    assert r.status_code == 503, r.get_data(as_text=True)
    assert r.headers["Retry-After"] == str(DATABASE_RETRY_AFTER_S)
    assert r.get_json()["error"]["code"] == "database_unavailable"
    page = client.get("/", headers=HTML)
    assert page.status_code == 503 and page.mimetype == "text/html"
    assert page.headers["Retry-After"] == str(DATABASE_RETRY_AFTER_S)
    assert b"cannot be reached" in page.data
    # A write is refused the same way (nothing half-written: one transaction each).
    w = client.post("/api/bots", json={"name": "late", "url": "http://127.0.0.1:9/"})
    assert w.status_code == 503 and w.get_json()["error"]["code"] == "database_unavailable"
    assert refused("/api/bots") == before[0] + 2  # the GET and the POST (one URL rule)
    assert refused("/") == before[1] + 1

    proxy.restore()  # the new primary: the pool connects again by itself
    assert client.get("/api/bots").status_code == 200
    assert client.get("/", headers=HTML).status_code == 200
    assert refused("/api/bots") == before[0] + 2


@both_backends
def test_an_error_in_our_sql_is_still_a_500(app: Flask) -> None:
    """A programming error is not an outage: SQLite says "no such table" with the same
    ``OperationalError`` class, PostgreSQL with ``ProgrammingError``; both stay 500 and are
    not counted as refusals."""
    with get_db(app).begin() as s:
        s.execute(text("ALTER TABLE bots RENAME TO bots_gone"))
    before = refused("/api/bots")
    r = app.test_client().get("/api/bots")
    assert r.status_code == 500 and "Retry-After" not in r.headers
    assert refused("/api/bots") == before


def _wrapped(kind: type[sa.DBAPIError], orig: BaseException,
             invalidated: bool = False) -> sa.DBAPIError:
    return kind("SELECT 1", {}, orig, connection_invalidated=invalidated)  # type: ignore[arg-type]


@pytest.mark.parametrize(("error", "outage"), [
    (_wrapped(sa.OperationalError, psycopg.OperationalError("connection refused")), True),
    (_wrapped(sa.OperationalError, psycopg.errors.AdminShutdown()), True),
    (_wrapped(sa.OperationalError, psycopg.errors.CannotConnectNow()), True),
    (_wrapped(sa.OperationalError, psycopg.errors.TooManyConnections()), True),
    (_wrapped(sa.InterfaceError, psycopg.InterfaceError("the connection is closed")), True),
    (sa.DisconnectionError("pre-ping failed"), True),
    (sa.TimeoutError("QueuePool limit reached"), True),
    # a statement past statement_timeout: a slow query, not an outage
    (_wrapped(sa.OperationalError, psycopg.errors.QueryCanceled()), False),
    (_wrapped(sa.OperationalError, psycopg.errors.QueryCanceled(), invalidated=True), True),
    (_wrapped(sa.ProgrammingError, psycopg.errors.UndefinedTable()), False),
    (_wrapped(sa.OperationalError, sqlite3.OperationalError("no such table: bots")), False),
    (_wrapped(sa.OperationalError, sqlite3.OperationalError("database is locked")), False),
    (_wrapped(sa.InterfaceError, sqlite3.InterfaceError("Error binding parameter 1")), False),
    (sa.IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE")), False),
    (ValueError("not a database error"), False),
])
def test_which_errors_are_an_outage(error: BaseException, outage: bool) -> None:
    assert is_connection_error(error) is outage
