"""Challenges: an owner plays one of its bots now, against bots it names or a random set near
its rating, rated or not (issue 21 §2).  The routes are :mod:`arena.routes.challenges`.

A challenge is a row first (``waiting``) and a match second.  Who may challenge, and whom:

* the challenger is a bot of the request's owner (its owner token, an account token of its
  account, the signed-in account or owner on the browser), admitted and not benched (a bot
  its owner paused for the ladder may still be challenged with);
* an opponent is any other live bot that passed its check, is neither benched nor paused,
  and whose owner did not opt out (``Bot.accepts_challenges``);
* per owner (an account, or a bot registered without one): at most
  ``CHALLENGE_OPEN_PER_OWNER`` challenges waiting, queued or running, and
  ``CHALLENGE_PER_OWNER_PER_HOUR`` made in any hour; per target: a bot is picked at most
  ``CHALLENGE_PER_TARGET_PER_HOUR`` times in any hour.  A refusal is a :class:`RefusedError`
  naming why (the routes turn it into a 4xx JSON error or the form again).

**Never starving the ladder.**  Challenges may hold at most a share of the workers' match
slots (:func:`slots`: ``CHALLENGE_SLOTS``, or ``CHALLENGE_SHARE`` x live workers x
``WORKER_CONCURRENCY``, at least 1).  :func:`dispatch` turns the oldest waiting challenges
into queued matches only while fewer challenge matches than that are queued or running; the
rest wait in the database, never on the job queue.  So the RQ queue never holds more than
that many challenge jobs, ladder and tournament jobs behind them wait at most for those, and
the other slots always play the ladder.  :func:`dispatch` runs after each new challenge,
after each match a worker finishes, and from the clock (a missed call is only late).

A started challenge is an ordinary match (``kind = "challenge"``): a worker plays it, and if
it is rated its result moves the ratings in the one finishing transaction every match goes
through (:func:`arena.jobs.bodies.finish`, once: a result is unique per match); an unrated
one touches no rating.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.core.endpoints import endpoint_of
from arena.core.families import family_of, storable_ruleset
from arena.core.models import (
    MAX_ID,
    Account,
    Bot,
    Challenge,
    ChallengeOpponent,
    Match,
    Rating,
    utcnow,
)
from arena.core.queue import get_queue
from arena.core.storage import get_db

from .matches import DuplicateEndpointError, create_match, default_limits, enqueue_match

log = logging.getLogger(__name__)

KIND = "challenge"
"""``Match.kind`` of a challenge's match."""
OPEN = ("queued", "running")
"""Match states that hold a challenge slot."""
HOUR = dt.timedelta(hours=1)
WAITING_READ = 500
"""Most waiting challenges one dispatch looks at (the line is bounded anyway: owners times
``CHALLENGE_OPEN_PER_OWNER``)."""


