"""``python -m referee legal``: JSON Lines in, JSON Lines out, bad lines answered in place."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from referee.cli.legal import run


def answer(*lines: str) -> list[dict[str, object]]:
    out = io.StringIO()
    run(io.StringIO("\n".join(lines) + "\n"), out)
    return [json.loads(x) for x in out.getvalue().splitlines()]


def as_sets(moves: object) -> set[frozenset[str]]:
    assert isinstance(moves, list)
    return {frozenset(m) for m in moves}


def test_opening_must_include_three_of_diamonds() -> None:
    (res,) = answer(
        json.dumps(
            {
                "hand": ["3D", "3S", "4D", "5H", "6C", "7D"],
                "table": None,
                "first": True,
                "ruleset": "standard",
            }
        )
    )
    assert res["can_pass"] is False
    assert as_sets(res["moves"]) == {
        frozenset({"3D"}),
        frozenset({"3D", "3S"}),
        frozenset({"3D", "4D", "5H", "6C", "7D"}),
    }


def test_following_a_single_lists_higher_singles_and_pass() -> None:
    (res,) = answer(
        json.dumps(
            {"hand": ["3D", "5D", "5H", "2S", "10c"], "table": ["5S"], "ruleset": "standard"}
        )
    )
    assert as_sets(res["moves"]) == {frozenset({"2S"}), frozenset({"TC"})}
    assert res["can_pass"] is True


def test_malformed_lines_get_an_error_and_the_batch_goes_on() -> None:
    good = json.dumps({"hand": ["3D"], "table": None})
    results = answer(
        "not json",
        json.dumps({"hand": ["3X"], "table": None}),
        json.dumps({"hand": "3D"}),
        json.dumps({"hand": ["3D"], "table": ["3D"]}),
        json.dumps({"hand": ["3D"], "table": ["4D", "5D"]}),
        json.dumps({"hand": ["3D"], "ruleset": "no-such-rules"}),
        json.dumps({"hand": ["3D"], "extra": 1}),
        json.dumps([1, 2]),
        good,
    )
    assert [("error" in r) for r in results] == [True] * 8 + [False]
    assert results[-1] == {"moves": [["3D"]], "can_pass": False}


def test_rule_set_options_and_overrides() -> None:
    hand = ["3D", "4D", "5D", "6D", "8D"]
    flush = frozenset(hand)
    (std,) = answer(json.dumps({"hand": hand, "table": None}))
    (no_flush,) = answer(json.dumps({"hand": hand, "table": None, "ruleset": "singapore"}))
    (override,) = answer(
        json.dumps(
            {
                "hand": hand,
                "table": None,
                "ruleset": {"name": "standard", "five_card_order": ["straight", "full-house"]},
            }
        )
    )
    assert flush in as_sets(std["moves"])
    assert flush not in as_sets(no_flush["moves"])
    assert flush not in as_sets(override["moves"])


def test_command_line_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "referee", "legal"],
        input='{"hand": ["2S", "2H"], "table": null}\nbroken\n',
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert as_sets(lines[0]["moves"]) == {
        frozenset({"2S"}),
        frozenset({"2H"}),
        frozenset({"2H", "2S"}),
    }
    assert "error" in lines[1]
