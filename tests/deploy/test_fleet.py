"""The fleet drill (issue 20 §2): three worker machines, two web processes behind nginx and
one clock, on PostgreSQL; whole machines SIGKILLed mid-run, three times, while matches are
posted through nginx and ladder rounds run.  Nothing is lost or duplicated, every match a
dead machine was playing is taken over by another, and the ratings equal a recompute.

Correctness only: the takeover times are ``bench/fleet_drill.py``'s (docs/operations.md,
"Losing a machine").  The orchestration is ``tests/deploy/fleet.py``.

Skipped (saying so) without nginx or PostgreSQL, except where ``ARENA_REQUIRE_NGINX`` /
``ARENA_REQUIRE_POSTGRES`` is set (``.ci/run``): there it fails instead.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from arena.ops.edge import NGINX_CONF, nginx_binary, render_nginx_conf
from tests.arena.conftest import pg_admin_or_skip
from tests.arena.databases import PgDatabases

from .fleet import FleetSettings, cleanup, fleet, run_drill

pytestmark = pytest.mark.drill


def require_nginx() -> None:
    if nginx_binary() is None:
        if os.environ.get("ARENA_REQUIRE_NGINX"):
            pytest.fail("nginx is not installed but ARENA_REQUIRE_NGINX is set")
        pytest.skip("nginx is not installed (Debian: apt-get install nginx); the production "
                    "shape tests are skipped")


def test_nginx_balances_every_web_process_given(tmp_path: Path) -> None:
    """Several web processes: one ``server`` line each in the shipped upstream; the live
    relay's upstream and every other line are unchanged."""
    shipped = NGINX_CONF.read_text()
    one = render_nginx_conf(shipped, listen="127.0.0.1:1", upstream="127.0.0.1:2",
                            runtime_dir=tmp_path)
    two = render_nginx_conf(shipped, listen="127.0.0.1:1",
                            upstream=["127.0.0.1:2", "127.0.0.1:3"], runtime_dir=tmp_path)
    assert two.replace("        server 127.0.0.1:3;\n", "", 1) == one
    web = two.split("upstream arena_web {", 1)[1].split("}", 1)[0]
    assert [x.strip() for x in web.splitlines() if x.strip().startswith("server ")] == [
        "server 127.0.0.1:2;", "server 127.0.0.1:3;"]


@pytest.mark.postgres
def test_killing_whole_machines_loses_and_duplicates_nothing() -> None:
    require_nginx()
    dbs = PgDatabases(pg_admin_or_skip())
    name, url = dbs.copy()
    runtime = Path(tempfile.mkdtemp(prefix="arena-fleet-"))
    settings = FleetSettings()
    try:
        with fleet(settings, url, runtime) as f:
            report = run_drill(f, kills=3)
        print("\n".join(report.lines()))
        a = report.audit
        # Three kills took a machine down in the middle of matches (the drill waits for one
        # to start; on a slow machine a kill may still find them all ended, and another
        # follows), and every orphan was claimed again by another worker.
        assert sum(1 for kill in report.kills if kill.orphans) == 3
        for kill in report.kills:
            assert kill.processes >= settings.workers_per_machine
            assert set(kill.takeover_s) == set(kill.orphans)
        # Matches came both ways: posted through nginx and by the clock's ladder rounds;
        # nginx spread the requests over both web processes.  (A POST that failed on a
        # saturated machine is no lost match; one that was answered must not be lost.)
        assert report.posted > 0 and a.admin >= report.posted and a.ladder > 0
        assert len(report.answered_by) == settings.web_processes
        assert min(report.answered_by.values()) > 0
        assert a.lost == 0 and a.duplicated == 0
        assert a.finished == a.matches
        assert a.rating_problems == []
        # An orphan's takeover is a second claim: at least one replay per orphan.
        assert a.replays >= sum(len(k.orphans) for k in report.kills)
    finally:
        dbs.drop(name)
        dbs.close()
    cleanup(runtime)  # kept when the drill failed: the logs of every process are there
