"""Random JSON-shaped values for the tests that compare a fast encoder or decoder with the
standard library's (tests/arena/test_jsontext.py, test_jsonprovider.py, test_json_columns.py):
nested lists, dicts with awkward keys, and optionally tuples, over the caller's leaves."""

from __future__ import annotations

import random
from collections.abc import Sequence

KEYS = ["a", "é", '"k', ""]


def random_value(rng: random.Random, leaves: Sequence[object], *, tuples: bool = False,
                 depth: int = 0) -> object:
    """One value at most five levels deep: a leaf (40%), a list, a pair as a tuple (10%,
    with ``tuples``) or a dict of up to three entries keyed from :data:`KEYS`."""
    r = rng.random()
    if depth > 4 or r < 0.4:
        return rng.choice(leaves)
    inner = depth + 1
    if r < (0.6 if tuples else 0.65):
        return [random_value(rng, leaves, tuples=tuples, depth=inner)
                for _ in range(rng.randrange(4))]
    if tuples and r < 0.7:
        return (random_value(rng, leaves, tuples=tuples, depth=inner),
                random_value(rng, leaves, tuples=tuples, depth=inner))
    return {rng.choice(KEYS) + str(i): random_value(rng, leaves, tuples=tuples, depth=inner)
            for i in range(rng.randrange(4))}
