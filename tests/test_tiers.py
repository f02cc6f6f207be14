"""The fast tier stays fast: a test recorded above ten seconds is a drill (tests/tiers.py).

The guard reads the markers of the tests this run collected (``request.session.items``): in
``make test`` every fast-tier test, in ``make check`` every test; a run of a few files checks
those files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import settings

from tests import scheduling, tiers


def test_every_test_recorded_over_ten_seconds_is_a_drill(request: pytest.FixtureRequest) -> None:
    found = tiers.offenders(request.session.items, scheduling.load())
    assert not found, (
        f"recorded above {tiers.DRILL_OVER_S:.0f} s in tests/durations.json but not marked "
        f"`drill` (make it cheaper and refresh the record, or mark it): {found}")


def test_the_guard_fails_for_a_long_test_of_this_run_without_the_marker(
        request: pytest.FixtureRequest) -> None:
    """An offender planted in the record: this very test, collected and unmarked."""
    planted = {request.node.nodeid: tiers.DRILL_OVER_S + 0.1}
    assert tiers.offenders(request.session.items, planted) == [request.node.nodeid]


@dataclass
class FakeItem:
    nodeid: str
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.markers else None


def test_a_drill_may_take_long_and_a_fast_test_up_to_the_limit() -> None:
    items = [FakeItem("a::drill", {"drill"}), FakeItem("a::edge"), FakeItem("a::over"),
             FakeItem("a::unrecorded")]
    record = {"a::drill": 300.0, "a::edge": tiers.DRILL_OVER_S, "a::over": 10.5}
    assert tiers.offenders(items, record) == ["a::over"]


def test_the_marker_is_read_from_a_real_item(request: pytest.FixtureRequest) -> None:
    """The guard asks the item for its closest marker, as ``-m`` does: a mark on the test,
    its module (``pytestmark``) or its parameter set (``both_backends_drill_on_postgres``)."""
    item = request.node
    item.add_marker(pytest.mark.drill)
    assert tiers.offenders([item], {item.nodeid: 60.0}) == []


@pytest.mark.parametrize(("loaded", "ci_count", "expected"), [
    (100, 300, 300), (100, 40, 40),       # ci: each test's own count
    (25, 300, 75), (25, 120, 30),         # fast: a quarter of it...
    (25, 80, 25), (25, 40, 25),           # ...never below the floor
    (25, 10, 10),                         # ...nor above the test's own count
])
def test_examples_per_profile(loaded: int, ci_count: int, expected: int) -> None:
    assert tiers.examples(ci_count, loaded) == expected


def test_a_sweep_sets_its_own_floor() -> None:
    assert tiers.examples(15, 100, floor=5) == 15
    assert tiers.examples(15, 25, floor=5) == 5
    assert tiers.examples(40, 25, floor=5) == 10


def test_the_profile_of_this_run_is_one_of_the_two() -> None:
    """`make test` loads ``fast``, anything else ``ci`` (registered by tests/conftest.py)."""
    assert settings.default.max_examples in (tiers.CI_EXAMPLES, tiers.FAST_EXAMPLES)
    assert tiers.examples(300) == tiers.examples(300, settings.default.max_examples)
