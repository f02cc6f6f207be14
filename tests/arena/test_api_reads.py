"""The JSON reads of issue 20 §3 (match lists, match details, tournaments' brackets and
standings, replays) answer what they answered before they were made cheaper, and send
statements whose plans do not grow with the bots.  (Statement counts: test_read_path.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event

from arena.core.storage import get_db

from .test_read_path import seed

postgres_only = pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)


def selects_sent(app: Flask, url: str) -> list[tuple[str, Any]]:
    """The SELECT statements (with their parameters) one request of ``url`` sends."""
    db = get_db(app)
    sent: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            sent.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", keep)
    try:
        assert app.test_client().get(url).status_code == 200, url
    finally:
        event.remove(db.engine, "before_cursor_execute", keep)
    return sent


def whole_reads(plan: list[str], tables: tuple[str, ...]) -> list[str]:
    """The plan's steps that read one of ``tables`` other than by an index condition (a
    sequential scan, or a full index scan feeding a hash or merge join)."""
    bad = []
    for i, line in enumerate(plan):
        if not any(f" on {t} " in f"{line} " for t in tables):
            continue
        keyed = "Index" in line and i + 1 < len(plan) and "Index Cond" in plan[i + 1]
        if not keyed:
            bad.append(line.strip())
    return bad


@postgres_only
def test_match_lists_read_seat_bots_by_key_whatever_the_planner_prefers(app: Flask) -> None:
    """A page of matches names each seat's bot and version by primary key, one probe per
    seat.  Joined instead, PostgreSQL planned the page (at 10,000 bots) as hash joins over
    every bot and every bot version: two sequential scans per page, 10-20 ms growing with
    the bots.  Here the nested loop is priced out (``enable_nestloop = off``), as the row
    estimates priced it out at that size: a join then reads the tables whole, a per-seat
    subquery still by key."""
    data = seed(app, 12)
    db = get_db(app)
    checked = 0
    for url in ("/api/matches", "/api/matches?state=finished", f"/api/matches?bot={data.busy}",
                f"/api/bots/{data.busy}/matches"):
        for statement, parameters in selects_sent(app, url):
            if "match_seats" not in statement or "bots" not in statement:
                continue
            with db.engine.connect() as conn:
                conn.exec_driver_sql("SET enable_nestloop = off")
                plan = [row[0] for row in conn.exec_driver_sql("EXPLAIN " + statement,
                                                               parameters)]
                conn.rollback()
            assert not whole_reads(plan, ("bots", "bot_versions")), (url, statement, plan)
            checked += 1
    assert checked == 4
