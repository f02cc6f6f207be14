"""The PostgreSQL failover drill (issue 20 §2): a primary with a synchronous standby of the
drill's own, the primary SIGKILLed while the arena plays, the standby promoted three
seconds later.  Every match finishes with one result, the ratings equal a recompute, every
result committed before the kill is still there, and the web app, worker and clock carry on
by themselves through the multi-host ``DATABASE_URL``.

Correctness only: the times are ``bench/pg_failover_drill.py``'s (docs/operations.md,
"PostgreSQL with a standby").  The orchestration is ``tests/deploy/pg_failover.py``; the
two clusters ``tests/deploy/pgpair.py`` (never the test server).

Skipped (saying so) without PostgreSQL's server binaries (``initdb``, ``pg_ctl``,
``pg_basebackup``, ``postgres``), except where ``ARENA_REQUIRE_PG_SERVER`` is set
(``.ci/run``): there it fails instead.
"""

from __future__ import annotations

import os

import pytest

from .pg_failover import Drill, DrillSettings
from .pgpair import PgUnavailableError, find_bindir, server_user

pytestmark = pytest.mark.drill


def require_pg_server() -> None:
    try:
        find_bindir()
        server_user()
    except PgUnavailableError as exc:
        if os.environ.get("ARENA_REQUIRE_PG_SERVER"):
            pytest.fail(f"{exc}, but ARENA_REQUIRE_PG_SERVER is set")
        pytest.skip(f"{exc}: the PostgreSQL failover drill is skipped")


def test_a_promoted_standby_takes_over_and_nothing_is_lost_or_stored_twice() -> None:
    require_pg_server()
    drill = Drill(DrillSettings(matches=12, concurrency=8, promote_after_s=3.0))
    ok = False
    try:
        figures = drill.run()
        print(figures.describe())
        assert figures.problems == [], figures.describe()
        # The kill came with results stored and matches being played.
        assert figures.finished_at_kill >= 1 and figures.running_at_kill >= 1
        assert figures.killed_processes > 1  # the postmaster and its backends
        # Synchronous replication: what was committed before the kill survived it.
        assert figures.lost_commits == 0, figures.describe()
        # The arena found the new primary by itself: results stored and pages served.
        assert figures.first_result_s is not None and figures.first_web_200_s is not None
        ok = True
    finally:
        drill.stop()
        if ok:
            drill.cleanup()  # kept when the drill failed: every process's log is there


def test_a_port_taken_before_the_start_is_picked_again() -> None:
    """The pair's ports are picked when it is made, seconds before ``pg_ctl start``
    (initdb first); a server that took one meanwhile (a CI run beside this one did) costs a
    new port, not the drill."""
    import socket

    import psycopg

    from .pgpair import PgPair

    require_pg_server()
    pair = PgPair(synchronous=False)
    taken = socket.create_server(("127.0.0.1", pair.primary.port))  # listening: port taken
    try:
        pair.start(timeout_s=120)
        assert pair.primary.port != taken.getsockname()[1]
        with psycopg.connect(pair.conninfo(pair.primary), connect_timeout=10) as conn:
            assert conn.execute("SELECT NOT pg_is_in_recovery()").fetchone() == (True,)
        assert pair.replication_state() == "async"  # the standby found the new port
    finally:
        taken.close()
        pair.stop()
