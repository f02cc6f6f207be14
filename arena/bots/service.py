"""Bots: submission, URL changes (new versions), health checks and the health state machine.

No web request ever calls a bot.  A submission, a URL change or a re-check writes a
``queued`` :class:`~arena.core.models.HealthCheck` row and enqueues
:func:`arena.jobs.bodies.check_bot`; the job plays the probe (:mod:`referee.runner.health`) and
applies the outcome here (:func:`apply_check`).  Clients poll ``GET /api/bots/<id>/check``.

Admission (``Bot.check_state``): a new bot is ``pending`` until its first check finishes, then
``passed`` (it joins the ladder and may enter tournaments) or ``failed`` (status
``rejected``; a new URL or a re-check may still admit it).

URL changes: the new URL is reserved (``pending_url``/``pending_endpoint``) and checked by a
job; the bot keeps playing on its old URL meanwhile.  A pass makes it the bot's new version;
a failure drops it and leaves the bot as it was.

Health (``Bot.health_paused``, status ``unhealthy``, with ``pause_reason`` for the owner):

* ``HEALTH_FAILURES_TO_PAUSE`` failed checks in a row (sweep or re-check);
* what the bot does in real matches (:func:`judge_matches`, run as each match finishes):
  ``HEALTH_PAUSE_FORFEITS_IN_A_ROW`` forfeits in a row, or a fault rate (strikes per
  ``/move`` call) of ``HEALTH_PAUSE_FAULT_RATE`` or more over its last
  ``HEALTH_PAUSE_FAULT_WINDOW`` matches once they hold ``HEALTH_PAUSE_FAULT_MIN_MOVES``
  calls.  Only matches created after ``judged_since`` count, so a bot back from a pause
  starts with a clean slate.

A passing check returns a paused bot (the periodic sweep checks paused bots too), once its
bench is over: a bench for what the bot did in matches lasts longer each time it recurs
(:mod:`arena.bots.bench`, which also records each benching among the health checks).

Endpoints: one live bot per normalized endpoint (:func:`endpoint_of`: scheme, host, port,
path), enforced by a unique column; and the ladder, admin matches and tournaments never seat
one endpoint twice (:func:`arena.play.matches.create_match`).
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
import time
from dataclasses import dataclass
from typing import Any

from flask import Flask
from sqlalchemy import Integer, Row, Select, bindparam, func, or_, select, union_all
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.core import metrics
from arena.core.endpoints import endpoint_of
from arena.core.idlists import among_bound
from arena.core.models import (
    STATUS_COLUMNS,
    Bot,
    BotVersion,
    HealthCheck,
    Match,
    MatchSeat,
    Rating,
    bot_status,
    utcnow,
)
from arena.core.queue import get_queue
from arena.core.signing import Signing, signing_for
from arena.core.storage import get_db
from arena.notify import events
from arena.play.ladder import ladder_rulesets
from arena.play.matches import default_limits
from referee import find_ruleset
from referee.runner.health import HealthResult, Probe, health_check
from referee.wire.netguard import GuardError, NetPolicy, check_url

from .bench import bench, benched_now

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
CHECK_BOT = "arena.jobs.bodies.check_bot"
ADMISSION = ("submit", "url_change", "recheck")
"""Purposes of the checks a client waits for (the sweep's are not)."""


class EndpointTakenError(Exception):
    """The URL's endpoint belongs to another live bot."""


def policy(app: Flask) -> NetPolicy:
    return NetPolicy(allow_private=bool(app.config["ALLOW_PRIVATE_BOT_URLS"]))


def name_problem(name: str, max_len: int) -> str | None:
    if not 1 <= len(name) <= max_len:
        return f"name must be 1 to {max_len} characters"
    if not NAME_RE.match(name):
        return "name may hold letters, digits, '_', '.' and '-' and must start with a " \
               "letter or digit"
    return None


def url_problem(app: Flask, url: str) -> str | None:
    """Why the SSRF guard refuses the URL's spelling or literal address (None: fine)."""
    max_len = int(app.config["BOT_URL_MAX"])
    if not 1 <= len(url) <= max_len:
        return f"url must be 1 to {max_len} characters"
    try:
        check_url(url, policy(app))
    except GuardError as exc:
        return f"url refused: {exc}"
    return None


def endpoint_holder(s: Session, endpoint: str, *, other_than: int | None = None) -> Bot | None:
    """The live bot that has ``endpoint`` (or has it pending), if any."""
    stmt = select(Bot).where(Bot.deleted_at.is_(None),
                             or_(Bot.endpoint == endpoint, Bot.pending_endpoint == endpoint))
    if other_than is not None:
        stmt = stmt.where(Bot.id != other_than)
    return s.scalars(stmt.limit(1)).first()


def taken_message(holder: Bot) -> str:
    return (f"this URL's endpoint (scheme, host, port and path) already belongs to bot "
            f"#{holder.id} ({holder.name}); one endpoint may be registered by one live bot "
            "only")


# --- requests (web side: rows and jobs, never a call to the bot) ------------------------------


def submit(s: Session, *, name: str, url: str, token_hash: str,
           account_id: int | None = None) -> tuple[Bot, HealthCheck]:
    """Add a ``pending`` bot (owned by ``account_id``, if given) and its queued submission
    check (the caller commits, then :func:`enqueue_check`).  Raises
    :class:`EndpointTakenError`."""
    endpoint = endpoint_of(url)
    if endpoint is not None and (holder := endpoint_holder(s, endpoint)) is not None:
        raise EndpointTakenError(taken_message(holder))
    now = utcnow()
    bot = Bot(name=name, url=url, version=1, token_hash=token_hash, created_at=now,
              updated_at=now, idle_since=now, info={}, owner_paused=False,
              health_paused=False, health_failures=0, last_health_at=None,
              last_health_reason="", endpoint=endpoint, check_state="pending",
              pause_reason="", account_id=account_id)
    s.add(bot)
    s.flush()
    s.add(BotVersion(bot_id=bot.id, version=1, url=url, created_at=now, info={}))
    return bot, _queue_check(s, bot, url, "submit")


def change_url(s: Session, bot: Bot, url: str) -> HealthCheck:
    """Ask for a new URL.  An admitted bot keeps playing on its current URL while the new
    one is checked; a bot not admitted yet simply has its submission checked again, on the
    new URL.  Raises :class:`EndpointTakenError`."""
    endpoint = endpoint_of(url)
    if endpoint is not None and endpoint != bot.endpoint and (
            holder := endpoint_holder(s, endpoint, other_than=bot.id)) is not None:
        raise EndpointTakenError(taken_message(holder))
    now = utcnow()
    bot.updated_at = now
    if bot.check_state != "passed":
        bot.url, bot.endpoint, bot.check_state = url, endpoint, "pending"
        bot.pending_url = bot.pending_endpoint = None
        bot.versions[-1].url = url  # never played: the version is still being admitted
        return _queue_check(s, bot, url, "submit")
    bot.pending_url = url
    bot.pending_endpoint = endpoint if endpoint != bot.endpoint else None
    return _queue_check(s, bot, url, "url_change")


def recheck(s: Session, bot: Bot) -> HealthCheck:
    """Ask for a check of the bot's current URL (the owner's "check again")."""
    return _queue_check(s, bot, bot.url, "recheck")


def _queue_check(s: Session, bot: Bot, url: str, purpose: str) -> HealthCheck:
    check = HealthCheck(bot_id=bot.id, at=utcnow(), url=url, ok=False, reason="",
                        state="queued", purpose=purpose)
    s.add(check)
    s.flush()
    return check


def check_timeout(app: Flask) -> int:
    """RQ timeout of a check job: every call of the probe at its deadline, plus a margin."""
    cfg = app.config
    calls_ms = (int(cfg["HEALTH_DESCRIBE_DEADLINE_MS"]) + int(cfg["HEALTH_DEADLINE_MS"])
                + int(cfg["MATCH_CALL_DEADLINE_MS"]))
    return int(calls_ms / 1000) + 30


def enqueue_check(app: Flask, bot_id: int, check_id: int) -> bool:
    """Put the check's job on the queue (after the commit).  False when Redis is down: the
    check stays ``queued`` and the sweep enqueues it again."""
    try:
        get_queue(app).enqueue(CHECK_BOT, bot_id, check_id, job_id=f"check-{bot_id}-{check_id}",
                               timeout=check_timeout(app), retries=0)
    except Exception:
        return False
    return True


# --- the job side ----------------------------------------------------------------------------


def probe_for(app: Flask, s: Session, bot: Bot) -> Probe:
    """A probe as random as a ladder match: a ladder rule set, the ladder's deals and
    limits, a random seat, seed and match id, and real bots' identities at the table."""
    rows = s.scalars(select(Bot.info).where(Bot.id != bot.id, Bot.deleted_at.is_(None),
                                            Bot.check_state == "passed")
                     .order_by(func.random()).limit(6)).all()
    opponents = [(str(i["name"]), str(i.get("author", "")), str(i.get("version", "")))
                 for i in rows if isinstance(i, dict) and isinstance(i.get("name"), str)]
    return Probe.draw(random.SystemRandom(),
                      rulesets=[find_ruleset(n) for n in ladder_rulesets(app)],
                      deals=int(app.config["LADDER_DEALS"]), limits=default_limits(app.config),
                      opponents=opponents)


def run_health_check(app: Flask, url: str, probe: Probe | None = None, *,
                     signing: Signing | None = None) -> HealthResult:
    """Play the probe against ``url`` (workers only: this calls the bot); ``signing`` (the
    bot's, :func:`arena.core.signing.signing_for`) signs the requests, as in its matches.  The
    reasons name no URL (``referee.runner.health.failure_reason``)."""
    return health_check(
        url,
        policy(app),
        secrets=signing.secrets if signing is not None else (),
        legacy_v1=signing.legacy_v1 if signing is not None else False,
        deadline_ms=int(app.config["HEALTH_DEADLINE_MS"]),
        describe_deadline_ms=int(app.config["HEALTH_DESCRIBE_DEADLINE_MS"]),
        probe=probe,
    )


CHECK_PURPOSES = frozenset({"submit", "url_change", "recheck", "sweep"})
"""Why a check runs (``HealthCheck.purpose``): the label of ``arena_health_checks_total``."""


def run_check(app: Flask, bot_id: int, check_id: int | None) -> str:
    """The body of :func:`arena.jobs.bodies.check_bot`: run one check and apply it (idempotent: a
    check already done is not run again).  ``check_id`` None: a sweep check."""
    db = get_db(app)
    with db.begin() as s:
        bot = s.get(Bot, bot_id)
        if bot is None or bot.deleted_at is not None:
            return "no such bot"
        if check_id is None:
            check = HealthCheck(bot_id=bot.id, at=utcnow(), url=bot.url, ok=False, reason="",
                                state="running", purpose="sweep")
            s.add(check)
            s.flush()
        else:
            found = s.get(HealthCheck, check_id)
            if found is None or found.bot_id != bot_id:
                return "no such check"
            if found.state == "done":
                return "already done"
            check = found
            check.state = "running"
        url, cid, signing = check.url, check.id, signing_for(app, bot)
        purpose = check.purpose if check.purpose in CHECK_PURPOSES else "other"
        probe = probe_for(app, s, bot)
    t0 = time.monotonic()
    result = run_health_check(app, url, probe, signing=signing)
    if result.no_answer and result.info is None:
        # A refused port answers at once, a silent one at the deadline: wait out the
        # deadline either way, so how long a check takes says nothing about the port.
        left = int(app.config["HEALTH_DESCRIBE_DEADLINE_MS"]) / 1000 - (time.monotonic() - t0)
        if left > 0:
            time.sleep(left)
    with db.begin() as s:
        bot = s.get(Bot, bot_id, with_for_update=True)
        fresh = s.get(HealthCheck, cid, with_for_update=True)
        if bot is None or fresh is None or fresh.state == "done":
            return "already done"
        outcome = apply_check(app, s, bot, fresh, result)
    metrics.HEALTH_CHECKS.labels(purpose, "passed" if result.ok else "failed").inc()
    return outcome


def apply_check(app: Flask, s: Session, bot: Bot, check: HealthCheck,
                result: HealthResult) -> str:
    """Record a finished check and act on it (see the module docstring)."""
    now = utcnow()
    check.ok, check.reason = result.ok, result.reason
    check.describe_ms, check.move_ms = result.describe_ms, result.move_ms
    check.state, check.finished_at = "done", now
    if bot.deleted_at is not None:
        return "bot deleted"
    if check.purpose == "url_change":
        if bot.pending_url != check.url:
            return "superseded by a newer URL"
        if not result.ok:
            bot.pending_url = bot.pending_endpoint = None
            return f"failed: {result.reason}"
        try:
            with s.begin_nested():
                _new_version(bot, check.url, result, now)
                s.flush()
        except IntegrityError:
            check.ok, check.reason = False, "this URL's endpoint was taken by another bot"
            bot.pending_url = bot.pending_endpoint = None
            return "endpoint taken"
        _restore(app, s, bot, now)
        return "new version"
    if check.url != bot.url:
        return "superseded by a newer URL"
    bot.last_health_at, bot.last_health_reason = now, result.reason
    if result.ok:
        bot.info = dict(result.info or {})
        bot.versions[-1].info = bot.info
        if bot.check_state != "passed":
            bot.check_state = "passed"
            bot.idle_since = now
        bot.health_failures = 0
        if bot.health_paused and benched_now(s, bot):
            return "ok; still benched"  # it returns when the bench ends (arena.bots.bench)
        if bot.health_paused or bot.judged_since is None:
            _restore(app, s, bot, now)
        return "ok"
    if bot.check_state == "pending":
        bot.check_state = "failed"
        return f"failed: {result.reason}"
    bot.health_failures += 1
    limit = int(app.config["HEALTH_FAILURES_TO_PAUSE"])
    if bot.check_state == "passed" and bot.health_failures >= limit and not bot.health_paused:
        metrics.BOT_PAUSES.labels("failed_checks").inc()
        bench(app, s, bot, f"{bot.health_failures} health checks failed in a row; the last "
                           f"one: {result.reason}", for_matches=False)
    return f"failed: {result.reason}"


def _new_version(bot: Bot, url: str, result: HealthResult, now: Any) -> None:
    info = dict(result.info or {})
    bot.version += 1
    bot.url, bot.endpoint = url, endpoint_of(url)
    bot.pending_url = bot.pending_endpoint = None
    bot.info, bot.updated_at = info, now
    bot.last_health_at, bot.last_health_reason = now, ""
    bot.versions.append(BotVersion(bot_id=bot.id, version=bot.version, url=url,
                                   created_at=now, info=info))


def _restore(app: Flask, s: Session, bot: Bot, now: Any) -> None:
    """Back in play with a clean slate: old forfeits and faults no longer count.  A benched
    bot's owner is told (``bot.back``, once this transaction commits)."""
    if bot.health_paused:
        bot.idle_since = now
        events.emit(app, s, "bot.back", bot_ids=[bot.id], data={"status": "active"})
    bot.health_paused, bot.pause_reason, bot.health_failures = False, "", 0
    bot.judged_since = now


def judge_matches(app: Flask, s: Session, bot_ids: list[int]) -> list[int]:
    """Pause the bots (of a match that just finished) whose real matches say they are not
    healthy; returns the ids paused.  Runs inside the match's finishing transaction."""
    cfg = app.config
    in_a_row = int(cfg["HEALTH_PAUSE_FORFEITS_IN_A_ROW"])
    window = int(cfg["HEALTH_PAUSE_FAULT_WINDOW"])
    rate = float(cfg["HEALTH_PAUSE_FAULT_RATE"])
    min_moves = int(cfg["HEALTH_PAUSE_FAULT_MIN_MOVES"])
    paused: list[int] = []
    bots = [b for b in s.scalars(select(Bot).where(Bot.id.in_(bot_ids)).order_by(Bot.id))
            if b.deleted_at is None and not b.health_paused]
    seats = recent_seats(s, bots, max(window, in_a_row))
    for bot in bots:
        rows = seats.get(bot.id, [])
        streak = 0
        for row in rows:
            if not row.forfeited:
                break
            streak += 1
        recent = rows[:window]
        calls = sum(r.calls or 0 for r in recent)
        strikes = sum(r.strikes or 0 for r in recent)
        reason = cause = None
        if streak >= in_a_row:
            cause = "forfeits"
            reason = (f"forfeited its last {streak} matches (the newest: match #{rows[0].id}): "
                      "too many moves late, refused or illegal")
        elif calls >= min_moves and strikes >= rate * calls:
            cause = "fault_rate"
            reason = (f"faults on {100 * strikes / calls:.0f}% of its moves ({strikes} of "
                      f"{calls}) over its last {len(recent)} matches; the limit is "
                      f"{100 * rate:.0f}%")
        if reason is not None and cause is not None:
            metrics.BOT_PAUSES.labels(cause).inc()
            bench(app, s, bot, reason, for_matches=True)
            paused.append(bot.id)
    return paused


_NEVER = dt.datetime.min
"""Where a finished match without a finish time (none is written so) sorts."""


def recent_seats(s: Session, bots: list[Bot], limit: int) -> dict[int, list[Row[Any]]]:
    """Each bot's seats in its newest ``limit`` finished matches since it was last judged
    afresh (``judged_since``), newest first: one statement for all of them (a ``UNION ALL``
    of one limited query a bot, each served by the bot's index), not one a bot."""
    if not bots:
        return {}
    params: dict[str, Any] = {"limit": limit}
    for i, bot in enumerate(bots):
        params[f"bot{i}"] = bot.id
        if bot.judged_since is not None:
            params[f"since{i}"] = bot.judged_since
    stmt = _recent_seats_statement(tuple(bot.judged_since is not None for bot in bots))
    out: dict[int, list[Row[Any]]] = {}
    for row in s.execute(stmt, params):
        out.setdefault(row.bot_id, []).append(row)
    for rows in out.values():  # a union keeps no order: newest first again
        rows.sort(key=lambda r: (r.finished_at or _NEVER, r.id), reverse=True)
    return out


@functools.lru_cache(maxsize=64)
def _recent_seats_statement(judged: tuple[bool, ...]) -> Any:
    """:func:`recent_seats`' statement for bots of which those marked ``judged`` have a
    ``judged_since``, its values as parameters (``bot<i>``, ``since<i>``, ``limit``).  Built
    once per shape (a match's finish judges its four bots): building the union and working
    out its cache key again at every finish cost a few milliseconds of CPU each time."""
    parts = []
    for i, since in enumerate(judged):
        stmt = (select(MatchSeat.bot_id, Match.id, MatchSeat.forfeited, MatchSeat.strikes,
                       MatchSeat.calls, Match.finished_at)
                .join(Match, Match.id == MatchSeat.match_id)
                .where(MatchSeat.bot_id == bindparam(f"bot{i}"), Match.state == "finished"))
        if since:
            stmt = stmt.where(Match.created_at >= bindparam(f"since{i}"))
        parts.append(stmt.order_by(Match.finished_at.desc(), Match.id.desc())
                     .limit(bindparam("limit")).subquery().select())
    return parts[0] if len(parts) == 1 else union_all(*parts)


# --- presentation ----------------------------------------------------------------------------


def latest_admission_check(s: Session, bot_id: int) -> HealthCheck | None:
    return s.scalars(select(HealthCheck).where(HealthCheck.bot_id == bot_id,
                                               HealthCheck.purpose.in_(ADMISSION))
                     .order_by(HealthCheck.id.desc()).limit(1)).first()


def bot_and_latest_check(s: Session,
                         bot_id: int) -> tuple[Bot | None, HealthCheck | None]:
    """The bot and its :func:`latest_admission_check` in one statement (a check's poll:
    one round trip, not two)."""
    row = s.execute(_bot_and_check_statement(), {"bot_id": bot_id}).first()
    return (None, None) if row is None else (row[0], row[1])


@functools.cache
def _bot_and_check_statement() -> Select[Bot, HealthCheck]:
    """:func:`bot_and_latest_check`'s statement, built once (the bot bound: ``bot_id``):
    the bot page and every poll of a check send it, and building its correlated subquery
    and cache key anew cost about as much as running it."""
    latest = (select(HealthCheck.id).where(HealthCheck.bot_id == Bot.id,
                                           HealthCheck.purpose.in_(ADMISSION))
              .order_by(HealthCheck.id.desc()).limit(1).correlate(Bot).scalar_subquery())
    return (select(Bot, HealthCheck).outerjoin(HealthCheck, HealthCheck.id == latest)
            .where(Bot.id == bindparam("bot_id", type_=Integer)))


def check_state(check: HealthCheck) -> str:
    """``queued``, ``running``, ``passed`` or ``failed``."""
    if check.state != "done":
        return check.state
    return "passed" if check.ok else "failed"


# --- the bot list ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BotLine:
    """What the bot list shows of a bot, read as columns: no ``Bot`` object is built (its
    ORM loading and its ratings' were a third of the page's time, the template's row loop
    most of the rest: :func:`arena.routes.bots.bot_rows_html`)."""

    id: int
    name: str
    author: str | None
    """What the bot said its author is (``GET /``), if it said."""
    status: str
    created_at: dt.datetime
    rating: float | None
    """In the family the page shows; None when the bot has no result in it."""
    games: int


def list_bots(s: Session, *, family: str, search: str = "", after: str | None = None,
              limit: int = 50) -> tuple[list[BotLine], bool]:
    """One page of the live bots by name (``after``: the last name of the previous page;
    keyset, so bots joining meanwhile never shift a page), optionally only those whose
    name contains ``search`` whatever the case (``%`` and ``_`` are literal), each with its
    rating in ``family``; and whether another page follows.

    The page is read in the order of the unique index on ``bots.name``, from ``after`` on,
    until ``limit + 1`` bots pass the filter: without a search that is one index range.  A
    search on PostgreSQL finds a rare part's hits by the trigrams of ``lower(name)``
    (``ix_bots_name_trgm``, migration 0015) and sorts them; a part most names hold walks the
    name index no further than its hits (the planner picks).  Without the trigrams a search
    with no hits walked every name: 158 ms at 100,000 bots, 0.2 ms with them.  The page's
    ratings come in one more statement, by the ratings' key, never one per row."""
    stmt = select(Bot.id, Bot.name, Bot.info, Bot.created_at, *STATUS_COLUMNS).where(
        Bot.deleted_at.is_(None))
    if search:
        stmt = stmt.where(func.lower(Bot.name).contains(search.lower(), autoescape=True))
    if after is not None:
        stmt = stmt.where(Bot.name > after)
    rows = s.execute(stmt.order_by(Bot.name).limit(limit + 1)).all()
    page = rows[:limit]
    ratings: dict[int, tuple[float, int]] = {}
    if page:
        for bot_id, rating, games in s.execute(_page_ratings(s.get_bind().dialect.name),
                                               {"family": family,
                                                "ids": [r[0] for r in page]}):
            ratings[bot_id] = (rating, games)
    lines = []
    for bot_id, name, info, created_at, *status in page:
        author = info.get("author") if isinstance(info, dict) else None
        rated = ratings.get(bot_id)
        lines.append(BotLine(bot_id, name, author if isinstance(author, str) else None,
                             bot_status(*status), created_at,
                             rated[0] if rated else None, rated[1] if rated else 0))
    return lines, len(rows) > limit


@functools.cache
def _page_ratings(dialect: str) -> Select[int, float, int]:
    """The ratings in one family of a page's bots (``family`` and ``ids`` bound), built once
    per dialect."""
    return select(Rating.bot_id, Rating.rating, Rating.games).where(
        Rating.family == bindparam("family"), among_bound(dialect, Rating.bot_id, "ids"))
