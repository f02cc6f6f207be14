"""``python -m referee request LOG --deal D --turn T``: the ``/move`` body sent at that turn.

Rebuilt from the match log (:mod:`referee.runner.requests`), it is the request the seat to
move was sent, so a bot's author can feed their bot the exact input that broke it::

    python -m referee request out.json --deal 2 --turn 7 \\
        | curl -H 'Content-Type: application/json' --data @- http://127.0.0.1:8000/move

``--deal`` and ``--turn`` count from 1, as every page and command shows them (the bot page's
strike "deal 2, turn 7" is ``--deal 2 --turn 7``); the request's own ``deal_index`` and
``turn`` fields are the 0-based indices, as in the log (:mod:`referee.game.numbering`).

Printed as compact JSON with non-ASCII characters escaped (the same JSON value, safe for a
terminal), or indented with ``--indent``.  Exit status 0; 1 when nobody was called at that
turn (a forfeited seat) or the log has no such turn; 2 when the file is not a readable
match log or does not replay.
"""

from __future__ import annotations

import argparse
import json
import sys

from referee.game.numbering import person_number, where
from referee.runner import log
from referee.runner.requests import move_request_at

from .terminal import echo


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m referee request",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("log", help="a match log, JSON or JSON Lines")
    ap.add_argument("--deal", type=person_number, required=True,
                    help="the deal, from 1 (as the pages show it)")
    ap.add_argument("--turn", type=person_number, required=True,
                    help="the turn in the deal, from 1 (as the pages show it)")
    ap.add_argument("--indent", action="store_true", help="indent for reading")
    args = ap.parse_args(argv)
    try:
        doc = log.read(args.log)
    except (OSError, UnicodeDecodeError, log.LogError) as exc:
        echo(f"{args.log}: cannot read: {exc}", file=sys.stderr, keep_newlines=False)
        return 2
    if doc.get("format") != log.FORMAT:
        echo(f"{args.log}: cannot read: not a match log", file=sys.stderr)
        return 2
    try:
        request = move_request_at(doc, args.deal, args.turn)
    except ValueError as exc:
        echo(f"{args.log}: {exc}", file=sys.stderr, keep_newlines=False)
        return 2
    if request is None:
        echo(f"{args.log}: nobody was called at {where(deal=args.deal, turn=args.turn)} (no "
             "such turn, or the seat to move had forfeited)", file=sys.stderr)
        return 1
    text = json.dumps(request, indent=1 if args.indent else None,
                      separators=None if args.indent else (",", ":"))
    echo(text)
    return 0
