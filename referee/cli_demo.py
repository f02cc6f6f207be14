"""``python -m referee demo``: a short match of in-process players, printed as a table.

The players here are tiny policies over the legal-move list (no HTTP): a random player and a
"lowest play" player.  The arena's ``arena demo`` runs real HTTP bots through the service.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable

from .cards import mask_text
from .presets import find_ruleset, preset_names
from .state import PASS, Deal, DealContext

Policy = Callable[[Deal, list[int], random.Random], int]


def random_policy(deal: Deal, moves: list[int], rng: random.Random) -> int:
    return moves[rng.randrange(len(moves))]


def lowest_policy(deal: Deal, moves: list[int], rng: random.Random) -> int:
    """Shed the most cards with the lowest top card; pass only when nothing else is legal."""
    plays = [m for m in moves if m != PASS]
    if not plays:
        return PASS
    order = deal.t.order
    return min(
        plays, key=lambda m: (-m.bit_count(), max(order[c] for c in range(52) if m >> c & 1))
    )


POLICIES: dict[str, Policy] = {"random": random_policy, "lowest": lowest_policy}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m referee demo", description=__doc__)
    ap.add_argument("--ruleset", default="standard", choices=preset_names())
    ap.add_argument("--deals", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="print every turn")
    args = ap.parse_args(argv)
    rules = find_ruleset(args.ruleset)
    seats = ["lowest", "random", "lowest", "random"][: rules.players]
    rng = random.Random(args.seed)
    totals = [0] * rules.players
    wins = [0] * rules.players
    prev_winner: int | None = None
    print(f"Big Two demo: {args.deals} deals of {rules.name}, seed {args.seed}")
    print(f"seats: {', '.join(f'{i}={p}' for i, p in enumerate(seats))}\n")
    for i in range(args.deals):
        deal = Deal.new(rules, rng.getrandbits(64), DealContext(i, prev_winner))
        while not deal.over:
            moves = deal.legal_moves()
            move = POLICIES[seats[deal.to_move]](deal, moves, rng)
            if args.verbose:
                print(f"  seat {deal.to_move}: {mask_text(move) or 'pass'}")
            deal.push(move)
        out = deal.outcome
        assert out is not None
        prev_winner = out.winner
        for s, v in enumerate(out.scores):
            totals[s] += v
        if out.winner is not None:
            wins[out.winner] += 1
        print(
            f"deal {i + 1:>2}: winner seat {out.winner}, cards left {list(out.cards_left)}, "
            f"scores {list(out.scores)}"
        )
    print("\nseat  player   wins  score")
    for s in sorted(range(rules.players), key=lambda s: -totals[s]):
        print(f"{s:>4}  {seats[s]:<7} {wins[s]:>5} {totals[s]:>6}")
    return 0
