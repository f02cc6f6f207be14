"""The ladder: a continuous matchmaker that keeps every active bot playing.

One *round* (``arena ladder``, or the clock every ``LADDER_INTERVAL_S``) creates matches
among the *idle* active bots (admitted by a passing health check, not paused, not unhealthy,
not deleted, not seated in a queued or running match):

1. **No starvation.**  The bot that has waited longest (``Bot.idle_since``) is the anchor of
   the next table, so every idle bot is at the head of the line after finitely many rounds.
2. **Similar ratings.**  The other seats go to the idle bots with the lowest
   ``|rating - anchor rating| - LADDER_WAIT_WEIGHT * seconds waited``: close ratings first,
   but a long wait makes any bot acceptable.
3. **One endpoint, one seat.**  A table never holds two bots called at the same endpoint
   (:func:`arena.core.endpoints.endpoint_of`), even bots registered before endpoints were unique.
4. **Balanced seats.**  The table is seated in the order (of all ``n!``) that minimises how
   often each bot has already sat in its seat in this rule set, so nobody keeps the same
   position (which matters in Big Two: who leads, who follows whom).

With ``LADDER_FORMAT=duplicate`` a table plays a *duplicate set* instead of one match: one
match per rotation of the seating chosen above, all on the same deals, rated once when the
last finishes (:mod:`arena.play.duplicate_sets`); every bot then sits in every seat once.

Rule sets cycle through ``LADDER_RULESETS``; a round stops when fewer idle bots than seats
are left or ``LADDER_MAX_MATCHES_PER_ROUND`` matches were made (a set counts its matches, and
the first table of a round is made even when its set alone exceeds the limit).  Matches are
committed, then enqueued.

A round reads each family's idle bots once and arranges them once
(:class:`arena.play.ladder_pool.IdlePool`: sorted by wait and by rating), so a table costs
O(seats · log n), not a sort of every idle bot; what seating the tables reads is read once
for all of them, and the round's matches are written and enqueued together: the hundreds of
tables a round of a 100,000-bot ladder needs (docs/operations.md, "At 100,000 bots").
"""

from __future__ import annotations

import itertools
import random
import secrets
from collections.abc import Sequence
from typing import Any

from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from arena.core.endpoints import endpoint_of
from arena.core.families import family_of
from arena.core.models import Bot, LadderSetMatch, Match, MatchSeat, Rating, utcnow
from arena.core.storage import get_db
from referee import find_ruleset

from .duplicate_sets import FORMATS, rotations
from .ladder_pool import Candidate, IdlePool
from .matches import create_match, default_limits, enqueue_new_matches


def pick_table(candidates: Sequence[Candidate], seats: int, wait_weight: float,
               rng: random.Random) -> list[Candidate] | None:
    """The anchor (longest wait) and its ``seats - 1`` preferred opponents, never two
    candidates with one endpoint (None when there are not enough distinct ones).  A round
    makes many tables from one :class:`IdlePool`; this is one table of a pool of its own."""
    return IdlePool(candidates, wait_weight, rng).pick(seats)


def seat_order(bot_ids: Sequence[int], seat_counts: dict[tuple[int, int], int],
               rng: random.Random) -> list[int]:
    """The seating of ``bot_ids`` that minimises the sum of times each bot already sat in
    its seat (ties broken at random)."""
    best: list[tuple[int, float, tuple[int, ...]]] = []
    for perm in itertools.permutations(bot_ids):
        load = sum(seat_counts.get((b, seat), 0) for seat, b in enumerate(perm))
        best.append((load, rng.random(), perm))
    return list(min(best)[2])


def idle_candidates(s: Session, family: str, initial: float) -> list[Candidate]:
    """Every idle active bot, with its rating in ``family``: plain columns, not ORM objects
    (at 100,000 bots a round reads them all)."""
    busy = select(MatchSeat.bot_id).join(Match).where(Match.state.in_(("queued", "running")))
    bots = s.execute(
        select(Bot.id, Bot.url, Bot.idle_since).where(
            Bot.deleted_at.is_(None),
            Bot.owner_paused.is_(False),
            Bot.health_paused.is_(False),
            Bot.check_state == "passed",
            Bot.id.not_in(busy),
        )
    ).all()
    ratings = dict(
        s.execute(select(Rating.bot_id, Rating.rating).where(Rating.family == family)).all()
    )
    now = utcnow()
    return [
        Candidate(b.id, ratings.get(b.id, initial), (now - b.idle_since).total_seconds(),
                  endpoint_of(b.url) or b.url)
        for b in bots
    ]


def seat_counts(s: Session, ruleset: str, bot_ids: Sequence[int]) -> dict[tuple[int, int], int]:
    rows = s.execute(
        select(MatchSeat.bot_id, MatchSeat.seat, func.count())
        .join(Match)
        .where(Match.ruleset == ruleset, Match.kind == "ladder", MatchSeat.bot_id.in_(bot_ids))
        .group_by(MatchSeat.bot_id, MatchSeat.seat)
    ).all()
    return {(b, seat): n for b, seat, n in rows}


