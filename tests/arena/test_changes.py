"""Which statements change what pages show (:mod:`arena.core.changes`): reads, writes of no row
and writes of tables no page shows do not; every other write, and whatever cannot be read,
does.  The whole path (a request's commit empties the response cache, a no-op leaves it) is
in tests/arena/test_readcache.py."""

from __future__ import annotations

import pytest

from arena.core.changes import UNSHOWN, changes_shown_rows
from arena.core.models import Base


@pytest.mark.parametrize(("statement", "rowcount", "changed"), [
    ("SELECT bots.id FROM bots WHERE bots.name = ?", 1, False),
    ("  select 1", -1, False),
    ("SELECT id FROM matches FOR UPDATE SKIP LOCKED", 3, False),
    ("PRAGMA foreign_keys=ON", -1, False),
    ("BEGIN IMMEDIATE", -1, False),
    ("SAVEPOINT sa_savepoint_1", -1, False),
    ("UPDATE bots SET owner_paused=? WHERE bots.id = ?", 1, True),
    ("UPDATE bots SET owner_paused=? WHERE bots.id = ?", 0, False),  # the condition failed
    ('UPDATE "bots" SET x=1', -1, True),  # unknown count: a change
    ("INSERT INTO bots (name) VALUES (?)", 1, True),
    ("INSERT OR IGNORE INTO ratings (bot_id) VALUES (?)", 0, False),
    ("DELETE FROM match_seats WHERE match_id = %(id)s", 4, True),
    ("INSERT INTO idempotency_keys (key_hash) VALUES (?)", 1, False),
    ("DELETE FROM idempotency_keys WHERE id IN (SELECT ...)", 5, False),
    ("UPDATE public.idempotency_keys SET state='done'", 1, False),
    ("CREATE TABLE x (id int)", -1, True),  # DDL: count it
    ("WITH gone AS (DELETE FROM bots RETURNING id) SELECT count(*) FROM gone", 1, True),
])
def test_what_counts_as_a_change(statement: str, rowcount: int, changed: bool) -> None:
    assert changes_shown_rows(statement, rowcount) is changed


def test_the_unshown_tables_exist() -> None:
    import arena.web.idempotency  # noqa: F401  (registers its table)

    assert set(UNSHOWN) <= set(Base.metadata.tables)
