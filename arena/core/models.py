"""The database tables (SQLAlchemy 2 declarative models).  The database is the source of truth:
Redis only carries work to do, and everything it carries can be rebuilt from these rows.

Match life cycle (``Match.state``)::

    queued ──claim──▶ running ──finish──▶ finished
      ▲                 │  └──(attempts exhausted)──▶ failed
      └──(lease expired: reconciler re-enqueues)┘

A claim is one conditional ``UPDATE`` (``queued``, or ``running`` with an expired lease), so
two deliveries of the same job can never both run the match.  The finish is one transaction
that moves the state from ``running`` (with the claimer's lease token) to ``finished``, inserts
the ``MatchResult`` (unique per match), the seats' results and the rating events (unique per
match and bot): a job that runs twice stores one result and applies ratings once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, deferred, mapped_column, relationship

from referee.wire.text import printable_tree


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timestamp stored as naive UTC (portable: SQLite has no time zones) and returned
    aware (UTC), so comparisons never mix naive and aware values."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; use arena.core.models.utcnow()")
        return value.astimezone(dt.UTC).replace(tzinfo=None)

    def process_result_value(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=dt.UTC)


class BotSaidJSON(TypeDecorator[dict[str, Any]]):
    """A JSON column holding what a bot said about itself (``GET /``), read back with every
    string printable (:func:`referee.wire.text.printable_tree`).  The protocol refuses a
    description that holds NUL or a lone surrogate, but a row stored before that rule may;
    read as it is, it made the bot page and the bot list answer 500."""

    impl = JSON
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return printable_tree(value) if value is not None else None


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


MAX_ID = 2**31 - 1
"""Largest id a row can have: every table's id is an ``INTEGER`` column, 32-bit on
PostgreSQL.  Every id a client names (in a URL: the ``id`` converter, ``arena/__init__.py``;
in a query, a cursor or a body: ``arena.web``) is checked against it before it reaches a
query, so a larger one is "no such row" (404, or a 4xx of the body) rather than the
database's "integer out of range" (a 500)."""
RULESET_NAME_MAX = 1000
"""Width of the rule-set name columns (``matches.ruleset``, ``tournaments.ruleset``; migration
0007 widened them from 64): a preset with option changes is named ``name+key=value,...``
(docs/rules.md), and a name cut short would name other rules, so longer ones are refused
(:func:`arena.core.families.storable_ruleset`)."""


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dt.datetime: UTCDateTime, dict[str, Any]: JSON}


# --- bots ------------------------------------------------------------------------------------


