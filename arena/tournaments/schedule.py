"""Who plays whom, and in which seat: the pure scheduling of every tournament format.

Nothing here touches the database, the queue or a clock; every function takes players (any
hashable ids, usually bot ids) and returns tables.  A *table* is a tuple of players in seat
order; a :class:`Round` is the tables of one round plus the players sitting it out (byes).
Randomness comes only from a ``random.Random(seed)`` given by the caller, so a schedule is
reproduced exactly from the tournament's seed.

Round robin (:func:`round_robin`)
    Rounds of ``len(players) // seats`` tables; the ``len(players) % seats`` players left over
    sit out (byes go to whoever has had fewest).  Each round's tables minimise the repeat
    meetings so far (cost ``4 ** meetings`` per pair: an unmet pair is always preferred to a
    pair that met once, and so on), found by local search (swap two players of different
    tables while it helps, from several random starts).  Rounds are added until every pair
    has met ``cycles`` times.  Seats are then balanced exactly with :func:`balance_seats`.

Seats (:func:`balance_seats`)
    Every player sits in every seat equally often, to within one: the seat counts of a
    player with ``g`` games are ``g // seats`` or ``g // seats + 1``.  This is an equitable
    edge colouring of the bipartite graph players x tables (de Werra, 1971): each player's
    games are cut into blocks of ``seats`` consecutive games, the graph blocks x tables has
    degree at most ``seats``, and a bipartite graph of degree ``d`` has a proper ``d``-edge
    colouring (Konig), found with alternating-path recolouring.  Colour = seat.  A block of
    ``seats`` games holds each seat once, so the balance also holds over time.

Swiss (:func:`swiss_round`)
    Tables of neighbours in the standings: start from consecutive groups, then swap players
    between tables while it lowers (repeat meetings x a weight larger than any standings
    distance, then the squared standings distances within tables).  So a repeat meeting
    happens only when no arrangement avoids it.  Byes go to the lowest-ranked players among
    those with fewest byes.  Seats: :func:`assign_seats` (least-used seats first).

    The search (:func:`_swiss_search`) prices a swap by its change in cost (``O(seats)``
    pair terms, not two whole tables), and tries swaps between tables close in the
    standings (``SWISS_WINDOW`` tables apart) plus, from a table holding a repeat meeting,
    swaps with every other table: far apart tables can only lower the cost by removing a
    repeat, since a swap between them adds more standings distance than it can save
    otherwise.  A 256-entrant round takes milliseconds (it took seconds with every pair of
    tables tried from eight random starts).  Small fields (at most ``SWISS_RESTART_TABLES``
    tables) also search from a few shuffled starts, where that is cheap and sometimes
    finds fewer repeats.

Knockout (:func:`knockout_sizes`, :func:`knockout_round`, :func:`advancers`)
    Tables of ``seats`` players, the top ``k`` of each table advance.  The field shrinks by
    ``k / seats`` a round down to one final table: the round sizes below the first are the
    ladder ``seats, seats * seats / k, ...`` (rounded up to a multiple of ``seats``), e.g. 4,
    8, 16, 32 for four seats and ``k = 2``, and 2, 4, 8 for a heads-up bracket.  When the
    entry is not on the ladder, the first round gives byes to the top seeds so that the
    second round is; if the arithmetic cannot come out exactly (an odd number of entrants with
    ``k = 2``), the best next-placed finishers fill the remaining places (like the best
    third-placed teams of a football group stage) or the worst ``k``-th placed drop out.
    Tables are seeded by snake order each round (the top seeds are spread over the tables and
    meet as late as possible), re-seeded every round by the original seeds.

Duplicate play (:func:`rotations`)
    A table's deal is replayed ``seats`` times with the seats rotated, so that every player
    holds every hand from every seat.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

P = TypeVar("P", bound=Hashable)

Pair = frozenset

MAX_RR_ROUNDS = 400
"""Safety cap on the number of round-robin rounds (a schedule never needs this many)."""


@dataclass
class Round:
    """One round: tables (players in seat order) and the players who sit it out."""

    tables: list[tuple[int, ...]]
    byes: list[int] = field(default_factory=list)

    def players(self) -> list[int]:
        return [p for t in self.tables for p in t]


def pair_counts(rounds: Sequence[Round]) -> Counter[frozenset[int]]:
    """How many times each pair of players shared a table."""
    out: Counter[frozenset[int]] = Counter()
    for r in rounds:
        for t in r.tables:
            for a, b in itertools.combinations(t, 2):
                out[frozenset((a, b))] += 1
    return out


def seat_counts(rounds: Sequence[Round], seats: int) -> dict[int, list[int]]:
    """Per player, how many times it sat in each seat."""
    out: dict[int, list[int]] = {}
    for r in rounds:
        for t in r.tables:
            for s, p in enumerate(t):
                out.setdefault(p, [0] * seats)[s] += 1
    return out


# --- partitions into tables -------------------------------------------------------------------


def _table_cost(table: Sequence[int], weight: Mapping[frozenset[int], float]) -> float:
    return sum(weight.get(frozenset(pair), 0.0) for pair in itertools.combinations(table, 2))


# --- round robin ------------------------------------------------------------------------------


def round_robin(
    players: Sequence[int],
    seats: int,
    *,
    cycles: int = 1,
    rounds: int | None = None,
    seed: int = 0,
    attempts: int = 6,
    restarts: int = 8,
) -> list[Round]:
    """A round-robin schedule for tables of ``seats``: rounds until every pair has met
    ``cycles`` times (or exactly ``rounds`` rounds), meetings as even as local search gets
    them, byes balanced to within one, seats balanced exactly (see the module docstring).

    ``attempts`` whole schedules are built from different random starts; the one with the
    fewest rounds, then the smallest spread of meetings, is kept."""
    ps = list(players)
    n = len(ps)
    if seats < 2:
        raise ValueError("a table needs at least two seats")
    if n < seats:
        raise ValueError(f"{n} players cannot fill a table of {seats}")
    if len(set(ps)) != n:
        raise ValueError("players must be distinct")
    rng = random.Random(seed)
    best: list[Round] | None = None
    best_key: tuple[int, int, int] | None = None
    for _ in range(max(1, attempts)):
        sched = _round_robin_once(ps, seats, cycles, rounds, random.Random(rng.getrandbits(64)),
                                  restarts)
        met = pair_counts(sched)
        values = [met[frozenset(p)] for p in itertools.combinations(ps, 2)]
        key = (len(sched), max(values) - min(values), sum(v * v for v in values))
        if best_key is None or key < best_key:
            best, best_key = sched, key
    assert best is not None
    return balance_seats(best, seats)


def _round_robin_once(ps: list[int], seats: int, cycles: int, rounds: int | None,
                      rng: random.Random, restarts: int) -> list[Round]:
    n = len(ps)
    met: Counter[frozenset[int]] = Counter()
    byes: Counter[int] = Counter()
    out: list[Round] = []
    all_pairs = [frozenset(p) for p in itertools.combinations(ps, 2)]
    n_byes = n % seats
    while True:
        if rounds is not None and len(out) >= rounds:
            break
        if rounds is None and all(met[p] >= cycles for p in all_pairs):
            break
        if len(out) >= MAX_RR_ROUNDS:  # pragma: no cover - never reached in practice
            raise RuntimeError("round robin did not converge")
        # A pair that still has to meet is worth more than any spread of repeats (greedy
        # cover: fewest rounds); among arrangements covering as many, repeats cost 4 ** m.
        cost = {pair: float(4 ** met[pair]) for pair in all_pairs}
        cover = sum(cost.values()) + 1.0
        for pair in all_pairs:
            if met[pair] < cycles:
                cost[pair] -= cover
        # Sitting out costs more than any table arrangement can save, times the byes already
        # had: so byes stay balanced, and among equals the players whose pairs have met most
        # sit out (their absence frees the table for pairs that still have to meet).
        bye_cost = (sum(abs(c) for c in cost.values()) + 1.0) * 2
        best: list[list[int]] | None = None
        best_cost = math.inf
        for _ in range(restarts):
            order = ps[:]
            rng.shuffle(order)
            groups = [order[i:i + seats] for i in range(0, n - n_byes, seats)]
            if n_byes:
                groups.append(order[n - n_byes:])
            c = _improve_with_byes(groups, cost, {p: bye_cost * byes[p] for p in ps},
                                   has_byes=bool(n_byes))
            if c < best_cost - 1e-9:
                best, best_cost = [g[:] for g in groups], c
        assert best is not None
        sitting = best.pop() if n_byes else []
        rnd = Round([tuple(sorted(t)) for t in best], sorted(sitting))
        for t in rnd.tables:
            for a, b in itertools.combinations(t, 2):
                met[frozenset((a, b))] += 1
        for p in sitting:
            byes[p] += 1
        out.append(rnd)
    return out


def _improve_with_byes(groups: list[list[int]], pair_cost: Mapping[frozenset[int], float],
                       bye_cost: Mapping[int, float], *, has_byes: bool) -> float:
    """Local search over tables plus (last, when ``has_byes``) the group sitting out."""
    last = len(groups) - 1

    def cost(i: int) -> float:
        if has_byes and i == last:
            return sum(bye_cost[p] for p in groups[i])
        return _table_cost(groups[i], pair_cost)

    costs = [cost(i) for i in range(len(groups))]
    improved = True
    while improved:
        improved = False
        for i, j in itertools.combinations(range(len(groups)), 2):
            for a in range(len(groups[i])):
                for b in range(len(groups[j])):
                    gi, gj = groups[i], groups[j]
                    gi[a], gj[b] = gj[b], gi[a]
                    ci, cj = cost(i), cost(j)
                    if ci + cj < costs[i] + costs[j] - 1e-9:
                        costs[i], costs[j] = ci, cj
                        improved = True
                    else:
                        gi[a], gj[b] = gj[b], gi[a]
    return sum(costs)


# --- seats ------------------------------------------------------------------------------------


def balance_seats(rounds: Sequence[Round], seats: int) -> list[Round]:
    """The same rounds with each table's players put in seats so that every player sits in
    every seat ``g // seats`` or ``g // seats + 1`` times (``g``: its games); an equitable
    edge colouring of players x tables (see the module docstring)."""
    # Left vertices: (player, block of `seats` consecutive games); right: (round, table).
    games: Counter[int] = Counter()
    edges: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for ri, r in enumerate(rounds):
        for ti, t in enumerate(r.tables):
            if len(t) != seats:
                raise ValueError(f"table {t} does not have {seats} players")
            for p in t:
                edges.append(((p, games[p] // seats), (ri, ti)))
                games[p] += 1
    # colour_at[vertex][colour] = edge index
    colour_at: dict[tuple[str, tuple[int, int]], dict[int, int]] = {}
    colour: list[int] = [-1] * len(edges)

    def at(v: tuple[str, tuple[int, int]]) -> dict[int, int]:
        return colour_at.setdefault(v, {})

    def free(v: tuple[str, tuple[int, int]]) -> int:
        used = at(v)
        return next(c for c in range(seats) if c not in used)

    def other(e: int, v: tuple[str, tuple[int, int]]) -> tuple[str, tuple[int, int]]:
        left, right = ("L", edges[e][0]), ("R", edges[e][1])
        return right if v == left else left

    for e, (lv, rv) in enumerate(edges):
        u, v = ("L", lv), ("R", rv)
        a, b = free(u), free(v)
        if a not in at(v):
            c = a
        else:
            # Flip the a/b alternating path that starts at v with its a-edge; in a bipartite
            # graph it never reaches u, so afterwards a is free at both ends.
            path: list[int] = []
            x, want = v, a
            while want in at(x):
                f = at(x)[want]
                path.append(f)
                x = other(f, x)
                want = b if want == a else a
            for f in path:
                for end in (("L", edges[f][0]), ("R", edges[f][1])):
                    if at(end).get(colour[f]) == f:
                        del at(end)[colour[f]]
            for f in path:
                colour[f] = b if colour[f] == a else a
                for end in (("L", edges[f][0]), ("R", edges[f][1])):
                    at(end)[colour[f]] = f
            c = a
        colour[e] = c
        at(u)[c] = e
        at(v)[c] = e
    out = [Round([() for _ in r.tables], list(r.byes)) for r in rounds]
    seated: dict[tuple[int, int], list[int | None]] = {}
    for e, ((p, _block), (ri, ti)) in enumerate(edges):
        seated.setdefault((ri, ti), [None] * seats)[colour[e]] = p
    for (ri, ti), row in seated.items():
        assert all(p is not None for p in row)
        out[ri].tables[ti] = tuple(p for p in row if p is not None)
    return out


def assign_seats(table: Sequence[int], counts: Mapping[int, Sequence[int]]) -> tuple[int, ...]:
    """Seat a table given every player's seat counts so far: the arrangement with the
    smallest sum of squared counts afterwards (least-used seats first); ties keep the first
    arrangement in lexicographic order of the given table."""
    seats = len(table)
    best: tuple[int, ...] = tuple(table)
    best_cost = math.inf
    for perm in itertools.permutations(table):
        cost = 0
        for s, p in enumerate(perm):
            row = counts.get(p)
            k = (row[s] if row is not None else 0) + 1
            cost += k * k
        if cost < best_cost:
            best, best_cost = perm, cost
    assert len(best) == seats
    return best


# --- Swiss ------------------------------------------------------------------------------------

SWISS_WINDOW = 3
"""Swiss search: swaps are tried between tables at most this many tables apart in the
standings (and, from a table with a repeat meeting, with every table)."""
SWISS_RESTART_TABLES = 8
"""Swiss search: fields of at most this many tables also search from shuffled starts."""


def _swiss_search(tables: list[list[int]], pos: Mapping[int, int],
                  met: Mapping[int, Mapping[int, int]], repeat_w: float,
                  window: int) -> float:
    """Local search over ``tables`` (in place) for the Swiss cost (see the module
    docstring); returns the final cost."""
    empty: Mapping[int, int] = {}

    def c(a: int, b: int) -> float:
        d = pos[a] - pos[b]
        return repeat_w * met.get(a, empty).get(b, 0) + float(d * d)

    def table_cost(t: Sequence[int]) -> float:
        return sum(c(a, b) for a, b in itertools.combinations(t, 2))

    def delta(ti: Sequence[int], tj: Sequence[int], a: int, b: int) -> float:
        d = 0.0
        for u in ti:
            if u != a:
                d += c(b, u) - c(a, u)
        for v in tj:
            if v != b:
                d += c(a, v) - c(b, v)
        return d

    n_tables = len(tables)
    improved = True
    while improved:
        improved = False
        # Near swaps (first improvement): the standings-distance part of the cost.
        for i in range(n_tables):
            for j in range(i + 1, min(n_tables, i + 1 + window)):
                ti, tj = tables[i], tables[j]
                for x in range(len(ti)):
                    for y in range(len(tj)):
                        if delta(ti, tj, ti[x], tj[y]) < -1e-9:
                            ti[x], tj[y] = tj[y], ti[x]
                            improved = True
        # A player meeting someone again: the best swap with any player of any table.
        for i in range(n_tables):
            ti = tables[i]
            for x in range(len(ti)):
                a = ti[x]
                seen = met.get(a, empty)
                if not any(seen.get(u, 0) for u in ti if u != a):
                    continue
                best, at = -1e-9, None
                for j in range(n_tables):
                    if j == i:
                        continue
                    tj = tables[j]
                    for y in range(len(tj)):
                        d = delta(ti, tj, a, tj[y])
                        if d < best:
                            best, at = d, (j, y)
                if at is not None:
                    j, y = at
                    ti[x], tables[j][y] = tables[j][y], a
                    improved = True
    return sum(table_cost(t) for t in tables)


def swiss_round(
    standings: Sequence[int],
    seats: int,
    *,
    met: Mapping[frozenset[int], int] | None = None,
    byes: Mapping[int, int] | None = None,
    seat_history: Mapping[int, Sequence[int]] | None = None,
    restarts: int = 8,
) -> Round:
    """The next Swiss round: ``standings`` lists the players best first."""
    ps = list(standings)
    n = len(ps)
    if n < seats:
        raise ValueError(f"{n} players cannot fill a table of {seats}")
    met = met or {}
    byes = byes or {}
    n_byes = n % seats
    # Byes: the lowest-ranked players among those with fewest byes.
    pos = {p: i for i, p in enumerate(ps)}
    sitting = sorted(ps, key=lambda p: (byes.get(p, 0), -pos[p]))[:n_byes]
    playing = [p for p in ps if p not in sitting]
    # Weight of a repeat meeting: more than the largest possible sum of standings distances.
    repeat_w = float(n ** 2 * seats ** 2 * len(playing) + 1)
    in_play = set(playing)
    meetings: dict[int, dict[int, int]] = {}
    for key, times in met.items():
        if times and key <= in_play and len(key) == 2:
            a, b = tuple(key)
            meetings.setdefault(a, {})[b] = times
            meetings.setdefault(b, {})[a] = times
    # Local search from the consecutive groups, then (small fields) from a few shuffled
    # starts (a fixed seed: the same standings always give the same round); the cheapest
    # result wins.
    tables = [playing[i:i + seats] for i in range(0, len(playing), seats)]
    n_tables = len(tables)
    best_cost = _swiss_search(tables, pos, meetings, repeat_w, SWISS_WINDOW)
    rng = random.Random(n)
    for _ in range(restarts if n_tables <= SWISS_RESTART_TABLES else 0):
        order = playing[:]
        rng.shuffle(order)
        other = [order[i:i + seats] for i in range(0, len(order), seats)]
        window = n_tables
        c = _swiss_search(other, pos, meetings, repeat_w, window)
        if c < best_cost - 1e-9:
            tables, best_cost = other, c
    tables.sort(key=lambda t: min(pos[p] for p in t))
    history = seat_history or {}
    counts = {p: list(history.get(p, [0] * seats)) for p in playing}
    seated = []
    for t in tables:
        ordered = assign_seats(sorted(t, key=lambda p: pos[p]), counts)
        for s, p in enumerate(ordered):
            counts[p][s] += 1
        seated.append(ordered)
    return Round(seated, sorted(sitting, key=lambda p: pos[p]))


def swiss_rounds_default(n: int, seats: int) -> int:
    """Default number of Swiss rounds: enough for a clear winner, ``ceil(log_{seats} n) + 1``
    (at least 2), but never more than a full round robin would need."""
    if n <= seats:
        return 1
    rr = math.ceil((n - 1) / (seats - 1))
    return max(2, min(rr, math.ceil(math.log(n, seats) - 1e-9) + 1))


# --- knockout ---------------------------------------------------------------------------------


def knockout_ladder(seats: int, k: int, upto: int) -> list[int]:
    """Round sizes of a perfect bracket, smallest first: ``seats``, then each size times
    ``seats / k`` rounded up to a multiple of ``seats``, up to the first size >= ``upto``."""
    if not 1 <= k < seats:
        raise ValueError(f"between 1 and {seats - 1} players per table can advance")
    sizes = [seats]
    while sizes[-1] < upto:
        grown = math.ceil(sizes[-1] * seats / k / seats) * seats
        sizes.append(max(grown, sizes[-1] + seats))
    return sizes


def knockout_sizes(n: int, seats: int, k: int) -> list[int]:
    """Number of players in each round, first round first, ending with ``seats`` (the final
    table).  The first round has all ``n`` entrants; every later size is on the ladder."""
    if n < seats:
        raise ValueError(f"{n} players cannot fill a table of {seats}")
    ladder = knockout_ladder(seats, k, n)
    return [n, *sorted((s for s in ladder if s < n), reverse=True)]


def knockout_tables(n: int, target: int, seats: int, k: int) -> int:
    """How many tables a round of ``n`` players plays so that about ``target`` advance (the
    rest of the players have byes)."""
    if n <= seats:
        return 1
    exact = (n - target) / (seats - k)
    t = math.floor(exact + 0.5)
    return max(1, min(n // seats, t))


def snake(players: Sequence[int], tables: int) -> list[list[int]]:
    """Deal players (best seed first) to tables in snake order: 1..t, t..1, 1..t, ..."""
    out: list[list[int]] = [[] for _ in range(tables)]
    for i, p in enumerate(players):
        row, col = divmod(i, tables)
        out[col if row % 2 == 0 else tables - 1 - col].append(p)
    return out


def knockout_round(
    players: Sequence[int],
    seats: int,
    k: int,
    target: int,
    *,
    seat_history: Mapping[int, Sequence[int]] | None = None,
) -> Round:
    """One knockout round: ``players`` best seed first, ``target`` of them to advance.  The
    top seeds get the byes; the rest play snake-seeded tables."""
    n = len(players)
    if n == seats:
        t, b = 1, 0
    else:
        t = knockout_tables(n, target, seats, k)
        b = n - seats * t
    byes = list(players[:b])
    history = seat_history or {}
    counts = {p: list(history.get(p, [0] * seats)) for p in players}
    tables = []
    for group in snake(players[b:], t):
        ordered = assign_seats(group, counts)
        for s, p in enumerate(ordered):
            counts[p][s] += 1
        tables.append(ordered)
    return Round(tables, byes)


@dataclass(frozen=True)
class Finish:
    """A player's finish at a table: ``place`` (1 best) and a key to compare finishes of the
    same place across tables (higher is better), e.g. ``(score per deal, deals won, -seed)``."""

    player: int
    place: int
    key: tuple[float, ...]


def advancers(
    tables: Sequence[Sequence[Finish]],
    byes: Sequence[int],
    target: int,
    k: int,
) -> list[int]:
    """Who goes through: the byes, then the top ``k`` of each table; if that is not exactly
    ``target`` players, the best ``(k+1)``-th placed fill up (or the worst ``k``-th placed
    drop out).  In general: byes first, then finishes by place, and within a place by key."""
    chosen = list(byes)
    pool = sorted((f for t in tables for f in t), key=lambda f: (f.place, tuple(-x for x in f.key)))
    need = target - len(chosen)
    if need < 0:
        raise ValueError("more byes than places in the next round")
    chosen += [f.player for f in pool[:need]]
    return chosen


# --- duplicate --------------------------------------------------------------------------------


def rotations(table: Sequence[int], duplicate: bool) -> list[tuple[int, ...]]:
    """The seatings a table plays: just the table, or with duplicate play every rotation
    (rotation ``r`` puts ``table[i]`` in seat ``(i - r) mod n``, so each player holds each
    seat's hand once)."""
    t = tuple(table)
    if not duplicate:
        return [t]
    n = len(t)
    return [tuple(t[(s + r) % n] for s in range(n)) for r in range(n)]
