"""Creating matches and handing them to the queue (never running them: see :mod:`arena.jobs`).

A match row is committed first and enqueued second.  If the enqueue fails (Redis down), the
match stays ``queued`` in the database and the reconciler enqueues it later.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from flask import Flask
from sqlalchemy import update
from sqlalchemy.orm import Session

from referee import find_ruleset
from referee.runner.health import wire_match_id as wire_id
from referee.runner.match import Limits

from .bots import endpoint_of
from .families import family_of
from .models import Bot, Match, MatchSeat, utcnow
from .queue import get_queue
from .storage import get_db

log = logging.getLogger(__name__)

PLAY_MATCH = "arena.jobs.play_match"


def default_limits(config: Mapping[str, Any]) -> Limits:
    return Limits(
        deadline_ms=int(config["MATCH_DEADLINE_MS"]),
        time_bank_ms=int(config["MATCH_TIME_BANK_MS"]),
        max_strikes=int(config["MATCH_MAX_STRIKES"]),
        call_deadline_ms=int(config["MATCH_CALL_DEADLINE_MS"]),
    )


def limits_of(match: Match) -> Limits:
    d = match.limits
    return Limits(
        deadline_ms=int(d["deadline_ms"]),
        time_bank_ms=int(d["time_bank_ms"]),
        max_strikes=None if d["max_strikes"] is None else int(d["max_strikes"]),
        call_deadline_ms=int(d["call_deadline_ms"]),
    )


def job_timeout(match: Match, config: Mapping[str, Any]) -> int:
    """Worst-case duration of a match, in whole seconds, plus a margin: every move of every
    deal takes the full deadline, every seat drains its time bank, and every courtesy call
    takes its full deadline."""
    lim = limits_of(match)
    seats = find_ruleset(match.ruleset).players
    moves = match.deals * int(config["MATCH_TURNS_PER_DEAL_BOUND"]) * lim.deadline_ms / 1000
    banks = seats * lim.time_bank_ms / 1000
    calls = 3 * seats * lim.call_deadline_ms / 1000
    return int(moves + banks + calls) + int(config["MATCH_JOB_TIMEOUT_MARGIN_S"])


class DuplicateEndpointError(ValueError):
    """Two seats of one match would call the same endpoint."""


def wire_match_id(config: Mapping[str, Any], match_id: int) -> str:
    """The match id bots see (``m-`` and 16 hex digits): a keyed hash of the match number, so
    it has the same form as a health probe's random id and a bot cannot look it up in the
    public API while it plays."""
    key = str(config["SECRET_KEY"]).encode()
    digest = hmac.new(key, f"arena-match:{match_id}".encode(), hashlib.sha256).digest()
    return wire_id(int.from_bytes(digest[:8], "big"))


def seat_endpoints(bots: Sequence[Bot]) -> list[str]:
    """The endpoint each bot would be called at (its newest version's URL)."""
    return [endpoint_of(b.versions[-1].url) or b.versions[-1].url for b in bots]


def create_match(
    s: Session,
    *,
    bots: Sequence[Bot],
    ruleset: str,
    deals: int,
    limits: Limits,
    kind: str,
    seed: int | None = None,
    rated: bool = True,
) -> Match:
    """Add a queued match with one seat per bot (in seat order) to the session."""
    rules = find_ruleset(ruleset)
    if len(bots) != rules.players:
        raise ValueError(f"{rules.name} needs {rules.players} bots, got {len(bots)}")
    endpoints = seat_endpoints(bots)
    if len(set(endpoints)) != len(endpoints):
        raise DuplicateEndpointError("one endpoint may sit in one seat of a match only")
    now = utcnow()
    match = Match(
        kind=kind,
        state="queued",
        ruleset=rules.name,
        family=family_of(rules.name),
        deals=deals,
        seed=secrets.randbits(62) if seed is None else seed,
        limits=limits.to_json(),
        rated=rated,
        created_at=now,
        queued_at=now,
        attempts=0,
        enqueues=0,
        error="",
    )
    s.add(match)
    s.flush()
    for seat, bot in enumerate(bots):
        current = bot.versions[-1]
        s.add(MatchSeat(match_id=match.id, seat=seat, bot_id=bot.id, bot_version_id=current.id))
    s.flush()
    return match


def enqueue_match(app: Flask, match_id: int, *, only_if: Any = None) -> str | None:
    """Give the match a new job id in the database, then put the job on the queue.

    ``only_if`` is an extra SQL condition for the id bump (the reconciler passes the
    condition it selected the match under, so two reconcilers never both enqueue).  Returns
    the job id, or None if the condition no longer held.  A Redis error is logged and
    swallowed: the match is safe in the database and will be enqueued by the reconciler.
    """
    db = get_db(app)
    with db.begin() as s:
        match = s.get(Match, match_id)
        if match is None:
            return None
        job_id = f"match-{match_id}-{match.enqueues + 1}"
        stmt = (
            update(Match)
            .where(Match.id == match_id, Match.enqueues == match.enqueues)
            .values(enqueues=Match.enqueues + 1, job_id=job_id, queued_at=utcnow())
        )
        if only_if is not None:
            stmt = stmt.where(only_if)
        if s.execute(stmt).rowcount != 1:  # type: ignore[attr-defined]
            return None
        timeout = job_timeout(match, app.config)
    try:
        get_queue(app).enqueue(
            PLAY_MATCH,
            match_id,
            job_id=job_id,
            timeout=timeout,
            retries=int(app.config["MATCH_JOB_RETRIES"]),
        )
    except Exception as exc:  # Redis down: the reconciler will enqueue it again
        log.warning("could not enqueue match %s: %s", match_id, exc)
        return None
    return job_id


def lease_deadline(app: Flask) -> dt.datetime:
    return utcnow() + dt.timedelta(seconds=float(app.config["LEASE_S"]))
