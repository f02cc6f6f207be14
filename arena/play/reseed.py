"""Which seed a match attempt deals from: a retried match is dealt new cards.

A match is retried (a new *attempt*, :attr:`arena.core.models.Match.attempts`) when its worker
crashed, lost its lease or handed it back mid-play (:mod:`arena.jobs.bodies`,
:mod:`arena.jobs.reconcile`).
The bots of the attempt before saw their hands and every public play, and live viewers saw
the plays: dealt the same cards again, every bot of the retry would know what the others hold
and will play.  So attempt ``n > 1`` of an ordinary match deals from :func:`attempt_seed`, a
deterministic function of the match's seed and ``n``; attempt 1 deals from the match's seed.

Where the dealt seed is kept.  :attr:`Match.seed` stays the seed the match was *created*
with (the one an operator asked for, the one a duplicate table's rotations share, the base
every attempt's seed is derived from), and is never rewritten: rewriting it would lose the
base and make "the match's seed" mean a different thing per attempt.  The seed an attempt
*dealt* is written with what it dealt: the log's ``seed`` (the referee plays the match from
it, so ``verify`` and the replay re-deal exactly what was played) and the result
(``MatchResult.totals["seed"]``, in the same transaction as the log).  The API's and the
page's ``seed`` is that dealt seed (:func:`shown_seed`); the API gives the created one as
``match_seed``.  No migration: a result stored before this rule has no ``totals["seed"]``, and
its log was dealt from :attr:`Match.seed`, which is what :func:`shown_seed` then shows.

Duplicate tables keep their shared seed on a retry (:func:`deals_shared`).  Every rotation of
a duplicate table must deal the same cards, or the duplicate score (each bot holds each hand
once, :mod:`arena.tournaments.scoring`) compares nothing.  A retried rotation cannot take new
cards alone, and re-dealing the whole table would mean abandoning its other rotations while
they play (they run at the same time), each abandonment an attempt of its own toward
``MATCH_MAX_ATTEMPTS``.  It is also not needed for fairness: the rotations seat the *same* bots
in the same cyclic order with the hands moved one seat on (``schedule.rotations``), so across
the table every bot holds every hand and sees every public play of every deal anyway.  What
attempt 1 of a rotation showed its bots (their own hands, the plays of the others) is what
the table shows them in its other rotations; the format accepts that, and keeps it from
everyone else (:mod:`arena.play.deal_secrecy`, the live view never reveals a duplicate table's
hands).
"""

from __future__ import annotations

import hashlib

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.core.models import LadderSetMatch, Match
from arena.core.tournament_models import TournamentMatch

SEED_BITS = 62
"""Derived seeds have the range of the seeds the arena draws (``secrets.randbits(62)``) and
a client may give (``MAX_SEED``)."""


def attempt_seed(match_seed: int, attempt: int) -> int:
    """The seed attempt ``attempt`` (1-based) of a match with seed ``match_seed`` deals from.

    Attempt 1 (and 0, before any claim): ``match_seed`` itself.  Attempt ``n > 1``: the first
    8 bytes of SHA-256 of ``"arena-attempt:<match_seed>:<n>"``, big-endian, shifted right by
    2 (62 bits).  Each attempt derives from the match's seed, not from the attempt before,
    so any attempt's seed is computed from the match's seed alone."""
    if attempt <= 1:
        return match_seed
    digest = hashlib.sha256(f"arena-attempt:{match_seed}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


def deals_shared(s: Session, match_id: int) -> bool:
    """Whether other matches deal the same cards: a rotation of a duplicate table (a table
    with more than one match) or of a ladder duplicate set (:mod:`arena.play.duplicate_sets`,
    which keeps its shared seed on a retry for the same reasons)."""
    table = select(TournamentMatch.table_id).where(TournamentMatch.match_id == match_id)
    rotations = s.scalar(select(func.count()).select_from(TournamentMatch)
                         .where(TournamentMatch.table_id.in_(table.scalar_subquery())))
    if int(rotations or 0) > 1:
        return True
    ladder_set = select(LadderSetMatch.set_id).where(LadderSetMatch.match_id == match_id)
    set_rotations = s.scalar(select(func.count()).select_from(LadderSetMatch)
                             .where(LadderSetMatch.set_id.in_(ladder_set.scalar_subquery())))
    return int(set_rotations or 0) > 1


def shared_and_tournament(s: Session, match_id: int) -> tuple[bool, int | None]:
    """:func:`deals_shared`, and the match's tournament (None: it is in none), in one
    statement: what a worker asks of every match it starts (instead of three statements)."""
    table = select(TournamentMatch.table_id).where(TournamentMatch.match_id == match_id)
    rotations = (select(func.count()).select_from(TournamentMatch)
                 .where(TournamentMatch.table_id.in_(table.scalar_subquery())))
    ladder_set = select(LadderSetMatch.set_id).where(LadderSetMatch.match_id == match_id)
    set_rotations = (select(func.count()).select_from(LadderSetMatch)
                     .where(LadderSetMatch.set_id.in_(ladder_set.scalar_subquery())))
    tournament = select(TournamentMatch.tournament_id).where(TournamentMatch.match_id == match_id)
    row = s.execute(select(rotations.scalar_subquery(), set_rotations.scalar_subquery(),
                           tournament.scalar_subquery())).one()
    return int(row[0] or 0) > 1 or int(row[1] or 0) > 1, row[2]


def dealt_seed(s: Session, match: Match, attempt: int) -> int:
    """The seed ``match``'s attempt ``attempt`` deals from: a new one per retry, except at a
    duplicate table (see the module docstring)."""
    if deals_shared(s, match.id):
        return match.seed
    return attempt_seed(match.seed, attempt)


def shown_seed(s: Session, match: Match) -> int:
    """The seed to show for a match that is over: the one its stored log was dealt from;
    without a result (it failed), the one its last attempt dealt from."""
    if match.result is not None:
        stored = match.result.totals.get("seed")
        return match.seed if stored is None else int(stored)
    return dealt_seed(s, match, match.attempts)