def ladder_rulesets(app: Flask) -> list[str]:
    names = [n.strip() for n in str(app.config["LADDER_RULESETS"]).split(",") if n.strip()]
    return [find_ruleset(n).name for n in names] or ["standard"]


def ladder_format(app: Flask) -> str:
    fmt = str(app.config["LADDER_FORMAT"]).strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"LADDER_FORMAT must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return fmt


def run_round(app: Flask, *, max_matches: int | None = None, seed: int | None = None) -> list[int]:
    """One matchmaking round; returns the ids of the matches created (and enqueued)."""
    created = create_round(app, max_matches=max_matches, seed=seed)
    enqueue_new_matches(app, created)
    return created


def create_round(app: Flask, *, max_matches: int | None = None,
                 seed: int | None = None) -> list[int]:
    """The matches of one matchmaking round, committed but not enqueued (:func:`run_round`
    enqueues them; bench/rating_luck.py plays them in process).

    First every table (:func:`_pick_tables`: no statement but each family's idle bots, read
    once), then what seating them reads, once for the whole round, and every match
    (:func:`_seat_tables`)."""
    cfg = app.config
    limit = int(cfg["LADDER_MAX_MATCHES_PER_ROUND"]) if max_matches is None else max_matches
    base_seed = seed if seed is not None else int(cfg["LADDER_SEED"]) or None
    rng = random.Random(base_seed)
    duplicate = ladder_format(app) == "duplicate"
    with get_db(app).begin() as s:
        tables = _pick_tables(s, cfg, ladder_rulesets(app), limit, duplicate, rng)
        if not tables:
            return []
        return _seat_tables(s, cfg, tables, duplicate, base_seed, rng)


def _pick_tables(s: Session, cfg: Any, rulesets: Sequence[str], limit: int, duplicate: bool,
                 rng: random.Random) -> list[tuple[str, list[int]]]:
    """The round's tables: (rule set, bot ids) each, at most ``limit`` matches in all (a
    duplicate set is one match per seat)."""
    # Count the ladder's tables so the rule-set cycle continues across rounds (a set's
    # rotations after the first are not tables of their own).
    cycle = int(s.scalar(select(func.count()).select_from(Match).where(
        Match.kind == "ladder",
        Match.id.not_in(select(LadderSetMatch.match_id)
                        .where(LadderSetMatch.rotation > 0)))) or 0)
    taken: set[int] = set()
    # Each family's idle bots, read and arranged once a round (:class:`IdlePool`): within it
    # they change only by the bots this round seats, and a read is every active bot.
    pools: dict[str, IdlePool] = {}
    wait_weight = float(cfg["LADDER_WAIT_WEIGHT"])
    tables: list[tuple[str, list[int]]] = []
    made = 0
    for i in range(limit):
        ruleset = rulesets[(cycle + i) % len(rulesets)]
        rules = find_ruleset(ruleset)
        if tables and made + (rules.players if duplicate else 1) > limit:
            break
        family = family_of(ruleset)
        if family not in pools:
            idle = idle_candidates(s, family, float(cfg["ELO_INITIAL"]))
            pools[family] = IdlePool([c for c in idle if c.bot_id not in taken],
                                     wait_weight, rng)
        table = pools[family].pick(rules.players)
        if table is None:
            break
        ids = [c.bot_id for c in table]
        for other in pools.values():  # seated once, whatever the family
            other.discard(ids)
        taken.update(ids)
        tables.append((ruleset, ids))
        made += rules.players if duplicate else 1
    return tables


def _seat_tables(s: Session, cfg: Any, tables: list[tuple[str, list[int]]], duplicate: bool,
                 base_seed: int | None, rng: random.Random) -> list[int]:
    """Seat and create every table's match (or duplicate set): the seated bots with their
    versions and their seat counts per rule set read once, the matches in one flush; their
    ids."""
    taken = sorted({b for _, ids in tables for b in ids})
    bots = {b.id: b for b in s.scalars(
        select(Bot).where(Bot.id.in_(taken)).options(selectinload(Bot.versions)))}
    counts: dict[str, dict[tuple[int, int], int]] = {}
    for ruleset in sorted({r for r, _ in tables}):
        counts[ruleset] = seat_counts(
            s, ruleset, sorted({b for r, ids in tables if r == ruleset for b in ids}))
    made_sets: list[list[Match]] = []
    for ruleset, ids in tables:
        order = seat_order(ids, counts[ruleset], rng)
        match_seed = rng.getrandbits(62) if base_seed is not None else None
        seatings = rotations(order) if duplicate else [tuple(order)]
        if duplicate and match_seed is None:  # every rotation deals the same cards
            match_seed = secrets.randbits(62)
        made_sets.append([create_match(
            s,
            bots=[bots[b] for b in seating if b in bots],
            ruleset=ruleset,
            deals=int(cfg["LADDER_DEALS"]),
            limits=default_limits(cfg),
            kind="ladder",
            seed=match_seed,
            flush=False,
        ) for seating in seatings])
    s.flush()
    created: list[int] = []
    for matches in made_sets:
        for rotation, match in enumerate(matches):
            if duplicate:
                s.add(LadderSetMatch(match_id=match.id, set_id=matches[0].id,
                                     rotation=rotation))
            created.append(match.id)
    return created