class Bot(Base):
    """A submitted bot.  ``url``/``version`` mirror its newest :class:`BotVersion`."""

    __tablename__ = "bots"
    __table_args__ = (
        # Unique indexes, not constraints: SQLite adds them without copying the table.
        Index("uq_bots_endpoint", "endpoint", unique=True),
        Index("uq_bots_pending_endpoint", "pending_endpoint", unique=True),
        # The deleted bots, few, that the leaderboard leaves out (routes.ratings.listed):
        # WHERE deleted_at IS NOT NULL, without reading every bot.
        Index("ix_bots_deleted", "id", postgresql_where=text("deleted_at IS NOT NULL"),
              sqlite_where=text("deleted_at IS NOT NULL")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    url: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer, default=1)
    token_hash: Mapped[str] = mapped_column(String(64))
    """HMAC-SHA256 of the owner token under the server pepper (hex)."""
    signing_generation: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    """Generation of the request-signing secret; the secret itself is derived from it and
    the server's SIGNING_KEY, never stored (see :mod:`arena.core.signing`)."""
    signing_previous_generation: Mapped[int | None] = mapped_column(Integer, default=None)
    """The generation in force before the last rotation: still signed with (beside the
    current one) until ``signing_rotated_at`` + SIGNING_ROTATION_GRACE_S.  None: no rotation
    yet, or one that ended the old secret at once."""
    signing_rotated_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    """When the owner last rotated the secret (the start of its grace period)."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    # The four columns of the status (:data:`STATUS_COLUMNS`) keep their previous value when
    # changed (active_history), so a flush knows which listing counts a change moves
    # (arena.core.counts).
    deleted_at: Mapped[dt.datetime | None] = mapped_column(default=None, active_history=True)
    owner_paused: Mapped[bool] = mapped_column(Boolean, default=False, active_history=True)
    """Paused by its owner: not matched by the ladder."""
    health_paused: Mapped[bool] = mapped_column(Boolean, default=False, active_history=True)
    """Paused by the health sweep after repeated failures; one passing check clears it."""
    health_failures: Mapped[int] = mapped_column(Integer, default=0)
    """Consecutive failed health checks."""
    last_health_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    last_health_reason: Mapped[str] = mapped_column(Text, default="")
    idle_since: Mapped[dt.datetime] = mapped_column(default=utcnow)
    """Since when the bot has waited for a ladder match (the matchmaker's priority)."""
    info: Mapped[dict[str, Any]] = mapped_column(BotSaidJSON, default=dict)
    """What the bot said about itself (``GET /``) at its last successful check."""
    endpoint: Mapped[str | None] = mapped_column(Text, default=None)
    """The normalized endpoint of ``url`` (:func:`arena.core.endpoints.endpoint_of`): one live
    bot per endpoint.  Cleared when the bot is deleted (the endpoint is free again); None also for
    bots that shared an endpoint before the rule existed (migration 0003)."""
    pending_url: Mapped[str | None] = mapped_column(Text, default=None)
    """A new URL waiting for its health check; the bot plays on ``url`` until it passes."""
    pending_endpoint: Mapped[str | None] = mapped_column(Text, default=None)
    """The endpoint of ``pending_url``, reserved while its check runs."""
    account_id: Mapped[int | None] = mapped_column(ForeignKey("accounts.id"), default=None,
                                                   index=True)
    """The owner account (:class:`Account`), or None for a bot registered
    without one; the bot's owner token works either way."""
    check_state: Mapped[str] = mapped_column(String(16), default="pending",
                                             active_history=True)
    """Admission: ``pending`` (first check queued or running), ``passed`` (may play),
    ``failed`` (the first check failed; a new URL or a re-check may still admit it)."""
    pause_reason: Mapped[str] = mapped_column(Text, default="")
    """Why the bot is ``unhealthy`` (failed checks, forfeits, fault rate), shown to its owner."""
    judged_since: Mapped[dt.datetime | None] = mapped_column(default=None)
    """Only matches created after this count towards pausing on forfeits and faults (set when
    the bot is admitted, changes URL or returns from a pause); None: every match."""
    accepts_challenges: Mapped[bool] = mapped_column(Boolean, default=True,
                                                     server_default=text("true"))
    """Whether other owners may pick this bot as an opponent of a challenge
    (:mod:`arena.play.challenges`); its owner turns it off to opt out (migration 0013)."""

    versions: Mapped[list[BotVersion]] = relationship(
        back_populates="bot", order_by="BotVersion.version"
    )
    ratings: Mapped[list[Rating]] = relationship(viewonly=True, order_by="Rating.family")
    """Read-only: lets lists eager-load every bot's ratings in one query (no N+1)."""

    @property
    def status(self) -> str:
        return bot_status(self.deleted_at, self.owner_paused, self.check_state,
                          self.health_paused)


STATUS_COLUMNS = (Bot.deleted_at, Bot.owner_paused, Bot.check_state, Bot.health_paused)
"""The columns :func:`bot_status` reads, in its order: lists select them, not whole bots."""


def bot_status(deleted_at: dt.datetime | None, owner_paused: bool, check_state: str,
               health_paused: bool) -> str:
    """A bot's status from :data:`STATUS_COLUMNS` (``Bot.status``; for column queries)."""
    if deleted_at is not None:
        return "deleted"
    if owner_paused:
        return "paused"
    if check_state == "pending":
        return "pending"
    if check_state == "failed":
        return "rejected"
    if health_paused:
        return "unhealthy"
    return "active"


# The leaderboard's name search (routes.ratings.search): WHERE lower(name) LIKE 'prefix%'
# (text_pattern_ops: a prefix is an index range on PostgreSQL whatever the collation).
Index("ix_bots_name_lower", func.lower(Bot.name).label("name_lower"),
      postgresql_ops={"name_lower": "text_pattern_ops"})

# The bot list's name search (bots.service.list_bots): WHERE lower(name) LIKE '%part%'.  On
# PostgreSQL a trigram index finds a rare part's hits (migration 0015, which says why); SQLite
# has none (``info["only"]``: :func:`in_this_database`).
Index("ix_bots_name_trgm", func.lower(Bot.name).label("name_lower_trgm"),
      postgresql_using="gin", postgresql_ops={"name_lower_trgm": "gin_trgm_ops"},
      info={"only": "postgresql"})


def in_this_database(dialect: str) -> Callable[..., bool]:
    """Alembic's ``include_object`` for a database of ``dialect``: leaves out of the
    comparison of models and schema an index the models declare for another database only
    (``info["only"]``), which its migration does not create there."""

    def include(obj: Any, name: str | None, type_: str, reflected: bool,
                compare_to: Any) -> bool:
        only = getattr(obj, "info", {}).get("only") if type_ == "index" else None
        return only is None or only == dialect

    return include


class BotVersion(Base):
    """Every URL a bot has had; a match seat names the version that played."""

    __tablename__ = "bot_versions"
    __table_args__ = (UniqueConstraint("bot_id", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    url: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    info: Mapped[dict[str, Any]] = mapped_column(BotSaidJSON, default=dict)

    bot: Mapped[Bot] = relationship(back_populates="versions")


class HealthCheck(Base):
    """One health check of a bot (at submission, URL change, re-check or sweep).

    Submission, URL-change and re-check checks are written ``queued`` by the web request and
    finished (``done``, with ``ok`` and ``reason``) by the :func:`arena.jobs.bodies.check_bot` job:
    no web request ever calls a bot.  ``ok`` means nothing until ``state`` is ``done``.
    """

    __tablename__ = "health_checks"
    __table_args__ = (
        # A bot's newest checks: WHERE bot_id = ? ORDER BY id DESC LIMIT n (bot page, API).
        Index("ix_health_checks_bot_id_id", "bot_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    url: Mapped[str] = mapped_column(Text)
    ok: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str] = mapped_column(Text, default="")
    describe_ms: Mapped[float | None] = mapped_column(Float, default=None)
    move_ms: Mapped[float | None] = mapped_column(Float, default=None)
    state: Mapped[str] = mapped_column(String(16), default="done")
    """``queued``, ``running`` or ``done``."""
    purpose: Mapped[str] = mapped_column(String(16), default="sweep")
    """``submit``, ``url_change``, ``recheck`` or ``sweep``; or ``bench``, not a check but
    the bot's benching, an event among its checks (:mod:`arena.bots.bench`)."""
    finished_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    """When a check finished; of a ``bench`` event, when the bench ends."""


# --- matches ---------------------------------------------------------------------------------


class Match(Base):
    __tablename__ = "matches"
    __table_args__ = (
        Index("ix_matches_state_created", "state", "created_at"),
        # The latest finished matches (home page): WHERE state = 'finished'
        # ORDER BY finished_at DESC, id DESC LIMIT n.
        Index("ix_matches_state_finished_at", "state", "finished_at", "id"),
        # Match lists filtered by state, newest first, keyset-paginated:
        # WHERE state = ? AND id < :cursor ORDER BY id DESC LIMIT n.
        Index("ix_matches_state_id", "state", "id"),
        # The match list filtered by rule set, newest first, keyset-paginated (/matches):
        # WHERE ruleset = ? AND id < :cursor ORDER BY id DESC LIMIT n.
        Index("ix_matches_ruleset_id", "ruleset", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    """``ladder``, ``admin``, ``tournament`` or ``challenge``."""
    state: Mapped[str] = mapped_column(String(16), default="queued")
    ruleset: Mapped[str] = mapped_column(String(RULESET_NAME_MAX))
    family: Mapped[str] = mapped_column(String(64))
    deals: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(BigInteger)
    limits: Mapped[dict[str, Any]] = mapped_column()
    rated: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    queued_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    """When the newest job for it was enqueued."""
    started_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    finished_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    """Claims so far (a claim is a worker starting the match)."""
    enqueues: Mapped[int] = mapped_column(Integer, default=0)
    """Jobs enqueued so far (the RQ job id is ``match-<id>-<enqueues>``)."""
    job_id: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_token: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_owner: Mapped[str | None] = mapped_column(String(128), default=None)
    """``host:pid`` of the process running the match."""
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(default=None)
    error: Mapped[str] = mapped_column(Text, default="")

    seats: Mapped[list[MatchSeat]] = relationship(
        back_populates="match", order_by="MatchSeat.seat"
    )
    result: Mapped[MatchResult | None] = relationship(back_populates="match")


class MatchSeat(Base):
    """Who sat where, and (once finished) how that seat did."""

    __tablename__ = "match_seats"
    __table_args__ = (
        UniqueConstraint("match_id", "seat"),
        # A bot's matches, newest first, keyset-paginated (bot page, /api/bots/<id>/matches,
        # /api/matches?bot=): WHERE bot_id = ? AND match_id < :cursor ORDER BY match_id DESC.
        Index("ix_match_seats_bot_id_match_id", "bot_id", "match_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"), index=True)
    seat: Mapped[int] = mapped_column(Integer)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    bot_version_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    rank: Mapped[int | None] = mapped_column(Integer, default=None)
    score: Mapped[int | None] = mapped_column(Integer, default=None)
    wins: Mapped[int | None] = mapped_column(Integer, default=None)
    strikes: Mapped[int | None] = mapped_column(Integer, default=None)
    forfeited: Mapped[bool | None] = mapped_column(Boolean, default=None)
    calls: Mapped[int | None] = mapped_column(Integer, default=None)
    p50_ms: Mapped[float | None] = mapped_column(Float, default=None)
    p95_ms: Mapped[float | None] = mapped_column(Float, default=None)
    max_ms: Mapped[float | None] = mapped_column(Float, default=None)

    match: Mapped[Match] = relationship(back_populates="seats")
    bot: Mapped[Bot] = relationship()
    bot_version: Mapped[BotVersion] = relationship()


class LadderSetMatch(Base):
    """A ladder match that is one rotation of a *duplicate set* (``LADDER_FORMAT=duplicate``):
    the set's matches deal the same cards (one seed) with the seats rotated, and their
    combined result is rated once, when the last of them finishes
    (:mod:`arena.play.duplicate_sets`).  ``set_id`` is the id of the set's rotation-0 match."""

    __tablename__ = "ladder_set_matches"
    __table_args__ = (UniqueConstraint("set_id", "rotation"),)

    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"), primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("matches.id"), index=True)
    rotation: Mapped[int] = mapped_column(Integer)


class MatchResult(Base):
    """The one result of a finished match.  ``id`` orders results within a rating family:
    it is assigned while the family's ledger row is locked, so it is the order in which
    ratings were applied, and a recompute replays results in this order."""

    __tablename__ = "match_results"

    id: Mapped[int] = mapped_column(primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"), unique=True)
    family: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    totals: Mapped[dict[str, Any]] = mapped_column()
    """``{"totals": [...], "strikes": [...], "forfeits": [...], "notes": [...]}``."""
    log_gz: Mapped[bytes] = deferred(mapped_column(LargeBinary, nullable=False))
    """The match log (JSON, gzip-compressed): v2 since migration 0005, which also removed the
    URLs from the v1 logs stored before it."""

    match: Mapped[Match] = relationship(back_populates="result")


# --- ratings ---------------------------------------------------------------------------------


class RatingFamily(Base):
    """One row per rating family: locked while a result is applied (the ledger lock)."""

    __tablename__ = "rating_families"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    results: Mapped[int] = mapped_column(Integer, default=0)


class ListingCount(Base):
    """A maintained count of what a listing lists (migration 0014, :mod:`arena.core.counts`):
    ``bots:<status>``, the live bots of each status (``GET /api/bots``, its ``?status=``),
    and ``ratings:<family>``, the ratings a family's leaderboard lists (its live bots').
    Moved in the transaction that moves what it counts, so its total is ``count(*)``'s
    without reading every row (15-27 ms of SQL at 100,000 bots)."""

    __tablename__ = "listing_counts"

    name: Mapped[str] = mapped_column(String(80), primary_key=True)
    n: Mapped[int] = mapped_column(BigInteger, default=0)


class Rating(Base):
    __tablename__ = "ratings"
    __table_args__ = (
        # The leaderboard of a family: WHERE family = ? ORDER BY rating DESC, bot_id
        # LIMIT n OFFSET m (and the rank of a rating: COUNT(*) WHERE family = ? AND
        # rating > ?).
        Index("ix_ratings_family_rating", "family", "rating", "bot_id"),
    )

    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    family: Mapped[str] = mapped_column(String(64), primary_key=True)
    rating: Mapped[float] = mapped_column(Float)
    games: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    bot: Mapped[Bot] = relationship()


class RatingEvent(Base):
    """A rating change: one per rated match and bot (unique), so it can never apply twice."""

    __tablename__ = "rating_events"
    __table_args__ = (
        UniqueConstraint("match_id", "bot_id"),
        # A bot's rating history, keyset-paginated (/api/bots/<id>/ratings):
        # WHERE bot_id = ? AND id > :cursor ORDER BY id LIMIT n.
        Index("ix_rating_events_bot_id_id", "bot_id", "id"),
        # Downsampled rating charts: WHERE bot_id = ? AND family = ? AND games IN (...)
        # (a fixed number of evenly spaced games, whatever the bot's history length).
        Index("ix_rating_events_bot_id_family_games", "bot_id", "family", "games"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("match_results.id"), index=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id"))
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    family: Mapped[str] = mapped_column(String(64))
    before: Mapped[float] = mapped_column(Float)
    after: Mapped[float] = mapped_column(Float)
    games: Mapped[int] = mapped_column(Integer)
    """Rated games of the bot in the family after this one."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


# --- owner accounts --------------------------------------------------------------------------
#
# An account owns bots (``bots.account_id``); what later hangs off an owner (challenges,
# notification webhooks) hangs off an account row too:
#
#     accounts 1──* bots               (a bot registered without an account has none)
#              1──* account_tokens     (named, scoped API tokens for scripts; revocable)
#              1──* sign_in_delays     (failed sign-ins per client: the lockout)
#
# Nothing secret is stored in the clear: the password as an argon2id hash, API tokens and the
# one-time reset token as HMAC-SHA256(pepper, token) like the bots' owner tokens
# (arena.core.security).  The service is arena.accounts (migration 0010).

USERNAME_MAX = 32
TOKEN_NAME_MAX = 64


class Account(Base):
    """An owner: a username, an argon2id password hash, optionally an e-mail address (kept
    for the operator's eyes only: never used to reset the password, see docs/operations.md)."""

    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(USERNAME_MAX))
    """As typed at sign-up (shown on pages)."""
    username_key: Mapped[str] = mapped_column(String(USERNAME_MAX), unique=True)
    """The username in lower case: ``Alice`` and ``alice`` are one account."""
    email: Mapped[str | None] = mapped_column(String(254), default=None)
    password_hash: Mapped[str] = mapped_column(Text)
    """argon2id, in the PHC string format (parameters and salt inside)."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    password_changed_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    reset_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    """HMAC of the one outstanding reset token the operator printed (``arena account
    reset-password``), or None."""
    reset_expires_at: Mapped[dt.datetime | None] = mapped_column(default=None)


class AccountToken(Base):
    """An API token of an account: ``Authorization: Bearer <token>`` acts for the account on
    the bots it owns, within ``scopes`` (space-separated, e.g. ``bots:read bots:write``).
    Revoking sets ``revoked_at``; the token stops working on the next request."""

    __tablename__ = "account_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), index=True)
    name: Mapped[str] = mapped_column(String(TOKEN_NAME_MAX))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(default=None)

    @property
    def scope_set(self) -> frozenset[str]:
        return frozenset(self.scopes.split())


class SignInDelay(Base):
    """Failed sign-ins to one account from one client (``client_key``) since its last
    success there: after ``SIGN_IN_FREE_FAILURES`` of them that client waits an exponentially
    growing, capped time (``until``) before it may try this account again.  Other clients -
    the account's owner among them - are not slowed, so nobody can lock a victim out."""

    __tablename__ = "sign_in_delays"

    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), primary_key=True)
    client: Mapped[str] = mapped_column(String(80), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    until: Mapped[dt.datetime | None] = mapped_column(default=None)


# --- challenges ------------------------------------------------------------------------------
#
# An owner's request to play one of its bots now (arena.play.challenges, migration 0013):
#
#     challenges 1──* challenge_opponents   (the bots it challenged, in seat order after it)
#                *──1 matches               (once a challenge slot was free: state "started")


class Challenge(Base):
    """A challenge: ``waiting`` for a challenge slot (the share of worker capacity that
    challenges may use), ``started`` (its match exists; the match's state says the rest) or
    ``refused`` (an opponent or the bot itself could no longer play when its turn came:
    ``reason``)."""

    __tablename__ = "challenges"
    __table_args__ = (
        # The waiting line, oldest first: WHERE state = 'waiting' ORDER BY id.
        Index("ix_challenges_state_id", "state", "id"),
        # An owner's recent and open challenges (its limits): WHERE owner = ? AND created_at > ?
        Index("ix_challenges_owner_created_at", "owner", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    """The challenger (seat order: it, then the opponents)."""
    owner: Mapped[str] = mapped_column(String(40))
    """Whom the per-owner limits count: ``account:<id>`` for a bot of an account, else
    ``bot:<id>`` (a bot registered without one is its own owner)."""
    mode: Mapped[str] = mapped_column(String(16))
    """``chosen`` (the owner named the opponents) or ``near`` (picked near its rating)."""
    ruleset: Mapped[str] = mapped_column(String(RULESET_NAME_MAX))
    deals: Mapped[int] = mapped_column(Integer)
    rated: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[str] = mapped_column(String(16), default="waiting")
    match_id: Mapped[int | None] = mapped_column(ForeignKey("matches.id"), default=None,
                                                 unique=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(default=None)

    opponents: Mapped[list[ChallengeOpponent]] = relationship(
        order_by="ChallengeOpponent.position")
    bot: Mapped[Bot] = relationship()
    match: Mapped[Match | None] = relationship()


class ChallengeOpponent(Base):
    """One challenged bot of a challenge (``position`` from 0)."""

    __tablename__ = "challenge_opponents"
    __table_args__ = (
        # How often a bot was challenged lately (the per-target limit):
        # WHERE bot_id = ? joined to challenges.created_at.
        Index("ix_challenge_opponents_bot_id_challenge_id", "bot_id", "challenge_id"),
    )

    challenge_id: Mapped[int] = mapped_column(ForeignKey("challenges.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))

    bot: Mapped[Bot] = relationship()