class RefusedError(Exception):
    """A challenge that may not be made: the HTTP status, a stable code and why in words."""

    def __init__(self, status: int, code: str, message: str,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = (status, code, message,
                                                                  retry_after)


@dataclass(frozen=True)
class Wanted:
    """What the owner asks for: opponents by id (None: a random set near the bot's rating),
    a rule set, deals, rated or not."""

    opponents: list[int] | None
    ruleset: str
    deals: int
    rated: bool


def owner_of(bot: Bot) -> str:
    """Whom the per-owner limits count: the bot's account, else the bot itself."""
    return f"account:{bot.account_id}" if bot.account_id is not None else f"bot:{bot.id}"


def challenger_problem(bot: Bot) -> str | None:
    """Why ``bot`` cannot challenge now (None: it can)."""
    if bot.deleted_at is not None:
        return "it is deleted"
    if bot.check_state != "passed":
        return "it has not passed its health check yet"
    if bot.health_paused:
        return f"it is benched as unhealthy ({bot.pause_reason or 'failed checks'})"
    return None


def opponent_problem(bot: Bot) -> tuple[str, str] | None:
    """(code, why) when ``bot`` may not be challenged now; None when it may."""
    if bot.deleted_at is not None:
        return "opponent_deleted", "is deleted"
    if not bot.accepts_challenges:
        return "opponent_opted_out", "does not accept challenges (its owner opted out)"
    if bot.owner_paused:
        return "opponent_paused", "is paused by its owner"
    if bot.check_state != "passed":
        return "opponent_unhealthy", "has not passed its health check"
    if bot.health_paused:
        return "opponent_unhealthy", "is benched as unhealthy"
    return None


# --- limits ----------------------------------------------------------------------------------


def open_count(s: Session, owner: str) -> int:
    """The owner's challenges waiting, or started with a match queued or running."""
    stmt = (select(func.count()).select_from(Challenge)
            .outerjoin(Match, Match.id == Challenge.match_id)
            .where(Challenge.owner == owner,
                   (Challenge.state == "waiting") | Match.state.in_(OPEN)))
    return int(s.scalar(stmt) or 0)


def check_owner_limits(s: Session, cfg: Mapping[str, Any], owner: str, now: dt.datetime) -> None:
    cap = int(cfg["CHALLENGE_OPEN_PER_OWNER"])
    if open_count(s, owner) >= cap:
        raise RefusedError(429, "too_many_open_challenges", f"at most {cap} challenges of "
                           "one owner may wait or play at once; start another when one has "
                           "finished", retry_after=30)
    per_hour = int(cfg["CHALLENGE_PER_OWNER_PER_HOUR"])
    recent = select(Challenge.created_at).where(Challenge.owner == owner,
                                                Challenge.created_at > now - HOUR)
    made = int(s.scalar(select(func.count()).select_from(recent.subquery())) or 0)
    if made >= per_hour:
        oldest = s.scalar(select(func.min(recent.subquery().c.created_at))) or now
        wait = max(1, math.ceil((oldest + HOUR - now).total_seconds()))
        raise RefusedError(429, "challenge_quota", f"at most {per_hour} challenges per owner per "
                           f"hour; the next one is possible in {wait} s", retry_after=wait)


def challenged_lately(s: Session, bot_ids: Sequence[int], now: dt.datetime) -> dict[int, int]:
    """How often each bot was picked as an opponent in the last hour."""
    if not bot_ids:
        return {}
    rows = s.execute(select(ChallengeOpponent.bot_id, func.count())
                     .join(Challenge, Challenge.id == ChallengeOpponent.challenge_id)
                     .where(ChallengeOpponent.bot_id.in_(bot_ids),
                            Challenge.created_at > now - HOUR)
                     .group_by(ChallengeOpponent.bot_id)).all()
    return {int(b): int(n) for b, n in rows}


# --- choosing the opponents ------------------------------------------------------------------


def _endpoint(bot: Bot) -> str:
    return endpoint_of(bot.url) or bot.url


def chosen_opponents(s: Session, cfg: Mapping[str, Any], challenger: Bot, ids: list[int],
                     seats: int, now: dt.datetime) -> list[Bot]:
    """The bots the owner named, checked one by one (the first problem found is refused)."""
    if len(ids) != seats - 1:
        raise RefusedError(400, "wrong_seat_count", f"this rule set seats {seats}: name "
                           f"{seats - 1} opponents (or none for a random set near the bot's "
                           "rating)")
    if len(set(ids)) != len(ids):
        raise RefusedError(400, "duplicate_bot", "a bot may sit at a table only once")
    if challenger.id in ids:
        raise RefusedError(400, "self_challenge", "a bot cannot challenge itself")
    bots = []
    for bot_id in ids:
        bot = s.get(Bot, bot_id) if 1 <= bot_id <= MAX_ID else None
        if bot is None:
            raise RefusedError(404, "opponent_not_found", f"no bot {bot_id}")
        problem = opponent_problem(bot)
        if problem is not None:
            raise RefusedError(409, problem[0], f"bot {bot.id} ({bot.name}) {problem[1]}")
        bots.append(bot)
    per_target = int(cfg["CHALLENGE_PER_TARGET_PER_HOUR"])
    lately = challenged_lately(s, ids, now)
    for bot in bots:
        if lately.get(bot.id, 0) >= per_target:
            raise RefusedError(429, "opponent_challenged_too_often", f"bot {bot.id} ({bot.name}) "
                               f"was challenged {per_target} times in the last hour, the most a "
                               "bot may be; choose another", retry_after=600)
    endpoints = [_endpoint(b) for b in [challenger, *bots]]
    if len(set(endpoints)) != len(endpoints):
        raise RefusedError(400, "duplicate_endpoint", "two of these bots are called at the same "
                           "endpoint; one endpoint may sit in one seat of a match only")
    return bots


def near_opponents(s: Session, cfg: Mapping[str, Any], challenger: Bot, family: str,
                   seats: int, now: dt.datetime, rng: random.Random) -> list[Bot]:
    """``seats - 1`` bots drawn at random from the ``CHALLENGE_NEAR_POOL`` eligible bots
    closest to the challenger's rating in ``family`` (each at an endpoint of its own)."""
    pool = list(s.scalars(select(Bot).where(
        Bot.deleted_at.is_(None), Bot.accepts_challenges.is_(True),
        Bot.owner_paused.is_(False), Bot.health_paused.is_(False),
        Bot.check_state == "passed", Bot.id != challenger.id)))
    lately = challenged_lately(s, [b.id for b in pool], now)
    per_target = int(cfg["CHALLENGE_PER_TARGET_PER_HOUR"])
    pool = [b for b in pool if lately.get(b.id, 0) < per_target]
    initial = float(cfg["ELO_INITIAL"])
    ratings = dict(s.execute(select(Rating.bot_id, Rating.rating).where(
        Rating.family == family, Rating.bot_id.in_([b.id for b in pool] + [challenger.id]))
    ).all())
    mine = ratings.get(challenger.id, initial)
    pool.sort(key=lambda b: (abs(ratings.get(b.id, initial) - mine), b.id))
    nearest = pool[:max(seats - 1, int(cfg["CHALLENGE_NEAR_POOL"]))]
    rng.shuffle(nearest)
    picked: list[Bot] = []
    seen = {_endpoint(challenger)}
    for bot in nearest:
        if _endpoint(bot) not in seen:
            picked.append(bot)
            seen.add(_endpoint(bot))
        if len(picked) == seats - 1:
            return picked
    raise RefusedError(409, "no_opponents", f"fewer than {seats - 1} bots may be challenged now "
                       "(active, accepting challenges, not challenged too often this hour); name "
                       "opponents or try later")


# --- making one ------------------------------------------------------------------------------


def create_challenge(s: Session, cfg: Mapping[str, Any], challenger: Bot, wanted: Wanted,
                     *, rng: random.Random | None = None) -> Challenge:
    """Add a ``waiting`` challenge to the session, or raise :class:`RefusedError`.  The caller
    has checked that the request owns ``challenger``; it commits, then calls
    :func:`dispatch`."""
    try:
        rules = storable_ruleset(wanted.ruleset)
    except ValueError as exc:
        raise RefusedError(400, "unknown_ruleset", str(exc)) from None
    if not 1 <= wanted.deals <= int(cfg["CHALLENGE_MAX_DEALS"]):
        raise RefusedError(400, "out_of_range",
                           f"deals must be between 1 and {int(cfg['CHALLENGE_MAX_DEALS'])}")
    problem = challenger_problem(challenger)
    if problem is not None:
        raise RefusedError(409, "bot_not_active", f"bot {challenger.id} ({challenger.name}) cannot "
                           f"challenge now: {problem}")
    # One owner's requests one at a time (its limits are counts): lock the owner's row, its
    # account or (without one) the bot (PostgreSQL; SQLite's writes are serial anyway).
    if challenger.account_id is not None:
        s.execute(select(Account.id).where(Account.id == challenger.account_id)
                  .with_for_update())
    else:
        s.execute(select(Bot.id).where(Bot.id == challenger.id).with_for_update())
    owner, now = owner_of(challenger), utcnow()
    check_owner_limits(s, cfg, owner, now)
    if wanted.opponents is None:
        opponents = near_opponents(s, cfg, challenger, family_of(rules.name), rules.players,
                                   now, rng or random.Random())
    else:
        opponents = chosen_opponents(s, cfg, challenger, wanted.opponents, rules.players, now)
    ch = Challenge(bot_id=challenger.id, owner=owner,
                   mode="near" if wanted.opponents is None else "chosen",
                   ruleset=rules.name, deals=wanted.deals, rated=wanted.rated,
                   state="waiting", reason="", created_at=now)
    s.add(ch)
    s.flush()
    for position, bot in enumerate(opponents):
        s.add(ChallengeOpponent(challenge_id=ch.id, position=position, bot_id=bot.id))
    s.flush()
    return ch


# --- the share of the workers ----------------------------------------------------------------


def slots(app: Flask) -> int:
    """How many challenge matches may be queued or running at once (module docstring)."""
    cfg = app.config
    fixed = int(cfg["CHALLENGE_SLOTS"])
    if fixed > 0:
        return fixed
    workers = max(1, get_queue(app).workers())
    per_worker = max(1, int(cfg["WORKER_CONCURRENCY"]))
    return max(1, math.floor(float(cfg["CHALLENGE_SHARE"]) * workers * per_worker))


def active(s: Session) -> int:
    """Challenge matches queued or running now (``ix_matches_state_id``)."""
    return int(s.scalar(select(func.count()).select_from(Match).where(
        Match.state.in_(OPEN), Match.kind == KIND)) or 0)


def _start(s: Session, cfg: Mapping[str, Any], ch: Challenge) -> Match | None:
    """Create the challenge's match, or refuse it (a bot can no longer play)."""
    bots = [ch.bot, *[o.bot for o in ch.opponents]]
    problem = challenger_problem(ch.bot)
    if problem is not None:
        ch.state, ch.reason = "refused", f"{ch.bot.name} cannot play: {problem}"
        return None
    for bot in bots[1:]:
        found = opponent_problem(bot)
        if found is not None:
            ch.state, ch.reason = "refused", f"{bot.name} {found[1]}"
            return None
    try:
        match = create_match(s, bots=bots, ruleset=ch.ruleset, deals=ch.deals,
                             limits=default_limits(cfg), kind=KIND, rated=ch.rated)
    except (DuplicateEndpointError, ValueError) as exc:
        ch.state, ch.reason = "refused", str(exc)
        return None
    ch.state, ch.match_id, ch.started_at = "started", match.id, utcnow()
    return match


def dispatch(app: Flask) -> list[int]:
    """Start the oldest waiting challenges while challenge slots are free; returns the ids
    of the matches created (committed, then enqueued).

    The waiting rows are locked first (PostgreSQL; SQLite's writes are serial anyway), and
    the slots in use counted after, so two dispatchers at once never overfill the share."""
    created: list[int] = []
    cap = 0
    with get_db(app).begin() as s:
        waiting = list(s.scalars(select(Challenge).where(Challenge.state == "waiting")
                                 .order_by(Challenge.id).limit(WAITING_READ)
                                 .with_for_update(skip_locked=False)))
        if not waiting:
            return []
        cap = slots(app)
        free = cap - active(s)
        for ch in waiting:
            if free <= 0:
                break
            match = _start(s, app.config, ch)
            if match is not None:
                created.append(match.id)
                free -= 1
    for match_id in created:
        enqueue_match(app, match_id)
    if created:
        log.info("challenges: started matches %s (%d slots)", created, cap)
    return created


# --- where a challenge stands ----------------------------------------------------------------


def state_of(ch: Challenge) -> str:
    """``waiting`` or ``refused``, else its match's state (queued, running, finished,
    failed)."""
    if ch.state == "started" and ch.match is not None:
        return ch.match.state
    return ch.state


def queue_position(s: Session, app: Flask, ch: Challenge) -> int | None:
    """Where the challenge stands in line, from 1 (next): among the waiting challenges while
    it waits for a slot, on the job queue while its match waits for a worker; None once
    playing (or when Redis cannot say)."""
    if ch.state == "waiting":
        ahead = s.scalar(select(func.count()).select_from(Challenge).where(
            Challenge.state == "waiting", Challenge.id < ch.id))
        return int(ahead or 0) + 1
    match = ch.match
    if match is None or match.state != "queued":
        return None
    found = get_queue(app).position(match.job_id)
    return None if found is None else found + 1
