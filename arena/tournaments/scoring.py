"""Results of tables and standings of a tournament, with every tie-break (pure functions).

A table result
--------------
A table is one match, or with duplicate play one match per rotation of the seats (same deals,
every player holding every hand once).  Each player's *table score* is

* without duplicate play: its total score in the match;
* with duplicate play: its score compared with the other players who held the same cards,
  ``sum over (deal, hand) of (its score - mean score of the others with that hand)``.
  Because every player holds every hand exactly once, this equals
  ``R - (T - R) / (n - 1)`` (``R``: its total over the rotations, ``T``: everyone's total),
  so it can be computed from the match totals.  The luck of the cards cancels: a hand
  that scores well for everyone adds to everyone's ``R`` alike.

Places at the table, best first, by: not having forfeited every match of the table, table
score, deals won, fewer strikes, then the tournament seed (the better seed ahead).  Without
duplicate play a single match's own ranks are kept (the referee's order: forfeits last,
score, deals won) and only shared ranks are split by strikes and seed.  Table *points*:
one per opponent finished ahead of (``seats - 1`` for first place, 0 for last).

Standings (round robin and Swiss)
---------------------------------
Players are ordered by, in turn:

1. **points** (a bye is worth the average, ``(seats - 1) / 2``);
2. **score**: the sum of table scores (duplicate scores with duplicate play);
3. **Buchholz**: the sum of the points of every opponent met, once per meeting (who you
   beat matters more when they did well elsewhere);
4. **deals won**;
5. **fewer strikes**;
6. the **seed** (the better-rated bot when the tournament started), then the bot id.

Everything is computed from stored results, so the same results always give the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SeatResult:
    """How one bot did in one match (one rotation of a table)."""

    bot: int
    seat: int
    rank: int
    score: int
    wins: int
    strikes: int
    forfeited: bool


@dataclass
class TableLine:
    """One bot's line in a table result."""

    bot: int
    place: int
    points: float
    score: float
    """Table score (duplicate score with duplicate play)."""
    raw: int
    """Sum of its match totals at this table."""
    wins: int
    strikes: int
    forfeits: int
    matches: int

    def to_json(self) -> dict[str, Any]:
        return {"bot": self.bot, "place": self.place, "points": self.points,
                "score": round(self.score, 3), "raw": self.raw, "wins": self.wins,
                "strikes": self.strikes, "forfeits": self.forfeits, "matches": self.matches}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TableLine:
        return cls(int(d["bot"]), int(d["place"]), float(d["points"]), float(d["score"]),
                   int(d["raw"]), int(d["wins"]), int(d["strikes"]), int(d["forfeits"]),
                   int(d["matches"]))


def table_result(
    bots: Sequence[int],
    matches: Sequence[Sequence[SeatResult]],
    *,
    duplicate: bool,
    seed_of: Mapping[int, int],
) -> list[TableLine]:
    """The result of a table (lines in place order).  ``matches`` holds the seat results of
    every finished match of the table; a failed match is simply absent (a table whose every
    match failed puts everyone level, ordered by seed)."""
    n = len(bots)
    raw = dict.fromkeys(bots, 0)
    wins = dict.fromkeys(bots, 0)
    strikes = dict.fromkeys(bots, 0)
    forfeits = dict.fromkeys(bots, 0)
    played = dict.fromkeys(bots, 0)
    for m in matches:
        for r in m:
            raw[r.bot] += r.score
            wins[r.bot] += r.wins
            strikes[r.bot] += r.strikes
            forfeits[r.bot] += int(r.forfeited)
            played[r.bot] += 1
    if duplicate:
        total = sum(raw.values())
        score = {b: raw[b] - (total - raw[b]) / (n - 1) for b in bots}
    else:
        score = {b: float(raw[b]) for b in bots}
    all_forfeited = {b: played[b] > 0 and forfeits[b] == played[b] for b in bots}
    if not duplicate and len(matches) == 1:
        rank = {r.bot: r.rank for r in matches[0]}

        def key(b: int) -> tuple[Any, ...]:
            return (rank[b], strikes[b], seed_of.get(b, 10**9), b)

        def level(b: int) -> tuple[Any, ...]:
            return (rank[b], strikes[b])
    else:
        def key(b: int) -> tuple[Any, ...]:
            return (all_forfeited[b], -score[b], -wins[b], strikes[b], seed_of.get(b, 10**9), b)

        def level(b: int) -> tuple[Any, ...]:
            return (all_forfeited[b], -score[b], -wins[b], strikes[b])

    order = sorted(bots, key=key)
    levels = {b: level(b) for b in bots}  # once per bot, not once per pair compared
    lines = []
    for i, b in enumerate(order):
        mine = levels[b]
        ahead_level = sum(1 for o in bots if o != b and levels[o] == mine)
        beaten = sum(1 for o in bots if o != b and levels[o] > mine)
        points = beaten + 0.5 * ahead_level
        lines.append(TableLine(b, i + 1, points, score[b], raw[b], wins[b], strikes[b],
                               forfeits[b], played[b]))
    return lines


@dataclass
class Standing:
    bot: int
    seed: int
    points: float = 0.0
    score: float = 0.0
    buchholz: float = 0.0
    wins: int = 0
    strikes: int = 0
    tables: int = 0
    byes: int = 0
    firsts: int = 0
    opponents: list[int] = field(default_factory=list)
    rank: int = 0
    round_reached: int | None = None
    """Knockout only: the last round the bot was drawn in (a table or a bye); 0 before the
    first round is drawn.  None in the other formats."""
    place_in_round: int | None = None
    """Knockout only: the bot's place at its table in ``round_reached`` once that table's
    result is in; None while the table plays or after a bye (such rows sort first within
    their round: they are still in)."""

    def sort_key(self) -> tuple[Any, ...]:
        return (-self.points, -self.score, -self.buchholz, -self.wins, self.strikes, self.seed,
                self.bot)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank, "bot": self.bot, "seed": self.seed,
            "points": self.points, "score": round(self.score, 3),
            "buchholz": self.buchholz, "wins": self.wins, "strikes": self.strikes,
            "tables": self.tables, "byes": self.byes, "firsts": self.firsts}
        if self.round_reached is not None:  # a knockout: the keys that decide its order
            out["round_reached"] = self.round_reached
            out["place_in_round"] = self.place_in_round
        return out


TIE_BREAKS = ["points", "score", "buchholz", "wins", "fewer strikes", "seed"]
"""The order of the standings keys (for documentation and the JSON)."""


def standings(
    seeds: Mapping[int, int],
    tables: Sequence[Sequence[TableLine]],
    byes: Sequence[int],
    seats: int,
) -> list[Standing]:
    """Standings from every finished table and every bye so far (see the module docstring).
    ``seeds`` maps every entrant to its seed (1 best)."""
    rows = {b: Standing(b, s) for b, s in seeds.items()}
    bye_points = (seats - 1) / 2
    for b in byes:
        rows[b].points += bye_points
        rows[b].byes += 1
    for t in tables:
        ids = [x.bot for x in t]
        for x in t:
            r = rows[x.bot]
            r.points += x.points
            r.score += x.score
            r.wins += x.wins
            r.strikes += x.strikes
            r.tables += 1
            r.firsts += int(x.place == 1)
            r.opponents += [o for o in ids if o != x.bot]
    for r in rows.values():
        # A list, not a generator (256 bots: 5,000 generator steps); summed in the same order.
        r.buchholz = sum([rows[o].points for o in r.opponents if o in rows])
    out = sorted(rows.values(), key=Standing.sort_key)
    for i, r in enumerate(out, 1):
        r.rank = i
    return out
