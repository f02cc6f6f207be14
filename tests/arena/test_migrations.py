"""The Alembic migrations build exactly the schema the models describe."""

from __future__ import annotations

import logging
import uuid

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from flask import Flask
from sqlalchemy import inspect
from sqlalchemy.exc import DBAPIError

# Every module that declares tables on ``Base.metadata`` (the app imports them all; the
# migration tests compare the whole metadata without creating an app).
import arena.core.tournament_models
import arena.core.webhook_models
import arena.web.idempotency  # noqa: F401
from arena.core.models import Base, in_this_database
from arena.core.storage import Database, alembic_config, current_revision, get_db, upgrade

from .conftest import _empty_pg, both_backends


def head_revision(db: Database) -> str | None:
    from alembic.script import ScriptDirectory

    head: str | None = ScriptDirectory.from_config(alembic_config(db)).get_current_head()
    return head


def assert_schema_is_the_models(db: Database) -> None:
    assert current_revision(db) == head_revision(db)
    with db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={
            "compare_type": True, "include_object": in_this_database(conn.dialect.name)})
        diff = compare_metadata(ctx, Base.metadata)
    assert diff == []
    tables = set(inspect(db.engine).get_table_names())
    assert set(Base.metadata.tables) <= tables


@both_backends
def test_migrated_schema_equals_the_models(empty_database_url: str) -> None:
    db = Database(empty_database_url)
    try:
        upgrade(db)
        upgrade(db)  # a second upgrade is a no-op
        assert_schema_is_the_models(db)
    finally:
        db.dispose()


@both_backends
def test_each_test_starts_on_a_copy_of_the_migrated_template(app: Flask) -> None:
    """The ``app`` fixture's database is a copy of the template the migrations built once
    per test process (tests/arena/databases.py): the same schema, at the newest revision,
    and no rows."""
    db = get_db(app)
    assert_schema_is_the_models(db)
    with db.engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 0


LONG_RULESET = ("standard+penalty.assist_penalty=true,penalty.twos_double=true,"
                "penalty.unused_power_doubles=true")
"""A real canonical rule-set name (95 characters) that the 64-character columns refused."""


@both_backends
def test_0007_widens_rule_set_names_keeping_every_row(empty_database_url: str) -> None:
    """Issue 11: rule-set names longer than 64 characters did not fit.  From a database at
    0006 holding a bot, a match with its seat and a tournament with an entrant (rows that
    reference the tables SQLite must copy), 0007 keeps every row and every reference, and the
    columns then hold a long name in full; the downgrade refuses while such a name is
    stored, and narrows the columns once none is."""
    db = Database(empty_database_url)
    try:
        upgrade(db, "0006")
        t = "'2026-12-01 12:00:00'"
        with db.engine.begin() as conn:
            for statement in (
                "INSERT INTO bots (id, name, url, version, token_hash, signing_generation, "
                "created_at, updated_at, owner_paused, health_paused, health_failures, "
                "last_health_reason, idle_since, info, check_state, pause_reason) VALUES "
                f"(1, 'b', 'http://127.0.0.1:9/', 1, '{'0' * 64}', 1, {t}, {t}, false, false, "
                f"0, '', {t}, '{{}}', 'passed', '')",
                "INSERT INTO bot_versions (id, bot_id, version, url, created_at, info) VALUES "
                f"(1, 1, 1, 'http://127.0.0.1:9/', {t}, '{{}}')",
                "INSERT INTO matches (id, kind, state, ruleset, family, deals, seed, limits, "
                "rated, created_at, queued_at, attempts, enqueues, error) VALUES (1, 'admin', "
                f"'queued', 'standard', 'classic', 1, 1, '{{}}', true, {t}, {t}, 0, 0, '')",
                "INSERT INTO match_seats (id, match_id, seat, bot_id, bot_version_id) VALUES "
                "(1, 1, 0, 1, 1)",
            ):
                conn.execute(sa.text(statement))
        tables_before = set(inspect(db.engine).get_table_names())
        upgrade(db, "0007")
        assert current_revision(db) == "0007"
        assert set(inspect(db.engine).get_table_names()) == tables_before
        with db.engine.begin() as conn:
            assert conn.execute(sa.text("SELECT match_id, bot_id FROM match_seats")).all() \
                == [(1, 1)]
            conn.execute(sa.text("UPDATE matches SET ruleset = :r WHERE id = 1"),
                         {"r": LONG_RULESET})
            assert conn.execute(sa.text("SELECT ruleset FROM matches")).scalar() == LONG_RULESET
        widths = {t: {c["name"]: c["type"] for c in inspect(db.engine).get_columns(t)}
                  for t in ("matches", "tournaments")}
        assert widths["matches"]["ruleset"].length == 1000
        assert widths["tournaments"]["ruleset"].length == 1000
        assert "ix_matches_ruleset_id" in index_names(db)
        if db.dialect == "sqlite":  # enforcement is back on after the migrations
            with db.engine.begin() as conn, pytest.raises(DBAPIError):
                conn.execute(sa.text("INSERT INTO match_seats (id, match_id, seat, bot_id, "
                                     "bot_version_id) VALUES (2, 99, 1, 1, 1)"))
        with pytest.raises(RuntimeError, match=r"matches.ruleset .* \[1\]"):
            upgrade_or_downgrade(db, "0006")
        assert current_revision(db) == "0007"
        with db.engine.begin() as conn:
            conn.execute(sa.text("UPDATE matches SET ruleset = 'standard'"))
        upgrade_or_downgrade(db, "0006")
        assert current_revision(db) == "0006"
        assert {c["name"]: c["type"] for c in inspect(db.engine).get_columns("matches")}[
            "ruleset"].length == 64
        assert "ix_matches_ruleset_id" not in index_names(db)
        upgrade(db, "0007")
        assert current_revision(db) == "0007"
    finally:
        db.dispose()


