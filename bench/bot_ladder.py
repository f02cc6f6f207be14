"""Sample-bot ladder: the sample bots against each other over many duplicate deals, in process.

    python bench/bot_ladder.py --json                 # default: 4,800 deals, standard rules
    python bench/bot_ladder.py --json --deals 600 --rules house-003
    python bench/bot_ladder.py --json --rules mix     # cycle through several presets

No HTTP: every turn the request is built with ``referee.wire.protocol.move_request`` from a
``referee.Deal`` and handed to the bot's ``choose`` function directly, exactly the body the
bot's server would receive.  (The bots themselves never import the referee.)

**Seating.**  With ``k`` bots and ``n`` seats, each seed is played ``k * n`` times: for every
shift ``o`` of the bot list the table is ``bots[o], bots[o+1], ...`` (cycling when ``k < n``),
and that table is rotated through all ``n`` seats.  So every bot sits in every seat equally
often, and every bot plays every hand of every seed equally often (duplicate deals), which
cancels most of the luck of the cards.

**Figures** per bot, per seat played: ``avg_score`` (the deal's score, higher is better; under
the standard rules the winner collects every loser's penalty), ``win_rate`` (fraction of deals
it went out first), each with a 95% confidence interval computed over seeds (the games of one
seed are correlated, so the seed is the independent unit), and the CPU time its ``choose``
took (thread CPU time, so a busy shared machine does not inflate it; wall-clock time is the
same on an idle machine).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee import Deal, DealContext, find_ruleset
from referee.game.cards import move_id
from referee.wire.protocol import move_request
from sample_bots import greedy_bot, planner_bot, random_bot

Choose = Callable[[dict[str, Any]], Any]

BOTS: dict[str, Callable[[int], Choose]] = {
    "planner": lambda seed: planner_bot.make_choose(),
    "greedy": lambda seed: greedy_bot.choose,
    "random": lambda seed: random_bot.make_choose(seed),
}
"""Bot name -> factory of its ``choose`` (given a seed, for bots that draw random numbers)."""

MIX = ["standard", "hong-kong", "pusoy-dos", "indonesia", "house-003", "singapore", "lukang"]
"""The presets ``--rules mix`` cycles through, one per seed."""


def lineups(bots: list[str], players: int) -> list[list[str]]:
    """Every shifted table of the bot list, each rotated through every seat."""
    k = len(bots)
    out = []
    for o in range(k):
        base = [bots[(o + i) % k] for i in range(players)]
        for r in range(players):
            out.append(base[r:] + base[:r])
    return out


def play_deal(rules_name: str, seed: int, lineup: list[str]) -> dict[str, Any]:
    """One deal with ``lineup[seat]`` in each seat; returns scores, winner and timings."""
    rules = find_ruleset(rules_name)
    chooses = [BOTS[name](seed * 31 + seat) for seat, name in enumerate(lineup)]
    deal = Deal.new(rules, random.Random(seed), DealContext(index=0))
    n = rules.players
    times: list[list[float]] = [[] for _ in range(n)]
    faults = [0] * n
    turn = 0
    while not deal.over:
        seat = deal.to_move
        legal = deal.legal_moves()
        if len(legal) == 1:
            deal.push(legal[0])  # forced (usually a pass): no choice to ask about
            turn += 1
            continue
        req = move_request(
            deal,
            seat,
            match_id=f"ladder-{seed}",
            turn=turn,
            scores=[0] * n,
            deadline_ms=1000,
            time_bank_ms=5000,
            last_latency_ms=None,
            legal=legal,
        )
        ids = {move_id(m): m for m in legal}
        t0 = time.thread_time()
        try:
            answer = chooses[seat](req)
        except Exception:
            answer = None
        times[seat].append(time.thread_time() - t0)
        if isinstance(answer, tuple):
            answer = answer[0]
        move = ids.get(answer) if isinstance(answer, str) else None
        if move is None:
            faults[seat] += 1
            move = legal[0]
        deal.push(move)
        turn += 1
    out = deal.outcome
    assert out is not None
    return {
        "scores": list(out.scores),
        "winner": out.winner,
        "times": times,
        "faults": faults,
    }


def play_seed(job: tuple[str, int, list[str]]) -> list[tuple[list[str], dict[str, Any]]]:
    rules_name, seed, bots = job
    players = find_ruleset(rules_name).players
    return [(lu, play_deal(rules_name, seed, lu)) for lu in lineups(bots, players)]


def mean_ci(xs: list[float]) -> tuple[float, float, float]:
    """Mean and a normal 95% confidence interval of the mean."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, m, m
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    h = 1.96 * math.sqrt(var / n)
    return m, m - h, m + h


