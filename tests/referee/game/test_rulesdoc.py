"""docs/rules.md is generated from the rule-set metadata and must be up to date."""

from __future__ import annotations

from pathlib import Path

from referee.game.presets import PRESETS
from referee.game.rules import option_fields
from referee.game.rulesdoc import COVERAGE, render

DOC = Path(__file__).resolve().parents[3] / "docs" / "rules.md"


def test_rules_doc_is_current() -> None:
    assert DOC.read_text() == render(), "run: python -m referee rules-doc > docs/rules.md"


def test_every_option_and_preset_is_documented() -> None:
    text = render()
    for f in option_fields():
        assert f"| `{f.name}` |" in text
        assert f.metadata["doc"] and f.metadata["source"]
    for name in PRESETS:
        assert f"### `{name}`" in text


def test_every_option_value_in_coverage_exists() -> None:
    """Option names quoted in the coverage table are real options."""
    names = {f.name for f in option_fields()}
    for _conv, _src, how in COVERAGE:
        for token in how.split("`"):
            key = token.split("=")[0]
            if "=" in token and not key.startswith("penalty.") and key.isidentifier():
                assert key in names, token


def test_no_entry_is_blank() -> None:
    """The audit found blank entries (``tiers_two_players``, ``card_values``, the ``none``
    values, the basic five-card types, a 'StockEmpty ()' heading): every enum, every value,
    every penalty field now says what it means."""
    import re

    text = render()
    assert not re.findall(r"^- `[^`]+`: *$", text, flags=re.M), "a value without a meaning"
    assert not re.findall(r"^\*\*\w+\*\* \(\)", text, flags=re.M), "an enum without a doc"
    for line in text.splitlines():
        if line.startswith("| `penalty."):
            assert not line.rstrip().endswith("|  |"), line


def test_every_coverage_name_form_reads() -> None:
    """The coverage table's `key=value` snippets (penalty fields included) are valid name
    forms: each reads as a rule set when put after a preset, alone or with its companions."""
    from referee import find_ruleset
    from referee.game.presets import OPTION_TYPES

    for _conv, _src, how in COVERAGE:
        for token in how.split("`"):
            key = token.split("=")[0]
            if "=" in token and key in OPTION_TYPES and "[" not in token and "|" not in token:
                try:
                    find_ruleset("standard+" + token)
                except ValueError as exc:
                    # a snippet may need a companion option (e.g. settlement=places needs
                    # play_to_end); it must still be read, not refused as unreadable
                    assert "cannot read" not in str(exc), token
