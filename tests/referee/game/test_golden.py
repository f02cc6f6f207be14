"""Golden deals: every pinned seed still deals, and every pinned game still plays, as stored.

A stored match log replays from ``(rules, deal seed, moves)``; these tests are what stops a
change of the shuffle, the dealing code, the Python it runs on or move generation from
silently changing the deals of logs already written.  The fixture and the reasons not to
regenerate it casually are in ``scripts/golden_deals.py``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from referee import Deal, find_ruleset, mask_text
from referee.runner.match import deal_seed

ROOT = Path(__file__).resolve().parents[3]


def _script() -> ModuleType:
    path = ROOT / "scripts" / "golden_deals.py"
    spec = importlib.util.spec_from_file_location("golden_deals", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["golden_deals"] = module
    spec.loader.exec_module(module)
    return module


GOLDEN = _script()
STORED: dict[str, Any] = json.loads(GOLDEN.FIXTURE.read_text(encoding="utf-8"))["rule_sets"]
VARIANTS = dict(GOLDEN.variants())


def test_every_pinned_rule_set_is_still_built() -> None:
    assert sorted(VARIANTS) == sorted(STORED)
    assert len(STORED) > 80  # every preset at its player counts, and the deal variants


@pytest.mark.parametrize("label", sorted(STORED))
def test_the_pinned_deals_and_games_are_unchanged(label: str) -> None:
    fresh = GOLDEN.entry(VARIANTS[label])
    assert GOLDEN.differences({label: STORED[label]}, {label: fresh}) == []


def test_the_documented_example_deal_is_pinned_in_clear() -> None:
    """docs/logs.md's example: match seed 1, deal 0, standard rules (a pin one can read)."""
    seed = deal_seed(1, 0)
    assert seed == 7339852785675241625
    assert [mask_text(h) for h in Deal.new(find_ruleset("standard"), seed).dealt] == [
        "3D 4S 6S TD TS JS QD KD KC KS AC AH 2S",
        "3H 5D 6C 6H 7D 7H 8C 8H 9S QH QS AS 2D",
        "3C 3S 4C 5C 5S 8D 8S 9H TH JD JH 2C 2H",
        "4D 4H 5H 6D 7C 7S 9D 9C TC JC QC KH AD",
    ]


def test_a_changed_deal_is_noticed() -> None:
    """The comparison is not vacuous: another seed's deal reads as a difference."""
    label = "standard/4p"
    fresh = GOLDEN.entry(VARIANTS[label])
    tampered = {**fresh, "clear": [mask_text(h) for h in Deal.new(VARIANTS[label], 1).dealt]}
    assert GOLDEN.differences({label: tampered}, {label: fresh}) == [f"{label}: clear differ"]