def ladder(
    bots: list[str], rules_name: str, deals: int, seed: int, jobs: int
) -> dict[str, Any]:
    per_seed_games = len(bots) * (4 if rules_name == "mix" else find_ruleset(rules_name).players)
    seeds = max(1, math.ceil(deals / per_seed_games))
    rng = random.Random(seed)
    work = []
    for i in range(seeds):
        name = MIX[i % len(MIX)] if rules_name == "mix" else rules_name
        work.append((name, rng.getrandbits(48), bots))
    start = time.perf_counter()
    if jobs > 1:
        with multiprocessing.Pool(jobs) as pool:
            results = pool.map(play_seed, work, chunksize=4)
    else:
        results = [play_seed(w) for w in work]
    elapsed = time.perf_counter() - start
    # Per bot and seed: sums over that seed's games (the seed is the independent unit).
    stats: dict[str, dict[str, Any]] = {
        b: {"score": [], "win": [], "times": [], "faults": 0, "seats": 0} for b in bots
    }
    games = 0
    for seed_games in results:
        acc = {b: [0.0, 0.0, 0] for b in bots}
        for lineup, res in seed_games:
            games += 1
            for seat, b in enumerate(lineup):
                acc[b][0] += res["scores"][seat]
                acc[b][1] += 1.0 if res["winner"] == seat else 0.0
                acc[b][2] += 1
                stats[b]["times"].extend(res["times"][seat])
                stats[b]["faults"] += res["faults"][seat]
        for b, (s, w, k) in acc.items():
            stats[b]["score"].append(s / k)
            stats[b]["win"].append(w / k)
            stats[b]["seats"] += k
    table = {}
    for b in bots:
        st = stats[b]
        avg, lo, hi = mean_ci(st["score"])
        win, wlo, whi = mean_ci(st["win"])
        ts = sorted(st["times"]) or [0.0]
        table[b] = {
            "avg_score": round(avg, 3),
            "avg_score_ci95": [round(lo, 3), round(hi, 3)],
            "win_rate": round(win, 4),
            "win_rate_ci95": [round(max(0.0, wlo), 4), round(min(1.0, whi), 4)],
            "seats_played": st["seats"],
            "decisions": len(st["times"]),
            "cpu_ms_per_decision_mean": round(1000 * sum(ts) / len(ts), 3),
            "cpu_ms_per_decision_p99": round(1000 * ts[min(len(ts) - 1, int(0.99 * len(ts)))], 3),
            "cpu_ms_per_decision_max": round(1000 * ts[-1], 3),
            "illegal_or_failed_answers": st["faults"],
        }
    ranking = sorted(bots, key=lambda b: -table[b]["avg_score"])
    return {
        "rules": rules_name,
        "deals": games,
        "seeds": seeds,
        "games_per_seed": per_seed_games,
        "seed": seed,
        "elapsed_s": round(elapsed, 1),
        "ranking": ranking,
        "bots": table,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deals", type=int, default=4800, help="deals to play (rounded up)")
    ap.add_argument("--rules", default="standard", help="preset name, or 'mix'")
    ap.add_argument("--bots", default="planner,greedy,random", help="comma-separated")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=min(4, multiprocessing.cpu_count()))
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    unknown = [b for b in bots if b not in BOTS]
    if unknown:
        ap.error(f"unknown bots {unknown}; known: {', '.join(BOTS)}")
    result = ladder(bots, args.rules, args.deals, args.seed, args.jobs)
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['deals']} deals ({result['rules']}), {result['elapsed_s']} s")
    for b in result["ranking"]:
        r = result["bots"][b]
        lo, hi = r["avg_score_ci95"]
        print(
            f"{b:>10}: score {r['avg_score']:+8.3f} [{lo:+.3f}, {hi:+.3f}]"
            f"  wins {100 * r['win_rate']:5.1f}%"
            f"  {r['cpu_ms_per_decision_mean']:.2f} ms/move"
            f" (p99 {r['cpu_ms_per_decision_p99']:.1f}, max {r['cpu_ms_per_decision_max']:.1f})"
        )


if __name__ == "__main__":
    main()
