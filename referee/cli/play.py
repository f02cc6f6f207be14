"""``python -m referee play URL URL URL URL``: a match between live bot URLs.

No service, queue or database: the referee calls the bots directly, prints the result table
and optionally writes the match log (``--log out.json`` or ``out.jsonl``).  Bots on loopback
or a private network need ``--allow-private``.
"""

from __future__ import annotations

import argparse
import sys

from referee.game.presets import find_ruleset, preset_names
from referee.runner import log
from referee.runner.match import Limits, run_match
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer

from .report import deal_line, result_table
from .signing_args import add_signing_arguments, signing_of
from .terminal import echo


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m referee play", description=__doc__)
    ap.add_argument("urls", nargs="+", metavar="URL", help="one bot URL per seat, in seat order")
    ap.add_argument("--ruleset", default="standard", choices=preset_names())
    ap.add_argument("--deals", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log", help="write the match log here (.jsonl: JSON Lines)")
    ap.add_argument(
        "--allow-private",
        action="store_true",
        help="allow loopback and private addresses (local bots)",
    )
    ap.add_argument("--deadline-ms", type=int, default=Limits.deadline_ms)
    ap.add_argument("--time-bank-ms", type=int, default=Limits.time_bank_ms)
    ap.add_argument(
        "--max-strikes",
        type=int,
        default=Limits.max_strikes,
        help="strikes that forfeit a seat (0: never)",
    )
    add_signing_arguments(ap)
    ap.add_argument("--match-id", default=None)
    args = ap.parse_args(argv)
    rules = find_ruleset(args.ruleset)
    if len(args.urls) != rules.players:
        ap.error(f"{rules.name} needs {rules.players} bot URLs, got {len(args.urls)}")
    if args.deals < 1:
        ap.error("--deals must be at least 1")
    limits = Limits(
        deadline_ms=args.deadline_ms,
        time_bank_ms=args.time_bank_ms,
        max_strikes=args.max_strikes or None,
    )
    policy = NetPolicy(allow_private=args.allow_private)
    secrets, legacy_v1 = signing_of(args)
    players = [HttpPlayer(u, secrets=secrets, legacy_v1=legacy_v1, policy=policy)
               for u in args.urls]
    try:
        rec = run_match(rules, players, args.seed, args.deals, limits, match_id=args.match_id)
    finally:
        for p in players:
            p.close()
    for i in range(len(rec.deals)):
        echo(deal_line(rec, i))
    echo()
    echo(result_table(rec))
    if args.log:
        log.write(rec, args.log)
        echo(f"\nlog written to {args.log}", file=sys.stderr)
    return 0