def upgrade_or_downgrade(db: Database, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(db), revision)


def index_names(db: Database) -> set[str]:
    """Every index of the database, by name."""
    query = ("SELECT name FROM sqlite_master WHERE type = 'index'" if db.dialect == "sqlite"
             else "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
    with db.engine.connect() as conn:
        return set(conn.execute(sa.text(query)).scalars())


@both_backends
def test_0008_adds_the_search_indexes_and_takes_them_back(empty_database_url: str) -> None:
    db = Database(empty_database_url)
    try:
        upgrade(db, "0007")
        assert not {"ix_bots_name_lower", "ix_bots_deleted"} & index_names(db)
        upgrade(db, "0008")
        assert {"ix_bots_name_lower", "ix_bots_deleted"} <= index_names(db)
        upgrade_or_downgrade(db, "0007")
        assert not {"ix_bots_name_lower", "ix_bots_deleted"} & index_names(db)
    finally:
        db.dispose()


@both_backends
def test_0009_adds_the_rotation_grace_columns_keeping_every_bot(empty_database_url: str) -> None:
    """Issue 19 §4: a rotation's grace needs the previous generation and the rotation's time.
    Existing bots get neither (no grace in progress); the downgrade takes both away and
    keeps the bots and what references them."""
    db = Database(empty_database_url)
    try:
        upgrade(db, "0008")
        t = "'2026-12-01 12:00:00'"
        with db.engine.begin() as conn:
            for statement in (
                "INSERT INTO bots (id, name, url, version, token_hash, signing_generation, "
                "created_at, updated_at, owner_paused, health_paused, health_failures, "
                "last_health_reason, idle_since, info, check_state, pause_reason) VALUES "
                f"(1, 'b', 'http://127.0.0.1:9/', 1, '{'0' * 64}', 3, {t}, {t}, false, false, "
                f"0, '', {t}, '{{}}', 'passed', '')",
                "INSERT INTO bot_versions (id, bot_id, version, url, created_at, info) VALUES "
                f"(1, 1, 1, 'http://127.0.0.1:9/', {t}, '{{}}')",
            ):
                conn.execute(sa.text(statement))
        upgrade(db, "0009")
        columns = {c["name"] for c in inspect(db.engine).get_columns("bots")}
        assert {"signing_previous_generation", "signing_rotated_at"} <= columns
        with db.engine.begin() as conn:
            assert conn.execute(sa.text(
                "SELECT signing_generation, signing_previous_generation, signing_rotated_at "
                "FROM bots")).all() == [(3, None, None)]
            conn.execute(sa.text("UPDATE bots SET signing_generation = 4, "
                                 f"signing_previous_generation = 3, signing_rotated_at = {t}"))
        upgrade_or_downgrade(db, "0008")
        columns = {c["name"] for c in inspect(db.engine).get_columns("bots")}
        assert not {"signing_previous_generation", "signing_rotated_at"} & columns
        with db.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT id, signing_generation FROM bots")).all() \
                == [(1, 4)]
            assert conn.execute(sa.text("SELECT bot_id FROM bot_versions")).all() == [(1,)]
    finally:
        db.dispose()


@both_backends
def test_0010_adds_accounts_keeping_every_bot(empty_database_url: str) -> None:
    """Issue 21: from a database at 0009 holding a bot with a version (a row that
    references ``bots``, which SQLite copies to add ``account_id``), 0010 keeps every row and
    reference, the bot has no account, and an account can then own it; the downgrade drops
    the tables and the column and keeps the bot."""
    db = Database(empty_database_url)
    try:
        upgrade(db, "0009")
        t = "'2026-12-03 12:00:00'"
        with db.engine.begin() as conn:
            for statement in (
                "INSERT INTO bots (id, name, url, version, token_hash, signing_generation, "
                "created_at, updated_at, owner_paused, health_paused, health_failures, "
                "last_health_reason, idle_since, info, check_state, pause_reason) VALUES "
                f"(1, 'b', 'http://127.0.0.1:9/', 1, '{'0' * 64}', 1, {t}, {t}, false, false, "
                f"0, '', {t}, '{{}}', 'passed', '')",
                "INSERT INTO bot_versions (id, bot_id, version, url, created_at, info) VALUES "
                f"(1, 1, 1, 'http://127.0.0.1:9/', {t}, '{{}}')",
            ):
                conn.execute(sa.text(statement))
        upgrade(db, "0010")
        # SQLite rebuilt bots in batch mode: 0008's search indexes must survive it.
        assert {"ix_bots_name_lower", "ix_bots_deleted"} <= index_names(db)
        with db.engine.begin() as conn:
            assert conn.execute(sa.text("SELECT id, account_id FROM bots")).all() == [(1, None)]
            assert conn.execute(sa.text("SELECT bot_id FROM bot_versions")).all() == [(1,)]
            conn.execute(sa.text(
                "INSERT INTO accounts (id, username, username_key, password_hash, created_at, "
                f"password_changed_at) VALUES (1, 'A', 'a', 'x', {t}, {t})"))
            conn.execute(sa.text("UPDATE bots SET account_id = 1"))
            # One account per name, whatever the case:
            with pytest.raises(DBAPIError), conn.begin_nested():
                conn.execute(sa.text(
                    "INSERT INTO accounts (id, username, username_key, password_hash, "
                    f"created_at, password_changed_at) VALUES (2, 'a', 'a', 'x', {t}, {t})"))
        assert {"accounts", "account_tokens", "sign_in_delays"} <= set(
            inspect(db.engine).get_table_names())
        upgrade_or_downgrade(db, "0009")
        assert {"ix_bots_name_lower", "ix_bots_deleted"} <= index_names(db)
        assert not {"accounts", "account_tokens", "sign_in_delays"} & set(
            inspect(db.engine).get_table_names())
        with db.engine.begin() as conn:
            assert conn.execute(sa.text("SELECT id, name FROM bots")).all() == [(1, "b")]
    finally:
        db.dispose()


@both_backends
def test_0011_adds_the_ladder_set_table_and_takes_it_back(empty_database_url: str) -> None:
    """Issue 21 §5: the rotations of a ladder duplicate set are rows of
    ``ladder_set_matches``; before it no match belongs to a set."""
    db = Database(empty_database_url)
    try:
        upgrade(db, "0010")
        assert "ladder_set_matches" not in inspect(db.engine).get_table_names()
        upgrade(db, "0011")
        assert {c["name"] for c in inspect(db.engine).get_columns("ladder_set_matches")} == {
            "match_id", "set_id", "rotation"}
        assert "ix_ladder_set_matches_set_id" in index_names(db)
        upgrade_or_downgrade(db, "0010")
        assert "ladder_set_matches" not in inspect(db.engine).get_table_names()
    finally:
        db.dispose()


@both_backends
def test_0012_adds_the_webhook_tables_and_takes_them_back(empty_database_url: str) -> None:
    """Issue 21 §4: owners' webhooks and their deliveries are two new tables; nothing else
    changes, and the downgrade drops both."""
    db = Database(empty_database_url)
    try:
        upgrade(db, "0011")
        assert "webhooks" not in inspect(db.engine).get_table_names()
        upgrade(db, "0012")
        tables = set(inspect(db.engine).get_table_names())
        assert {"webhooks", "webhook_deliveries"} <= tables
        assert {c["name"] for c in inspect(db.engine).get_columns("webhooks")} == {
            "id", "account_id", "bot_id", "url", "events", "secret_generation", "created_at",
            "deleted_at"}
        assert {"ix_webhook_deliveries_webhook_id_id", "ix_webhook_deliveries_state_next",
                "ix_webhooks_account_id", "ix_webhooks_bot_id"} <= index_names(db)
        upgrade_or_downgrade(db, "0011")
        tables = set(inspect(db.engine).get_table_names())
        assert not {"webhooks", "webhook_deliveries"} & tables
    finally:
        db.dispose()


def test_0013_adds_challenges_and_lets_every_bot_be_challenged(empty_database_url: str) -> None:
    """Issue 21 §2: a bot already there accepts challenges until its owner opts out; the
    challenge tables come and go, and the downgrade keeps the bot and 0008's indexes."""
    db = Database(empty_database_url)
    try:
        upgrade(db, "0012")
        t = "'2026-12-06 02:00:00'"
        with db.engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO bots (id, name, url, version, token_hash, signing_generation, "
                "created_at, updated_at, owner_paused, health_paused, health_failures, "
                "last_health_reason, idle_since, info, check_state, pause_reason) VALUES "
                f"(1, 'b', 'http://127.0.0.1:9/', 1, '{'0' * 64}', 1, {t}, {t}, false, false, "
                f"0, '', {t}, '{{}}', 'passed', '')"))
        upgrade(db, "0013")
        with db.engine.begin() as conn:
            assert conn.execute(sa.text(
                "SELECT id, accepts_challenges FROM bots")).all() == [(1, True)]
        assert {"challenges", "challenge_opponents"} <= set(inspect(db.engine).get_table_names())
        assert {"ix_challenges_state_id", "ix_challenges_owner_created_at"} <= {
            i["name"] for i in inspect(db.engine).get_indexes("challenges")}
        upgrade_or_downgrade(db, "0012")
        assert not {"challenges", "challenge_opponents"} & set(
            inspect(db.engine).get_table_names())
        assert {"ix_bots_name_lower", "ix_bots_deleted"} <= index_names(db)
        with db.engine.begin() as conn:
            assert conn.execute(sa.text("SELECT id, name FROM bots")).all() == [(1, "b")]
    finally:
        db.dispose()


