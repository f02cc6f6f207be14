"""Which finished matches must still keep their deals secret.

A finished match's log, replay and seed show every hand it dealt, and its bots' recorded calls
(:mod:`arena.bots.calls`) show each bot's own hands.  A duplicate tournament table, and a
duplicate set of the ladder (:mod:`arena.play.duplicate_sets`), plays the same deals (one seed)
once per rotation of its seats: while one rotation still plays, a finished
rotation's hands are that match's hidden cards.  A bot, or its author, reading a sibling's log
in the middle of a match would see every opponent's hand.

So every place that publishes a finished match's hidden information asks here first, and
withholds it while the same deals are in play anywhere:

* the replay frames and the log download (:mod:`arena.routes.matches`), 409 ``deals_in_play``;
* the seed in the match API and on the match page;
* the tournament archive (:func:`arena.tournaments.present.archive`), which leaves such logs
  out, in its query (:func:`in_play_sql`): they are never read;
* the owner's view of a bot's calls (:func:`arena.bots.calls.last_calls`), which holds such
  calls back.

The live relay never reveals hands at a duplicate table (see :mod:`arena.jobs.bodies`), and a
running match publishes none of these.  Terminal states (``finished``, ``failed``) end a match's
play; a sibling that is queued or running still plays the deals.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from sqlalchemy import ColumnElement, Select, SQLColumnExpression, bindparam, exists, select
from sqlalchemy.orm import Session, aliased

from arena.core.models import LadderSetMatch, Match
from arena.core.tournament_models import TournamentMatch

OVER = ("finished", "failed")
"""Match states in which no deal is left to play."""


def in_play_sql(match_id: SQLColumnExpression[int]) -> ColumnElement[bool]:
    """The predicate itself, as SQL: the match whose id is ``match_id`` (a column of the
    enclosing query) has a sibling rotation (another match of the same duplicate table, or
    of the same ladder duplicate set) that is not over.  Queries put it in their WHERE clause
    so that what must stay secret is never read (the archive does not load such logs);
    :func:`deals_in_play` asks the same."""
    own = aliased(TournamentMatch)
    sibling = aliased(TournamentMatch)
    playing = aliased(Match)
    own_set = aliased(LadderSetMatch)
    set_sibling = aliased(LadderSetMatch)
    set_playing = aliased(Match)
    return exists(
        select(sibling.match_id)
        .join(own, (own.table_id == sibling.table_id) & (own.match_id != sibling.match_id))
        .join(playing, playing.id == sibling.match_id)
        .where(own.match_id == match_id, playing.state.not_in(OVER))
    ) | exists(
        select(set_sibling.match_id)
        .join(own_set, (own_set.set_id == set_sibling.set_id)
              & (own_set.match_id != set_sibling.match_id))
        .join(set_playing, set_playing.id == set_sibling.match_id)
        .where(own_set.match_id == match_id, set_playing.state.not_in(OVER))
    )


def deals_in_play(s: Session, match_ids: Iterable[int]) -> set[int]:
    """Of ``match_ids``, those whose deals another match still plays (a sibling rotation of
    the same duplicate table or ladder set, queued or running).  One query, whatever the
    number of ids."""
    ids = set(match_ids)
    if not ids:
        return set()
    return set(s.scalars(_in_play_statement(), {"ids": sorted(ids)}))


@functools.cache
def _in_play_statement() -> Select[int]:
    """:func:`deals_in_play`'s statement, built once (the ids bound): building its six
    aliases took longer than running it (3-4 ms of every match page and match API answer)."""
    return select(Match.id).where(Match.id.in_(bindparam("ids", expanding=True)),
                                  in_play_sql(Match.id))


def deals_secret(s: Session, match: Match) -> bool:
    """Whether ``match``'s hands (and seed) must not be shown yet: it is still playing, or
    another match still plays its deals."""
    return match.state not in OVER or bool(deals_in_play(s, [match.id]))
