"""Generate the move-generator perft files tests/referee/game/data/perft/<preset>.json.

Each file holds 30 fixed positions for one preset -- a hand and either an empty table
(leading, 10), the highest single card on the table (3: only bombs, chops and seven-card plays
answer it) or another play (17) -- with the number of plays the hand can make there and a
digest of the set of plays.  The expected values come from the brute-force *reference*
(tests/referee/game/reference.py), never from the engine, so the files pin the engine's
``leading_plays`` / ``beating_plays`` to an independent count.

Hands are drawn from this script's own seeded RNG (``random.Random`` seeded from the preset
name), not from the engine's dealing, so engine changes cannot move the positions.  Each file
also records the preset's options: if a preset changes, tests/referee/game/test_perft.py says so and
the file must be regenerated.

Usage (from the repository root)::

    .venv/bin/python -m tests.referee.game.make_perft            # (re)write every file
    .venv/bin/python -m tests.referee.game.make_perft standard   # only some presets
    .venv/bin/python -m tests.referee.game.make_perft --check    # compare, write nothing

Presets whose options the reference does not model are skipped with a message.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from referee import PRESETS, RuleSet, mask_text

from .reference import UnsupportedOptionError, as_mask, reference_classify, reference_legal
from .strategies import biased_deck, pick_table, stable_rng

DATA = Path(__file__).parent / "data" / "perft"
LEADS = 10
TABLES = 20
TOP_SINGLES = 3
"""Of the table positions, how many have the highest single on the table."""


def digest(plays: list[int]) -> str:
    """Order-free fingerprint of a set of plays (masks)."""
    text = ",".join(str(m) for m in sorted(plays))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def positions(name: str, rules: RuleSet) -> list[dict[str, object]]:
    rng = stable_rng("perft", name)
    top = max(range(52), key=lambda c: (reference_classify([c], rules), c))  # type: ignore[arg-type]
    sizes = [13] * 6 + [5, 7, 9, 11] + ([17] * 3 if rules.hand_size() >= 17 else [])
    out: list[dict[str, object]] = []
    while len(out) < LEADS + TABLES:
        leading = len(out) < LEADS
        hand = biased_deck(rng)[: sizes[len(out) % len(sizes)]]
        table = None
        if not leading and len(out) < LEADS + TOP_SINGLES:
            # the single no other single beats: only bombs, chops, seven-card plays answer it
            table = [top]
            hand = [c for c in hand if c != top]
        elif not leading:
            held = set(hand)
            other = [c for c in biased_deck(rng) if c not in held][:12]
            table = pick_table(rng, other, rules)
            if table is None:
                continue
        plays = [as_mask(p) for p in reference_legal(hand, table, rules)]
        out.append(
            {
                "hand": mask_text(as_mask(hand)),
                "table": None if table is None else mask_text(as_mask(table)),
                "table_size": None if table is None else len(table),
                "plays": len(plays),
                "digest": digest(plays),
            }
        )
    return out


def recorded_options(recorded: dict[str, Any]) -> dict[str, Any]:
    """A file's options, with options added to the engine since it was made at their default
    (a preset that does not use a new option has not changed, so its file stays valid)."""
    defaults = json.loads(json.dumps(RuleSet().options()))
    out = {**defaults, **recorded}
    out["penalty"] = {**defaults["penalty"], **recorded.get("penalty", {})}
    return out


def up_to_date(path: Path, data: dict[str, object]) -> bool:
    """Whether the file at ``path`` holds ``data``'s positions for the same options."""
    if not path.exists():
        return False
    old = json.loads(path.read_text())
    now = json.loads(json.dumps(data))
    same_options = recorded_options(old["options"]) == now["options"]
    return bool(old["positions"] == now["positions"] and same_options)


def build(name: str) -> dict[str, object]:
    rules = PRESETS[name]
    return {
        "preset": name,
        "generated_by": "tests/referee/game/make_perft.py from tests/referee/game/reference.py",
        "options": rules.options(),
        "positions": positions(name, rules),
    }


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or sorted(PRESETS)
    DATA.mkdir(parents=True, exist_ok=True)
    status = 0
    for name in names:
        try:
            data = build(name)
        except UnsupportedOptionError as e:
            print(f"{name}: skipped, the reference does not model {e}")
            continue
        path = DATA / f"{name}.json"
        text = json.dumps(data, indent=1, sort_keys=True) + "\n"
        if check:
            same = up_to_date(path, data)
            print(f"{name}: {'up to date' if same else 'DIFFERS'}")
            status |= not same
        else:
            path.write_text(text)
            counts = [p["plays"] for p in data["positions"]]  # type: ignore[index]
            print(f"{name}: {len(counts)} positions, {sum(counts)} plays")  # type: ignore[arg-type]
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
