"""Benching: taking a bot out of the ladder, for how long, and when it is checked again.

A bot is *benched* (status ``unhealthy``) when its health checks keep failing or its real
matches say it is not fit to play (:func:`arena.bots.service.judge_matches`).  Each benching
is an event among the bot's health checks: a :class:`~arena.core.models.HealthCheck` row of
purpose ``bench`` (``at``: when; ``reason``: why; ``finished_at``: when the bench ends), so
the bot page and ``GET /api/bots/<id>/health`` show it between the checks that led to it
and the check that ends it.

**Back-off.**  A bot that fails its checks simply returns when one passes (nothing it does
costs anyone meanwhile: it is out of the ladder).  A bot benched for what it did *in
matches* is different: it may pass the probe every time and fail every match, and each
return costs its opponents a match.  So such a bench lasts ``HEALTH_BENCH_S``, doubled for
each earlier match bench of the bot within ``HEALTH_BENCH_WINDOW_S``, and at most
``HEALTH_BENCH_MAX_S``; no check returns it before the bench ends (a check that passes
earlier is recorded, and the bot waits).  When the bench ends, the health sweep checks it at
once, and a passing check returns it.

**When.**  :func:`next_check_at` is when the next automatic check is due (the bench's end, or
the last check plus ``HEALTH_SWEEP_INTERVAL_S``); the owner may ask for one sooner ("check
now"), at most once per ``HEALTH_RECHECK_MIN_INTERVAL_S`` (:func:`recheck_wait_s`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.core.models import Bot, HealthCheck, utcnow
from arena.notify import events

BENCH = "bench"
"""The ``purpose`` of a benching event among a bot's health checks."""
OWNER_CHECK = "recheck"
"""The ``purpose`` of a check the owner asked for."""


def _aware(at: dt.datetime | None) -> dt.datetime | None:
    """Datetimes as stored (SQLite drops the zone) compared as UTC."""
    if at is not None and at.tzinfo is None:
        return at.replace(tzinfo=dt.UTC)
    return at


def bench_seconds(app: Flask, earlier: int) -> float:
    """How long a match bench lasts after ``earlier`` match benches within the window."""
    cfg = app.config
    base, cap = float(cfg["HEALTH_BENCH_S"]), float(cfg["HEALTH_BENCH_MAX_S"])
    return min(cap, base * float(2 ** min(earlier, 62)))


def bench(app: Flask, s: Session, bot: Bot, reason: str, *, for_matches: bool) -> dt.datetime:
    """Take ``bot`` out of the ladder and record the event; returns when the bench ends
    (``now`` for a bench after failed checks: the next passing check returns the bot).  The
    bot's owner is told (``bot.benched``, :mod:`arena.notify.events`)."""
    now = utcnow()
    until = now
    if for_matches:
        window = dt.timedelta(seconds=float(app.config["HEALTH_BENCH_WINDOW_S"]))
        earlier = s.scalar(select(func.count()).select_from(HealthCheck).where(
            HealthCheck.bot_id == bot.id, HealthCheck.purpose == BENCH,
            HealthCheck.finished_at > HealthCheck.at, HealthCheck.at >= now - window)) or 0
        until = now + dt.timedelta(seconds=bench_seconds(app, int(earlier)))
    bot.health_paused = True
    bot.pause_reason = reason[:1000]
    bot.updated_at = now
    s.add(HealthCheck(bot_id=bot.id, at=now, url=bot.url, ok=False, reason=reason[:1000],
                      state="done", purpose=BENCH, finished_at=until))
    # The owner hears of it once this transaction commits (never if it rolls back).
    events.emit(app, s, "bot.benched", bot_ids=[bot.id], data={
        "reason": bot.pause_reason, "cause": "matches" if for_matches else "checks",
        "bench_ends": events.iso(until) if for_matches else None})
    return until


def bench_ends(s: Session, bot: Bot) -> dt.datetime | None:
    """When the bot's current bench ends (None: not benched, or no bench recorded)."""
    if not bot.health_paused:
        return None
    at = s.scalar(select(HealthCheck.finished_at).where(
        HealthCheck.bot_id == bot.id, HealthCheck.purpose == BENCH)
        .order_by(HealthCheck.id.desc()).limit(1))
    return _aware(at)


def benched_now(s: Session, bot: Bot) -> bool:
    """Whether the bot's bench still holds it (no check may return it yet)."""
    ends = bench_ends(s, bot)
    return ends is not None and ends > utcnow()


def next_check_at(app: Flask, bot: Bot, ends: dt.datetime | None) -> dt.datetime | None:
    """When the next automatic check of ``bot`` is due (None: the sweep does not check it:
    not admitted, paused by its owner, deleted)."""
    if bot.deleted_at is not None or bot.owner_paused or bot.check_state != "passed":
        return None
    now = utcnow()
    last = _aware(bot.last_health_at)
    due = now if last is None else last + dt.timedelta(
        seconds=float(app.config["HEALTH_SWEEP_INTERVAL_S"]))
    if ends is not None and bot.health_paused:
        # Right after the bench, unless the bot was checked since it ended.
        due = ends if last is None or last < ends else max(due, ends)
    return max(due, now)


def recheck_wait_s(app: Flask, s: Session, bot: Bot) -> float:
    """Seconds until the owner may ask for another check (0: now).  A check of the owner's
    still queued or running, or asked for less than ``HEALTH_RECHECK_MIN_INTERVAL_S`` ago,
    makes them wait: each check is a call to the bot, and the queue is shared."""
    gap = float(app.config["HEALTH_RECHECK_MIN_INTERVAL_S"])
    row = s.execute(select(HealthCheck.at, HealthCheck.state).where(
        HealthCheck.bot_id == bot.id, HealthCheck.purpose == OWNER_CHECK)
        .order_by(HealthCheck.id.desc()).limit(1)).first()
    if row is None:
        return 0.0
    at = _aware(row.at)
    assert at is not None
    left = (at + dt.timedelta(seconds=gap) - utcnow()).total_seconds()
    if row.state != "done":
        left = max(left, 1.0)
    return max(0.0, left)


def in_words(seconds: float) -> str:
    """``"in 4 min"``, ``"in 2 h 5 min"``, ``"now"``: a wait for people."""
    s = round(seconds)
    if s <= 0:
        return "now"
    if s < 60:
        return f"in {s} s"
    minutes = (s + 59) // 60
    if minutes < 60:
        return f"in {minutes} min"
    h, m = divmod(minutes, 60)
    return f"in {h} h" + (f" {m} min" if m else "")


def page_facts(app: Flask, s: Session, bot: Bot, *, owner: bool) -> dict[str, Any]:
    """What the bot page says about coming back: the bench's end, the next automatic check
    and (for its ``owner``) how long before "check now" works again.  No statement for an
    active bot's public page (its statement count is fixed: tests/arena/test_read_path.py)."""
    ends = bench_ends(s, bot)
    now = utcnow()
    nxt = next_check_at(app, bot, ends)
    return {
        "bench_ends": ends if ends is not None and ends > now else None,
        "bench_in": in_words((ends - now).total_seconds()) if ends is not None else "",
        "next_check_at": nxt,
        "next_check_in": in_words((nxt - now).total_seconds()) if nxt is not None else "",
        "recheck_wait_s": recheck_wait_s(app, s, bot) if owner else 0.0,
    }


__all__ = ["BENCH", "OWNER_CHECK", "bench", "bench_ends", "bench_seconds", "benched_now",
           "in_words", "next_check_at", "page_facts", "recheck_wait_s"]
