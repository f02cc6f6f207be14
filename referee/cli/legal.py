"""``python -m referee legal``: legal-move lists for JSON Lines cases on stdin.

Each input line: ``{"hand": ["3D", ...], "table": ["5S"] or null, "first": bool,
"ruleset": "standard"}`` (``ruleset`` may also be ``{"name": ..., "options": {...}}`` or a
preset name with overrides ``{"name": "house-003", "players": 3}``).  Each output line:
``{"moves": [["3D"], ["3D", "3S"], ...], "can_pass": bool}``, or ``{"error": "..."}`` for a
malformed line; the batch goes on.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from referee.game.cards import CardError, mask_texts, parse_mask
from referee.game.combos import classify
from referee.game.compiled import tables_for
from referee.game.movegen import beating_plays, leading_plays
from referee.game.presets import find_ruleset
from referee.game.rules import RuleSet

from .terminal import echo


def _ruleset(spec: Any) -> RuleSet:
    if spec is None:
        return find_ruleset("standard")
    if isinstance(spec, str):
        return find_ruleset(spec)
    if isinstance(spec, dict):
        spec = dict(spec)
        name = spec.pop("name", "standard")
        if not isinstance(name, str):
            raise ValueError("ruleset name must be a string")
        options = spec.pop("options", None)
        if options is not None:
            if not isinstance(options, dict):
                raise ValueError("ruleset options must be an object")
            return RuleSet.from_options(name, options)
        return find_ruleset(name, **spec)
    raise ValueError("ruleset must be a name or an object")


def legal_case(case: Any) -> dict[str, Any]:
    """Answer one case (raises ValueError/CardError/TypeError on bad input)."""
    if not isinstance(case, dict):
        raise ValueError("each line must be a JSON object")
    unknown = set(case) - {"hand", "table", "first", "ruleset"}
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(sorted(unknown))}")
    rules = _ruleset(case.get("ruleset"))
    t = tables_for(rules)
    hand_cards = case.get("hand")
    if not isinstance(hand_cards, list):
        raise ValueError("hand must be a list of cards")
    hand = parse_mask(hand_cards)
    first = case.get("first", False)
    if not isinstance(first, bool):
        raise ValueError("first must be true or false")
    table_cards = case.get("table")
    if table_cards is None:
        plays = leading_plays(hand, t)
        can_pass = False
        if first:
            lowest = min(
                (c for c in range(52) if hand >> c & 1), key=t.order.__getitem__, default=None
            )
            if rules.opening_must_include and lowest is not None:
                plays = [m for m in plays if m >> lowest & 1]
    else:
        if not isinstance(table_cards, list):
            raise ValueError("table must be a list of cards or null")
        table = parse_mask(table_cards)
        if table & hand:
            raise ValueError("a card cannot be both in hand and on the table")
        play = classify(table, t)
        if play is None:
            raise ValueError("the table cards are not a combination in this rule set")
        plays = beating_plays(hand, t, play.kind, play.key)
        can_pass = True
    return {"moves": [mask_texts(m) for m in plays], "can_pass": can_pass}


def run(stdin: IO[str], stdout: IO[str]) -> int:
    """Process every line; return the number of malformed lines."""
    bad = 0
    for line in stdin:
        if not line.strip():
            continue
        try:
            out = legal_case(json.loads(line))
        except (ValueError, CardError, TypeError, KeyError) as e:
            bad += 1
            out = {"error": str(e) or type(e).__name__}
        echo(json.dumps(out), file=stdout)
        stdout.flush()
    return bad


def main(argv: list[str]) -> int:
    run(sys.stdin, sys.stdout)
    return 0
