"""Engine speed: complete random deals per second and leading-move lists per second.

    python bench/engine.py --json

* ``games_per_s``: complete 4-player deals under the rule set (default ``standard``), every
  move drawn uniformly at random from the complete legal list, one process.
* ``leading_lists_per_s``: complete legal-move lists for fresh 13-card hands on an empty
  table.  Every hand is dealt fresh before timing starts; nothing carries over between hands.

Each figure is the best of ``--repeat`` timed rounds (the machine is shared and noisy; the best
round is the least disturbed).  ``--rules all`` measures every preset.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee import Deal, find_ruleset, preset_names, tables_for
from referee.game.movegen import leading_plays


def games_per_s(rules_name: str, games: int, seed: int) -> tuple[float, float]:
    rules = find_ruleset(rules_name)
    rng = random.Random(seed)
    rnd = rng.random
    turns = 0
    start = time.perf_counter()
    for _ in range(games):
        deal = Deal.new(rules, rng.getrandbits(32))
        while deal.outcome is None:
            moves = deal.legal_moves()
            deal.push(moves[int(rnd() * len(moves))])
        turns += len(deal.log)  # one log entry per push: no counting inside the timed loop
    elapsed = time.perf_counter() - start
    return games / elapsed, turns / games


def leading_lists_per_s(rules_name: str, hands: int, seed: int) -> tuple[float, float]:
    rules = find_ruleset(rules_name)
    t = tables_for(rules)
    rng = random.Random(seed)
    deck = list(range(52))
    fresh = [sum(1 << c for c in rng.sample(deck, 13)) for _ in range(hands)]
    start = time.perf_counter()
    total = 0
    for h in fresh:
        total += len(leading_plays(h, t))
    elapsed = time.perf_counter() - start
    return hands / elapsed, total / hands


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="standard", help="preset name, or 'all'")
    ap.add_argument("--games", type=int, default=2000)
    ap.add_argument("--hands", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    names = preset_names() if args.rules == "all" else [args.rules]
    results = {}
    for name in names:
        g = max(games_per_s(name, args.games, args.seed + i) for i in range(args.repeat))
        lead = max(leading_lists_per_s(name, args.hands, args.seed + i) for i in range(args.repeat))
        results[name] = {
            "games_per_s": round(g[0], 1),
            "turns_per_game": round(g[1], 1),
            "leading_lists_per_s": round(lead[0], 1),
            "moves_per_leading_list": round(lead[1], 2),
        }
    # Per-preset figures under "presets" ("rules" names what was asked for).
    out = dict(results[names[0]]) if len(names) == 1 else {"presets": results}
    out.update(
        rules=args.rules,
        python=platform.python_version(),
        games=args.games,
        hands=args.hands,
        repeat=args.repeat,
    )
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>24}: {v}")


if __name__ == "__main__":
    main()
