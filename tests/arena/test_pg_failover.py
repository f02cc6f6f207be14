"""PostgreSQL with a standby: the multi-host ``DATABASE_URL`` and the reconnect path.

The pieces of a failover, on loopback against the suite's scratch database: two TCP proxies
in front of it stand for the two hosts of a libpq multi-host URL
(``?host=a&host=b&target_session_attrs=read-write``); cutting the one in use is the primary
going away; a host that accepts and never answers is a primary that vanished without a
word; a backend terminated mid-transaction is a primary lost under a store.  The whole
failover (a real standby streaming from a real primary, promoted under a playing arena) is
``tests/deploy/test_pg_failover.py``; docs/operations.md ("PostgreSQL with a standby") says
what is and is not covered.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL, make_url

from arena import create_app
from arena.core.storage import get_db, upgrade

from .tcpproxy import TcpProxy

pytestmark = [pytest.mark.postgres,
              pytest.mark.parametrize("backend", ["postgres"], indirect=True)]


def multi_host(database_url: str, *hosts: str) -> str:
    url = make_url(database_url)
    multi = URL.create(url.drivername, username=url.username, password=url.password,
                       database=url.database,
                       query={"host": list(hosts), "target_session_attrs": "read-write"})
    return multi.render_as_string(hide_password=False)


@pytest.fixture
def proxies(database_url: str) -> Iterator[list[TcpProxy]]:
    url = make_url(database_url)
    made = [TcpProxy((url.host or "127.0.0.1", url.port or 5432)) for _ in range(2)]
    yield made
    for p in made:
        p.close()


def server_port(app: Any) -> int:
    with get_db(app).begin() as s:
        return int(s.execute(text("SELECT 1")).scalar_one())


def test_the_arena_follows_a_multi_host_url_to_the_host_that_answers(
    settings: dict[str, Any], database_url: str, proxies: list[TcpProxy],
) -> None:
    first, second = proxies
    url = multi_host(database_url, f"127.0.0.1:{first.port}", f"127.0.0.1:{second.port}")
    app = create_app({**settings, "DATABASE_URL": url, "REDIS_NAMESPACE": "failover-test"})
    upgrade(get_db(app))
    assert server_port(app) == 1
    assert first.accepted >= 1 and second.accepted == 0  # the first host, while it answers
    first.cut()  # the primary goes away: its connections drop, new ones are refused
    # The pooled connection is found dead (pre-ping) and replaced: libpq tries the first
    # host, is refused, and connects to the second.
    assert server_port(app) == 1
    assert second.accepted >= 1
    get_db(app).dispose()


def test_a_host_that_never_answers_is_given_up_after_the_connect_timeout(
    settings: dict[str, Any], database_url: str, proxies: list[TcpProxy],
) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the handshake completes (backlog) and then nothing is ever said
    try:
        url = multi_host(database_url, f"127.0.0.1:{silent.getsockname()[1]}",
                         f"127.0.0.1:{proxies[1].port}")
        app = create_app({**settings, "DATABASE_URL": url, "REDIS_NAMESPACE": "failover-test",
                          "DATABASE_CONNECT_TIMEOUT_S": 2.0})
        answers: list[int] = []
        worker = threading.Thread(target=lambda: answers.append(server_port(app)),
                                  daemon=True)
        worker.start()
        worker.join(120)  # without a connect timeout libpq waits for the silent host forever
        assert answers == [1] and proxies[1].accepted >= 1
        get_db(app).dispose()
    finally:
        silent.close()


def test_a_connection_that_dies_mid_transaction_fails_with_the_database_error(
    settings: dict[str, Any], database_url: str,
) -> None:
    """Found by the failover drill (tests/deploy/test_pg_failover.py): a finished match whose
    store was under way when the primary died raised PendingRollbackError, from the
    rollback's bookkeeping of :mod:`arena.core.changes` on the dead connection, instead of
    the OperationalError that makes the store wait and try again; its result was thrown
    away and the match played again once its lease ran out."""
    import psycopg

    from arena.jobs.bodies import DATABASE_DOWN

    app = create_app({**settings, "REDIS_NAMESPACE": "failover-test"})
    db = get_db(app)
    admin = make_url(database_url).set(drivername="postgresql")
    with pytest.raises(DATABASE_DOWN), db.begin() as s:
        s.execute(text("CREATE TEMPORARY TABLE t (x int)"))  # a write: the watch marks it
        pid = s.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with psycopg.connect(admin.render_as_string(hide_password=False),
                             autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        s.execute(text("INSERT INTO t VALUES (1)"))  # the server is gone mid-transaction
    assert server_port(app) == 1  # and the pool carries on with a new connection
    db.dispose()
