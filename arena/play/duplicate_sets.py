"""Duplicate sets on the ladder: the same deals replayed with the seats rotated, rated once.

With ``LADDER_FORMAT=duplicate`` a ladder table is not one match but a *set*: one match per
rotation of its seats (rotation ``r`` puts the ``i``-th bot of the table in seat
``(i - r) mod n``, the convention of duplicate tournaments), every rotation dealt from the same
seed, so every bot holds every hand from every seat once.  The rows that tie them together
are :class:`~arena.core.models.LadderSetMatch`; the set's id is its rotation-0 match's id.

How a set feeds Elo
-------------------
A rotation's result is stored like any match's, but it moves no rating on its own.  When the
*last* rotation of a set finishes (and every rotation finished: a set with a failed rotation is
not rated, its luck would not cancel), the set is applied as **one** multiplayer Elo result
(:mod:`arena.play.ratings`), in that last rotation's finishing transaction and under its
family's ledger lock:

* each bot's **duplicate score** is ``R - (T - R) / (n - 1)`` (``R``: its total score over the
  rotations, ``T``: everyone's), its score compared with the others who held the same cards,
  exactly as duplicate tournaments score a table (:mod:`arena.tournaments.scoring`);
* the bots are ranked by it (a bot that forfeited every rotation last, then deals won as the
  tie-break; equal keys share a rank, a draw);
* the ranks go through the ordinary pairwise Elo update with factor ``K * n`` (:data:`K_SCALE`:
  the set is ``n`` matches' worth of play, so it may move a rating as far as ``n`` plain matches
  could, and it does so with far less luck in it);
* each bot's ``games`` grows by one: a rating's games count *rated results*, and a set is one.

:func:`arena.play.ratings.rating_outcome` is the one place that decides it; the finish and the
recompute (``arena ratings --check``) both ask it, so a replay applies exactly what the
finishes applied.
Which rotation completes a set is the one whose result has the highest id among the set's
results: ids are handed out under the family lock, in the order ratings are applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.core.config import LADDER_FORMATS
from arena.core.models import LadderSetMatch, Match, MatchResult, MatchSeat

FORMATS = LADDER_FORMATS
"""Values of ``LADDER_FORMAT`` (checked at start: :func:`arena.core.config.check_choices`)."""

K_SCALE = "rotations"
"""A set's Elo factor is ``ELO_K`` times its number of rotations (see the module docstring)."""


def rotations(table: Sequence[int]) -> list[tuple[int, ...]]:
    """Every rotation of a table's seating (same convention as duplicate tournaments,
    :func:`arena.tournaments.schedule.rotations`)."""
    t = tuple(table)
    n = len(t)
    return [tuple(t[(s + r) % n] for s in range(n)) for r in range(n)]


@dataclass(frozen=True)
class SeatLine:
    bot_id: int
    score: int
    wins: int
    forfeited: bool


def combined_ranks(matches: Sequence[Sequence[SeatLine]]) -> dict[int, int]:
    """Each bot's rank (1 best; equal keys share a rank) from every rotation of a set, by
    duplicate score (see the module docstring)."""
    raw: dict[int, int] = {}
    wins: dict[int, int] = {}
    forfeits: dict[int, int] = {}
    played: dict[int, int] = {}
    for m in matches:
        for x in m:
            raw[x.bot_id] = raw.get(x.bot_id, 0) + x.score
            wins[x.bot_id] = wins.get(x.bot_id, 0) + x.wins
            forfeits[x.bot_id] = forfeits.get(x.bot_id, 0) + int(x.forfeited)
            played[x.bot_id] = played.get(x.bot_id, 0) + 1
    n = len(raw)
    if n < 2:
        return dict.fromkeys(raw, 1)
    total = sum(raw.values())
    key = {b: (played[b] > 0 and forfeits[b] == played[b],
               -round(raw[b] - (total - raw[b]) / (n - 1), 9), -wins[b]) for b in raw}
    return {b: 1 + sum(1 for o in raw if key[o] < key[b]) for b in sorted(raw)}


def set_of(s: Session, match_id: int) -> int | None:
    """The duplicate set ``match_id`` belongs to (None: a plain match)."""
    return s.scalar(select(LadderSetMatch.set_id).where(LadderSetMatch.match_id == match_id))


def set_matches(s: Session, set_id: int) -> list[int]:
    """The set's matches, in rotation order."""
    return list(s.scalars(select(LadderSetMatch.match_id)
                          .where(LadderSetMatch.set_id == set_id)
                          .order_by(LadderSetMatch.rotation)))


def completes(s: Session, set_id: int, match_id: int) -> bool:
    """Whether the finished match ``match_id`` (its result stored) completes its set: every
    rotation finished, and its result is the set's newest (results are numbered under the
    family lock, in the order ratings are applied)."""
    siblings = set_matches(s, set_id)
    unfinished = s.scalar(select(func.count()).select_from(Match)
                          .where(Match.id.in_(siblings), Match.state != "finished"))
    if unfinished:
        return False
    last = s.scalar(select(MatchResult.match_id).where(MatchResult.match_id.in_(siblings))
                    .order_by(MatchResult.id.desc()).limit(1))
    return last == match_id


def seat_lines(s: Session, match_ids: Sequence[int]) -> list[list[SeatLine]]:
    """Every match's seats (in seat order) as :class:`SeatLine` rows, one query."""
    by_match: dict[int, list[SeatLine]] = {m: [] for m in match_ids}
    for x in s.scalars(select(MatchSeat).where(MatchSeat.match_id.in_(match_ids))
                       .order_by(MatchSeat.match_id, MatchSeat.seat)):
        by_match[x.match_id].append(SeatLine(x.bot_id, x.score or 0, x.wins or 0,
                                             bool(x.forfeited)))
    return [by_match[m] for m in match_ids]
