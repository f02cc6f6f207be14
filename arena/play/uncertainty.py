"""How far a rating may be from the bot's true strength: a 95% interval people can read.

What it means
-------------
``rating ± margin`` is the range in which the bot's true rating lies with about 95%
probability, under the Elo model the ladder rates by: the rating is an estimate, moved by
every result, and the margin is that estimate's standard error times 1.96.

How it is computed
------------------
An Elo update is a running estimate.  Linearised around the truth (the rating off by ``e``),
one result with pairwise factor ``k' = K / (n - 1)`` against ``n - 1`` opponents moves it to

    e' = a * e + k' * noise,    a = 1 - k' * c * Q,    c = ln 10 / 400,

where ``Q = sum_j p_j (1 - p_j)`` is the variance of the result (``p_j`` the chance of beating
opponent ``j``) and the noise has variance ``Q``.  So the estimate's variance after a result is

    V' = a^2 * V + k'^2 * Q,

which falls from the starting ``V_0 = ELO_INITIAL_DEVIATION^2`` (nothing known yet) towards
Elo's own floor ``F = k'^2 Q / (1 - a^2)``: a fixed K never stops moving a rating, so even a
bot with thousands of results keeps a margin (about ±60 points with ``K = 32`` at four
seats).  After ``N`` results, in closed form,

    V_N = F + (V_0 - F) * a^(2N).

The ladder pairs bots of similar ratings, so ``p_j`` is taken as 1/2 (``Q = (n - 1) / 4``,
the largest variance: the margin errs wide).  A duplicate set is one result with ``K`` times its
rotations (:mod:`arena.play.duplicate_sets`).  Nothing is stored: the margin is a function of
the stored ``Rating.games`` and the settings, so the leaderboard computes it for the rows it
shows, in the process, at no database cost, and it is the same on every page and in the API.

What it does not see: a bot that changed (a new version) is rated as if it had always
played as it does now, and results are assumed independent.  bench/rating_luck.py checks how
often the interval holds the rating the bot keeps over many runs (its ``interval_coverage``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from arena.core.families import family_seats

C = math.log(10.0) / 400.0
Z95 = 1.96


def result_k(k: float, seats: int, scheme: str) -> float:
    """The Elo factor of one rated result: ``k``, or for a duplicate set ``k`` times its
    rotations (one per seat)."""
    return k * seats if scheme == "duplicate" else k


def deviation(games: int, *, k: float, seats: int, scheme: str = "plain",
              initial: float = 350.0) -> float:
    """The standard error of a rating after ``games`` rated results (see the module
    docstring); never below Elo's floor, never above ``initial``."""
    n = max(2, seats)
    pair_k = result_k(k, n, scheme) / (n - 1)
    q = (n - 1) / 4.0
    a = 1.0 - pair_k * C * q
    v0 = initial * initial
    if not 0.0 < a < 1.0:  # a factor so large that one result overshoots: nothing settles
        return initial
    floor = pair_k * pair_k * q / (1.0 - a * a)
    v = floor + (v0 - floor) * a ** (2 * max(0, games))
    return math.sqrt(max(v, 0.0))


def interval(rating: float, games: int, *, k: float, seats: int, scheme: str = "plain",
             initial: float = 350.0) -> tuple[float, float]:
    """The 95% interval ``(low, high)`` around ``rating``."""
    m = Z95 * deviation(games, k=k, seats=seats, scheme=scheme, initial=initial)
    return rating - m, rating + m


@functools.lru_cache(maxsize=4096)
def _margin(games: int, k: float, seats: int, scheme: str, initial: float) -> float:
    return Z95 * deviation(games, k=k, seats=seats, scheme=scheme, initial=initial)


def margin_of(cfg: Mapping[str, Any], games: int, family: str) -> float:
    """The ± (half the 95% interval) of a rating of ``family`` with ``games`` results, under
    the settings ``cfg`` (``ELO_K``, ``LADDER_FORMAT``, ``ELO_INITIAL_DEVIATION``); cached,
    so a page of ratings costs a few dictionary look-ups."""
    return _margin(int(games), float(cfg["ELO_K"]), family_seats(family),
                   str(cfg["LADDER_FORMAT"]).strip().lower(),
                   float(cfg["ELO_INITIAL_DEVIATION"]))