@both_backends
def test_0014_counts_every_listing_from_the_rows_and_takes_them_back(
        empty_database_url: str) -> None:
    """The listing counts start as ``count(*)`` of what each listing lists: the live bots
    by status (a deleted bot in none), the ratings of live bots by family; the downgrade
    drops the table and keeps the rows it counted."""
    db = Database(empty_database_url)
    try:
        upgrade(db, "0013")
        t = "'2026-12-07 12:00:00'"
        bots = [(1, "passed", "false", "false", "NULL"), (2, "passed", "true", "false", "NULL"),
                (3, "pending", "false", "false", "NULL"), (4, "failed", "false", "false", "NULL"),
                (5, "passed", "false", "true", "NULL"), (6, "passed", "false", "false", t),
                (7, "passed", "false", "false", "NULL")]
        with db.engine.begin() as conn:
            for bot_id, state, owner, health, deleted in bots:
                conn.execute(sa.text(
                    "INSERT INTO bots (id, name, url, version, token_hash, signing_generation, "
                    "created_at, updated_at, deleted_at, owner_paused, health_paused, "
                    "health_failures, last_health_reason, idle_since, info, check_state, "
                    "pause_reason, accepts_challenges) VALUES "
                    f"({bot_id}, 'b{bot_id}', 'http://127.0.0.1:9/', 1, '{'0' * 64}', 1, {t}, "
                    f"{t}, {deleted}, {owner}, {health}, 0, '', {t}, '{{}}', '{state}', '', "
                    "true)"))
            for bot_id, family in ((1, "classic"), (2, "classic"), (6, "classic"),
                                   (1, "other"), (6, "other")):
                conn.execute(sa.text(
                    "INSERT INTO ratings (bot_id, family, rating, games, updated_at) VALUES "
                    f"({bot_id}, '{family}', 1500.0, 1, {t})"))
        upgrade(db, "0014")
        with db.engine.begin() as conn:
            assert dict(conn.execute(sa.text("SELECT name, n FROM listing_counts")).all()) == {
                "bots:active": 2, "bots:paused": 1, "bots:pending": 1, "bots:rejected": 1,
                "bots:unhealthy": 1, "ratings:classic": 2, "ratings:other": 1}
        upgrade_or_downgrade(db, "0013")
        assert "listing_counts" not in inspect(db.engine).get_table_names()
        with db.engine.begin() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM ratings")).scalar() == 5
    finally:
        db.dispose()


