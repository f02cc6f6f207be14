"""The ladder round's pool of idle bots (:mod:`arena.play.ladder_pool`): the tables a full sort
would make, each without looking at every idle bot."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from arena.play.ladder import Candidate
from arena.play.ladder_pool import IdlePool


def sorted_table(cands: Sequence[Candidate], seats: int, wait_weight: float,
                 jitter: dict[int, float]) -> list[Candidate] | None:
    """The ladder's rule by brute force (what ``pick_table`` did before the pool): sort every
    idle bot by its cost for each table."""
    if len(cands) < seats:
        return None
    pool = sorted(cands, key=lambda c: (-c.waited_s, c.bot_id))
    anchor, rest = pool[0], pool[1:]
    table, seen = [anchor], {anchor.endpoint or f"#{anchor.bot_id}"}
    for c in sorted(rest, key=lambda c: (abs(c.rating - anchor.rating)
                                          - wait_weight * c.waited_s, jitter[c.bot_id])):
        key = c.endpoint or f"#{c.bot_id}"
        if key not in seen:
            table.append(c)
            seen.add(key)
            if len(table) == seats:
                return table
    return None


def random_candidates(rng: random.Random, n: int) -> list[Candidate]:
    """Whole-number ratings and waits (exact arithmetic, so ties are real ties), few
    distinct values (many ties), some endpoints shared."""
    return [Candidate(b, float(rng.choice([1500, 1500, 1480, 1520, rng.randint(1000, 2000)])),
                      float(rng.randint(0, 30)),
                      rng.choice(["", "", "", f"http://h{rng.randint(0, 5)}/"]))
            for b in rng.sample(range(1, 10 * n), n)]


def test_a_round_makes_the_tables_a_full_sort_makes() -> None:
    for trial in range(60):
        rng = random.Random(trial)
        cands = random_candidates(rng, rng.randint(0, 60))
        weight = rng.choice([0.0, 2.0, 7.5])
        seats = rng.choice([2, 3, 4])
        pool = IdlePool(cands, weight, random.Random(trial))
        jitter = dict(zip((c.bot_id for c in cands), pool.jitter, strict=True))
        left = list(cands)
        while True:
            if left and rng.random() < 0.2:  # seated at another family's table
                gone = {c.bot_id for c in rng.sample(left, min(3, len(left)))}
                pool.discard(gone)
                left = [c for c in left if c.bot_id not in gone]
            want = sorted_table(left, seats, weight, jitter)
            got = pool.pick(seats)
            assert got == want, (trial, len(left))
            assert len(pool) == len(left) - (len(got) if got else 0)
            if got is None:
                break
            left = [c for c in left if c not in got]


def test_a_pool_that_cannot_fill_a_table_is_left_as_it_was() -> None:
    same = "http://127.0.0.1:9000/"
    cands = [Candidate(1, 1500, 100, same), Candidate(2, 1500, 90, same),
             Candidate(3, 1500, 80, "http://127.0.0.1:9001/")]
    pool = IdlePool(cands, 0.0, random.Random(0))
    assert pool.pick(3) is None and len(pool) == 3
    table = pool.pick(2)
    assert table is not None and [c.bot_id for c in table] == [1, 3]


class Counted(Candidate):
    """A candidate that counts how often its rating or wait is read."""

    reads = 0

    def __getattribute__(self, name: str) -> Any:
        if name in ("rating", "waited_s"):
            Counted.reads += 1
        return super().__getattribute__(name)


def test_a_table_reads_a_few_bots_not_every_idle_bot() -> None:
    """At 100,000 idle bots a table that looked at every one cost seconds (docs/operations.md,
    "At 100,000 bots"): after the round's one arrangement, a table of four reads a few dozen
    bots however many are idle."""
    rng = random.Random(5)
    n = 5000
    cands = [Counted(b, float(rng.randint(1000, 2000)), float(rng.randint(0, 600)),
                     f"http://h{b}/") for b in range(n)]
    pool = IdlePool(cands, 2.0, rng)
    Counted.reads = 0
    tables = 0
    while tables < 200 and pool.pick(4) is not None:
        tables += 1
    assert tables == 200
    assert Counted.reads < tables * 60, Counted.reads / tables  # a scan would be > 5000
