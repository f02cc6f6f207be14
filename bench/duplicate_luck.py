"""How much card luck does duplicate play remove?  The spread of table results with and without.

    python bench/duplicate_luck.py --json                  # in process (the default)
    python bench/duplicate_luck.py --json --http           # sample bots over loopback HTTP
    python bench/duplicate_luck.py --trials 400 --deals 8 --rules standard

A *trial* is one tournament table of four bots playing ``--deals`` deals, scored the way the
arena scores a table (:func:`arena.tournaments.scoring.table_result`), in two ways:

* **plain**: one match of ``deals`` deals (seats rotated from trial to trial);
* **duplicate**: ``deals / 4`` deals replayed four times with the seats rotated (the same
  cards, every bot holding every hand from every seat): the same number of deals.

Each bot's result is its score per deal relative to the other bots at the table
(``(R - (T - R) / 3) / deals``, which with duplicate play is exactly the arena's duplicate
score).  Over many trials (independent seeds) the standard deviation of that result is the
noise a table result carries; it comes from the cards (and, for the random bots, from their
own dice).  Figures:

* ``sd_plain`` and ``sd_duplicate`` per bot, and ``variance_removed``: ``1 - var_dup /
  var_plain`` (pooled over bots), the share of the spread duplicate play removes;
* ``deals_equivalent``: ``var_plain / var_dup``: a duplicate table of N deals is as precise
  as a plain one of this many times N deals;
* ``best_bot_first``: how often the bot with the best long-run result finishes first at a
  table, plain vs duplicate;
* three fields: the sample bots (two of them random players, whose own dice no seating can
  cancel), a deterministic field (two planners, two greedy: the luck of the cards alone),
  and a control of four copies of the deterministic greedy bot, where every difference is
  luck and duplicate play should leave nothing.

Bots run through the real match runner (:func:`referee.runner.match.run_match`), as in-process
players (``LocalPlayer``) or, with ``--http``, as real sample-bot servers on loopback ports
(``HttpPlayer``).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.tournaments.schedule import rotations
from arena.tournaments.scoring import SeatResult, table_result
from referee import find_ruleset
from referee.runner.match import Limits, run_match
from referee.wire.players import LocalPlayer, Player
from sample_bots import greedy_bot, planner_bot, random_bot

LIMITS = Limits(deadline_ms=5000, time_bank_ms=60_000, max_strikes=None, call_deadline_ms=5000)
FIELDS = {
    "sample_bots": ["planner", "greedy", "random", "random-2"],
    "deterministic_bots": ["planner", "greedy", "planner-2", "greedy-2"],
    "identical_bots": ["greedy", "greedy-2", "greedy-3", "greedy-4"],
}
"""The tables measured.  The random bots add noise of their own that no seating removes;
the deterministic field shows the luck of the cards alone; with identical bots every
difference is luck."""
TITLES = {"sample_bots": "sample bots (planner, greedy, two random)",
          "deterministic_bots": "deterministic bots (two planners, two greedy)",
          "identical_bots": "four identical greedy bots (control)"}
MODULES = {"planner": "planner_bot", "greedy": "greedy_bot", "random": "random_bot"}


def _answer(choose: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    def move(request: dict[str, Any]) -> dict[str, Any]:
        got = choose(request)
        return {"move": got[0] if isinstance(got, tuple) else got}

    return move


def local_player(name: str, seed: int) -> Player:
    kind = name.split("-")[0]
    if kind == "planner":
        choose = planner_bot.make_choose()
    elif kind == "greedy":
        choose = greedy_bot.choose
    else:
        choose = random_bot.make_choose(seed)
    return LocalPlayer(_answer(choose), name=name)


# --- one trial --------------------------------------------------------------------------------

_URLS: dict[str, str] = {}
"""Bot name -> URL when playing over HTTP (set in each worker process)."""


def players_for(lineup: Sequence[str], seed: int) -> list[Player]:
    if _URLS:
        from referee.wire.netguard import NetPolicy
        from referee.wire.players import HttpPlayer

        policy = NetPolicy(allow_private=True)
        return [HttpPlayer(_URLS[name], policy=policy) for name in lineup]
    return [local_player(name, seed * 7 + i) for i, name in enumerate(lineup)]


def play(lineup: Sequence[str], seed: int, deals: int, rules_name: str) -> list[SeatResult]:
    players = players_for(lineup, seed)
    try:
        rec = run_match(find_ruleset(rules_name), players, seed, deals, LIMITS)
    finally:
        for p in players:
            p.close()
    ids = {name: i for i, name in enumerate(sorted(set(lineup)))}
    return [SeatResult(ids[lineup[s.seat]], s.seat, s.rank, s.score, s.wins, s.strikes,
                       s.forfeited) for s in rec.standings]


def relative(bots: Sequence[str], matches: list[list[SeatResult]], deals: int,
             duplicate: bool) -> dict[str, float]:
    ids = {name: i for i, name in enumerate(sorted(set(bots)))}
    lines = table_result([ids[b] for b in bots], matches, duplicate=True, seed_of={})
    # duplicate=True gives R - (T - R) / (n - 1), the relative score, for both layouts.
    by_id = {x.bot: x.score for x in lines}
    out = {b: by_id[ids[b]] / deals for b in bots}
    if not duplicate:
        assert len(matches) == 1
    return out


def trial(job: tuple[list[str], int, int, int, str]) -> dict[str, Any]:
    bots, index, seed, deals, rules_name = job
    n = len(bots)
    # Plain: one match, the seats rotated from trial to trial.
    shift = index % n
    lineup = bots[shift:] + bots[:shift]
    plain = relative(bots, [play(lineup, seed, deals, rules_name)], deals, duplicate=False)
    # Duplicate: deals / n deals per rotation, the same seed (the same cards) for all.
    per = deals // n
    dup_matches = [play(list(rot), seed ^ 0x5EED, per, rules_name)
                   for rot in rotations(bots, True)]
    dup = relative(bots, dup_matches, per * n, duplicate=True)
    return {"plain": plain, "duplicate": dup}


# --- figures ----------------------------------------------------------------------------------


def spread(bots: list[str], trials: int, deals: int, seed: int, rules_name: str,
           jobs: int) -> dict[str, Any]:
    rng = random.Random(seed)
    work = [(bots, i, rng.getrandbits(48), deals, rules_name) for i in range(trials)]
    t0 = time.perf_counter()
    if jobs > 1:
        with multiprocessing.Pool(jobs, initializer=_init_worker, initargs=(dict(_URLS),)) \
                as pool:
            results = pool.map(trial, work, chunksize=8)
    else:
        results = [trial(w) for w in work]
    elapsed = time.perf_counter() - t0
    per_bot: dict[str, Any] = {}
    var_p, var_d = [], []
    for b in bots:
        p = [r["plain"][b] for r in results]
        d = [r["duplicate"][b] for r in results]
        sp, sd = statistics.stdev(p), statistics.stdev(d)
        var_p.append(sp * sp)
        var_d.append(sd * sd)
        per_bot[b] = {"mean_plain": round(statistics.fmean(p), 3),
                      "mean_duplicate": round(statistics.fmean(d), 3),
                      "sd_plain": round(sp, 3), "sd_duplicate": round(sd, 3)}
    vp, vd = statistics.fmean(var_p), statistics.fmean(var_d)
    out: dict[str, Any] = {
        "bots": bots,
        "trials": trials,
        "deals_per_table": deals,
        "elapsed_s": round(elapsed, 1),
        "per_bot": per_bot,
        "sd_plain_pooled": round(math.sqrt(vp), 3),
        "sd_duplicate_pooled": round(math.sqrt(vd), 3),
        "variance_removed": round(1 - vd / vp, 4) if vp else None,
        "deals_equivalent": round(vp / vd, 2) if vd else None,
    }
    # How often the long-run best bot finishes first at one table.
    means = {b: statistics.fmean([r["plain"][b] for r in results]
                                 + [r["duplicate"][b] for r in results]) for b in bots}
    best = max(bots, key=lambda b: means[b])
    noise = math.sqrt(vp / trials) if vp else 0.0
    if means[best] - sorted(means.values())[-2] > 3 * noise:  # a real favourite
        def first(kind: str) -> float:
            wins = sum(1 for r in results if max(bots, key=lambda b: r[kind][b]) == best)
            return round(wins / trials, 4)

        out["best_bot"] = best
        out["best_bot_first"] = {"plain": first("plain"), "duplicate": first("duplicate")}
    return out


def _init_worker(urls: dict[str, str]) -> None:
    _URLS.clear()
    _URLS.update(urls)


def start_http_bots(names: list[str]) -> list[Any]:
    from arena.ops.procs import start_bot

    children = []
    for name in names:
        child = start_bot(MODULES[name.split("-")[0]])
        children.append(child)
        assert child.url is not None
        _URLS[name] = child.url
    return children


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=400, help="independent tables per field")
    ap.add_argument("--deals", type=int, default=8, help="deals per table (multiple of 4)")
    ap.add_argument("--rules", default="standard")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=min(4, multiprocessing.cpu_count()))
    ap.add_argument("--http", action="store_true",
                    help="sample bots as HTTP servers on loopback ports")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    seats = find_ruleset(args.rules).players
    if args.deals % seats:
        ap.error(f"--deals must be a multiple of {seats} (one share per rotation)")
    children: list[Any] = []
    try:
        if args.http:
            children = start_http_bots(sorted({b for f in FIELDS.values() for b in f}))
        result: dict[str, Any] = {"rules": args.rules,
                                  "mode": "http" if args.http else "in-process"}
        for i, (key, bots) in enumerate(FIELDS.items()):
            result[key] = spread(bots, args.trials, args.deals, args.seed + i, args.rules,
                                 args.jobs)
    finally:
        if children:
            from arena.ops.procs import stop_all

            stop_all(children)
    if args.json:
        print(json.dumps(result))
        return
    for key, title in TITLES.items():
        r = result[key]
        print(f"{title}: {r['trials']} tables of {r['deals_per_table']} deals "
              f"({result['mode']}, {r['elapsed_s']} s)")
        for b, x in r["per_bot"].items():
            print(f"  {b:>10}: mean {x['mean_plain']:+7.2f} / {x['mean_duplicate']:+7.2f}  "
                  f"sd plain {x['sd_plain']:6.2f}  duplicate {x['sd_duplicate']:6.2f}")
        worth = (f"{r['deals_equivalent']}x as many plain deals" if r["deals_equivalent"]
                 else "any number of plain deals")
        print(f"  variance removed by duplicate play: {100 * (r['variance_removed'] or 0):.1f}%"
              f" (a duplicate table is worth {worth})")
        if "best_bot_first" in r:
            bf = r["best_bot_first"]
            print(f"  {r['best_bot']} (the strongest) finishes first: plain "
                  f"{100 * bf['plain']:.1f}%, duplicate {100 * bf['duplicate']:.1f}%")


if __name__ == "__main__":
    main()
