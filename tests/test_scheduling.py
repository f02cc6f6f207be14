"""The order ``make test`` hands tests out in (tests/scheduling.py): longest first."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests import scheduling


@dataclass
class FakeItem:
    nodeid: str


def test_recorded_tests_go_first_longest_first_and_the_rest_keep_their_order() -> None:
    items = [FakeItem(n) for n in ["a::quick", "b::drill", "a::other", "c::walk", "c::new"]]
    ordered = scheduling.longest_first(items, {"b::drill": 90.0, "c::walk": 120.0,
                                               "a::quick": 1.0})
    assert [i.nodeid for i in ordered] == ["c::walk", "b::drill", "a::quick", "a::other",
                                           "c::new"]


LOG = """\
============================== slowest durations ===============================
12.50s call     tests/x.py::test_long[sqlite]
1.25s setup    tests/x.py::test_long[sqlite]
0.25s teardown tests/x.py::test_long[sqlite]
0.40s call     tests/x.py::test_short
30.00s call     tests/y.py::test_broken
FAILED tests/y.py::test_broken - AssertionError
"""


def test_a_durations_log_sums_the_phases_and_leaves_out_failures() -> None:
    assert scheduling.parse_durations(LOG) == {"tests/x.py::test_long[sqlite]": 14.0,
                                               "tests/x.py::test_short": 0.4}


def test_a_refresh_keeps_what_the_log_did_not_measure_and_drops_short_tests() -> None:
    old = {"tests/y.py::test_broken": 25.0, "tests/x.py::test_short": 3.0, "gone::t": 2.0}
    assert scheduling.refresh(LOG, old) == {"tests/y.py::test_broken": 25.0,
                                            "tests/x.py::test_long[sqlite]": 14.0,
                                            "gone::t": 2.0}


def test_the_record_names_collected_tests() -> None:
    """Every id in tests/durations.json is a test of this suite (a renamed test would lose
    its place in the order silently): checked by the file ids, cheaply."""
    record = json.loads(scheduling.DURATIONS.read_text())
    root = Path(__file__).resolve().parent.parent
    missing = sorted({k.split("::")[0] for k in record if not (root / k.split("::")[0]).exists()})
    assert not missing, f"tests/durations.json names files that are gone: {missing}"
