"""docs/rules.md is generated from the rule-set metadata and must be up to date."""

from __future__ import annotations

from pathlib import Path

from referee.presets import PRESETS
from referee.rules import option_fields
from referee.rulesdoc import COVERAGE, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


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
