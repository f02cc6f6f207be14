"""Perft: the move generator against fixed positions counted by the reference.

tests/referee/game/data/perft/<preset>.json is written by tests/referee/game/make_perft.py from the
brute-force reference (see that script for how to regenerate).  For every position the engine
must produce exactly the recorded number of plays, with no duplicates, and the same set of
plays (by digest).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee import PRESETS, classify, parse_mask, tables_for
from referee.game.movegen import beating_plays, leading_plays

from .make_perft import DATA, LEADS, TABLES, digest, recorded_options
from .reference import UnsupportedOptionError, _ref

FILES = sorted(DATA.glob("*.json"))


def _supported(name: str) -> bool:
    try:
        _ref(PRESETS[name])
    except UnsupportedOptionError:
        return False
    return True


def test_every_supported_preset_has_a_perft_file() -> None:
    have = {p.stem for p in FILES}
    missing = sorted(n for n in PRESETS if _supported(n) and n not in have)
    assert not missing, f"run make_perft for {missing}"
    stale = sorted(have - set(PRESETS))
    assert not stale, f"perft files for unknown presets: {stale}"


def test_recorded_options_fill_only_missing_options() -> None:
    """A file that lacks an option reads as the default; one that records it keeps its value."""
    full = json.loads(json.dumps(PRESETS["lukang"].options()))
    older = {k: v for k, v in full.items() if k != "bomb_takes_trick"}
    assert recorded_options(older) == full
    changed = {**full, "bomb_takes_trick": True}
    assert recorded_options(changed) != full


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_perft(path: Path) -> None:
    data = json.loads(path.read_text())
    name = data["preset"]
    assert name == path.stem
    rules = PRESETS[name]
    assert recorded_options(data["options"]) == json.loads(json.dumps(rules.options())), (
        f"preset {name} changed since its perft file was made: rerun make_perft {name}"
    )
    positions = data["positions"]
    assert len(positions) == LEADS + TABLES
    assert sum(p["table"] is None for p in positions) == LEADS
    t = tables_for(rules)
    for pos in positions:
        hand = parse_mask(pos["hand"])
        if pos["table"] is None:
            plays = leading_plays(hand, t)
        else:
            table = classify(parse_mask(pos["table"]), t)
            assert table is not None, pos
            assert table.mask.bit_count() == pos["table_size"], pos
            plays = beating_plays(hand, t, table.kind, table.key)
        where = f"{name}: hand {pos['hand']}, table {pos['table']}"
        assert len(plays) == pos["plays"], where
        assert len(set(plays)) == len(plays), f"duplicates: {where}"
        assert digest(plays) == pos["digest"], f"different plays: {where}"


def test_perft_positions_are_not_trivial() -> None:
    """The files exercise every size of table play and real numbers of plays."""
    kinds: set[int] = set()
    total = 0
    for path in FILES:
        for pos in json.loads(path.read_text())["positions"]:
            total += pos["plays"]
            if pos["table_size"] is not None:
                kinds.add(pos["table_size"])
    assert {1, 2, 3, 5} <= kinds
    assert total > 100 * len(FILES)
