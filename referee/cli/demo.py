"""``python -m referee demo``: a short match of in-process players, printed as a table.

The players are tiny policies over the ``legal_moves`` of a protocol request, run through the
same match runner as HTTP bots (:func:`referee.runner.match.run_match` with
:class:`~referee.wire.players.LocalPlayer`): a random player and a "shed the most cards, lowest
first" player.  ``--log`` writes the match log; ``python -m referee verify`` checks it.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from typing import Any

from referee.game.cards import mask_text
from referee.game.numbering import shown
from referee.game.presets import find_ruleset, preset_names
from referee.runner import log
from referee.runner.match import Limits, TurnRecord, run_match
from referee.wire.players import LocalPlayer

from .report import deal_line, result_table
from .terminal import echo

Request = dict[str, Any]


def random_policy(rng: random.Random) -> Callable[[Request], Request]:
    def choose(request: Request) -> Request:
        moves = request["legal_moves"]
        return {"move": moves[rng.randrange(len(moves))]["id"]}

    return choose


def lowest_policy(request: Request) -> Request:
    """Shed the most cards with the lowest top card; pass only when nothing else is legal.

    ``legal_moves`` come lowest first within each size, pass last.
    """
    plays = [m for m in request["legal_moves"] if m["cards"]]
    if not plays:
        return {"move": "pass"}
    most = max(len(m["cards"]) for m in plays)
    return {"move": next(m["id"] for m in plays if len(m["cards"]) == most)}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m referee demo", description=__doc__)
    ap.add_argument("--ruleset", default="standard", choices=preset_names())
    ap.add_argument("--deals", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log", help="write the match log here (.jsonl: JSON Lines)")
    ap.add_argument("--verbose", action="store_true", help="print every turn")
    args = ap.parse_args(argv)
    rules = find_ruleset(args.ruleset)
    rng = random.Random(args.seed)
    kinds = ["lowest", "random", "lowest", "random"][: rules.players]
    players = [
        LocalPlayer(lowest_policy if k == "lowest" else random_policy(rng), name=f"{k}-{i}")
        for i, k in enumerate(kinds)
    ]

    def show(turn: TurnRecord) -> None:
        echo(
            f"  deal {shown(turn.deal)} turn {shown(turn.turn):>3}: seat {shown(turn.seat)} "
            f"{mask_text(turn.move) or 'pass'}"
        )

    echo(f"Big Two demo: {args.deals} deals of {rules.name}, seed {args.seed}")
    echo(f"seats: {', '.join(f'{shown(i)}={p.name}' for i, p in enumerate(players))}\n")
    rec = run_match(
        rules,
        players,
        args.seed,
        args.deals,
        Limits(),
        match_id=f"demo-{args.seed}",
        on_turn=show if args.verbose else None,
    )
    for i in range(len(rec.deals)):
        echo(deal_line(rec, i))
    echo()
    echo(result_table(rec))
    if args.log:
        log.write(rec, args.log)
        echo(f"\nlog written to {args.log}")
    return 0
