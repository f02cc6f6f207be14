"""One rating family's idle bots during a ladder round, arranged so that a table costs
O(seats · log n) instead of a sort of every idle bot.

Why
---
A table's opponents are the idle bots with the lowest
``|rating - anchor's rating| - LADDER_WAIT_WEIGHT * seconds waited`` (:mod:`arena.play.ladder`).
Sorting every idle bot by that for each table cost ~2.5 s a table at 100,000 idle bots
(``bench/ledger_throughput.py``), so a round could make a handful of the ~600 tables the
100,000-bot plan needs every ``LADDER_INTERVAL_S`` (docs/operations.md, "At 100,000 bots").

How
---
The cost splits at the anchor's rating ``a``: a bot rated ``r >= a`` costs
``(r - w·t) - a``, one rated below costs ``a - (r + w·t)``.  So with the bots sorted by
rating once a round, the cheapest bot at or above the anchor is the minimum of ``r - w·t``
over a suffix of that order and the cheapest below it the maximum of ``r + w·t`` over the
prefix: two segment trees answer each in O(log n), and a bot taken out of them (seated, or
skipped for a moment because its endpoint is at the table already) is one leaf update.
The anchor is the next bot of the longest-waiting-first order, sorted once too.

The choice is the one a full sort makes (same costs, ties broken by a random number per
bot); the random numbers are drawn once a round, one per bot, from the round's random
generator, where the full sort drew them afresh for every table.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    """An idle bot the ladder may seat: its rating in the table's family and how long it
    has waited."""

    bot_id: int
    rating: float
    waited_s: float
    endpoint: str = ""
    """Where the bot is called (:func:`arena.core.endpoints.endpoint_of`); a table never holds one
    endpoint twice.  Empty: unique to this candidate."""


Key = tuple[float, float, int]
"""A leaf: (the side's key, the bot's tie-breaking random number, the bot's index)."""
GONE: Key = (math.inf, math.inf, -1)


class MinTree:
    """A segment tree of ``Key`` leaves: the minimum over a range, a leaf changed, both in
    O(log n)."""

    def __init__(self, leaves: Sequence[Key]) -> None:
        size = 1
        while size < max(1, len(leaves)):
            size *= 2
        self.size = size
        tree = [GONE] * (2 * size)
        tree[size:size + len(leaves)] = leaves
        for i in range(size - 1, 0, -1):
            tree[i] = min(tree[2 * i], tree[2 * i + 1])
        self.tree = tree

    def set(self, pos: int, key: Key) -> None:
        tree = self.tree
        i = pos + self.size
        tree[i] = key
        i //= 2
        while i:
            tree[i] = min(tree[2 * i], tree[2 * i + 1])
            i //= 2

    def min(self, lo: int, hi: int) -> Key:
        """The least leaf in positions ``lo`` to ``hi - 1`` (``GONE`` if none is left)."""
        tree = self.tree
        best = GONE
        lo += self.size
        hi += self.size
        while lo < hi:
            if lo & 1:
                best = min(best, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                best = min(best, tree[hi])
            lo //= 2
            hi //= 2
        return best


def endpoint_key(c: Candidate) -> str:
    """What a table may hold once: the endpoint, or the bot itself when it has none."""
    return c.endpoint or f"#{c.bot_id}"


class IdlePool:
    """A family's idle bots for one round: :meth:`pick` makes a table and takes its bots
    out; :meth:`discard` takes out bots seated at another family's table."""

    def __init__(self, candidates: Iterable[Candidate], wait_weight: float,
                 rng: random.Random) -> None:
        cands = list(candidates)
        self.cands = cands
        self.wait_weight = wait_weight
        n = len(cands)
        jitter = [rng.random() for _ in range(n)]
        self.jitter = jitter
        self.by_wait = sorted(range(n), key=lambda i: (-cands[i].waited_s, cands[i].bot_id))
        self.next_anchor = 0
        order = sorted(range(n), key=lambda i: (cands[i].rating, cands[i].bot_id))
        self.ratings = [cands[i].rating for i in order]
        self.pos = [0] * n
        for p, i in enumerate(order):
            self.pos[i] = p
        self.up_keys: list[Key] = [
            (cands[i].rating - wait_weight * cands[i].waited_s, jitter[i], i) for i in order]
        self.down_keys: list[Key] = [
            (-(cands[i].rating + wait_weight * cands[i].waited_s), jitter[i], i) for i in order]
        self.up = MinTree(self.up_keys)
        """Bots by ``rating - w·waited``: the cheapest at or above an anchor."""
        self.down = MinTree(self.down_keys)
        """Bots by ``-(rating + w·waited)``: the cheapest below an anchor."""
        self.taken = [False] * n
        self.left = n
        self.index = {c.bot_id: i for i, c in enumerate(cands)}

    def __len__(self) -> int:
        return self.left

    def _hide(self, i: int) -> None:
        p = self.pos[i]
        self.up.set(p, GONE)
        self.down.set(p, GONE)

    def _show(self, i: int) -> None:
        p = self.pos[i]
        self.up.set(p, self.up_keys[p])
        self.down.set(p, self.down_keys[p])

    def _take(self, i: int) -> None:
        self.taken[i] = True
        self.left -= 1

    def discard(self, bot_ids: Iterable[int]) -> None:
        """Take these bots out (seated elsewhere this round); unknown ids are ignored."""
        for b in bot_ids:
            i = self.index.get(b)
            if i is not None and not self.taken[i]:
                self._hide(i)
                self._take(i)

    def _cost(self, key: Key, anchor_rating: float) -> tuple[float, float]:
        if key[2] < 0:
            return (math.inf, math.inf)
        c = self.cands[key[2]]
        return (abs(c.rating - anchor_rating) - self.wait_weight * c.waited_s, key[1])

    def pick(self, seats: int) -> list[Candidate] | None:
        """The longest-waiting bot left and its ``seats - 1`` cheapest opponents, never two
        with one endpoint, taken out of the pool; None (the pool unchanged) when there are
        not enough distinct ones."""
        if self.left < seats:
            return None
        while self.taken[self.by_wait[self.next_anchor]]:
            self.next_anchor += 1
        a = self.by_wait[self.next_anchor]
        anchor = self.cands[a]
        self._hide(a)
        split = bisect_left(self.ratings, anchor.rating)
        n = len(self.cands)
        table, picked, skipped = [anchor], [a], []
        seen = {endpoint_key(anchor)}
        while len(table) < seats:
            up, down = self.up.min(split, n), self.down.min(0, split)
            best = up if self._cost(up, anchor.rating) <= self._cost(down, anchor.rating) else down
            i = best[2]
            if i < 0:
                break
            self._hide(i)
            c = self.cands[i]
            if endpoint_key(c) in seen:
                skipped.append(i)
                continue
            table.append(c)
            picked.append(i)
            seen.add(endpoint_key(c))
        for i in skipped:
            self._show(i)
        if len(table) < seats:
            for i in picked:
                self._show(i)
            return None
        for i in picked:
            self._take(i)
        return table
