"""The order ``make test`` hands tests out in (tests/scheduling.py): longest first."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

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


def test_each_tiers_log_refreshes_its_own_tests(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`make durations`: the fast tier's log, then the drills' log; a test keeps the figure of
    the run that measured it, and one measured under a second leaves the record."""
    record = tmp_path / "durations.json"
    record.write_text(json.dumps({"tests/x.py::test_short": 3.0, "tests/d.py::drill": 50.0,
                                  "tests/p.py::prop": 40.0}))
    monkeypatch.setattr(scheduling, "DURATIONS", record)
    monkeypatch.setattr(scheduling, "load", lambda: json.loads(record.read_text()))
    fast = tmp_path / "fast.log"
    fast.write_text("4.00s call     tests/p.py::prop\n0.50s call     tests/x.py::test_short\n")
    drills = tmp_path / "drills.log"
    drills.write_text("61.00s call     tests/d.py::drill\n")
    assert scheduling.main([str(fast), str(drills)]) == 0
    assert json.loads(record.read_text()) == {"tests/d.py::drill": 61.0, "tests/p.py::prop": 4.0}