@both_backends
def test_0015_adds_the_name_trigrams_on_postgresql_and_takes_them_back(
        empty_database_url: str) -> None:
    """The bot list's search index is PostgreSQL's (pg_trgm); SQLite's schema is unchanged,
    and both still equal the models (``in_this_database``)."""
    db = Database(empty_database_url)
    try:
        upgrade(db, "0014")
        assert "ix_bots_name_trgm" not in index_names(db)
        upgrade(db, "0015")
        assert ("ix_bots_name_trgm" in index_names(db)) == (db.dialect == "postgresql")
        assert_schema_is_the_models(db)
        upgrade_or_downgrade(db, "0014")
        assert "ix_bots_name_trgm" not in index_names(db)
    finally:
        db.dispose()


@pytest.mark.postgres
def test_0015_goes_on_without_the_trigrams_where_pg_trgm_cannot_be_added(
        pg_database: str, caplog: pytest.LogCaptureFixture) -> None:
    """A role that may create tables but not extensions (no CREATE on the database) migrates
    to the head all the same, told why its search has no trigram index."""
    _empty_pg(pg_database)
    role = f"arena_no_ext_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(pg_database)
    dbname = sa.engine.make_url(pg_database).database
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE ROLE {role} LOGIN"))
        conn.execute(sa.text(f"GRANT CONNECT ON DATABASE {dbname} TO {role}"))
        conn.execute(sa.text(f"GRANT USAGE, CREATE ON SCHEMA public TO {role}"))
        conn.execute(sa.text(f"REVOKE CREATE ON DATABASE {dbname} FROM PUBLIC"))
    db = Database(sa.engine.make_url(pg_database).set(username=role, password=None)
                  .render_as_string(hide_password=False))
    try:
        with caplog.at_level(logging.WARNING, logger="arena.migrations"):
            upgrade(db)
        assert current_revision(db) == head_revision(db)
        assert "ix_bots_name_trgm" not in index_names(db)
        assert any("pg_trgm could not be added" in r.getMessage() for r in caplog.records)
    finally:
        db.dispose()
        _empty_pg(pg_database)
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP OWNED BY {role}"))
            conn.execute(sa.text(f"DROP ROLE {role}"))
        admin.dispose()
