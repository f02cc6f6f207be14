"""The two tiers of the suite: what ``make test`` runs and what only ``make check`` adds.

``make test`` is the edit loop: ``pytest -m "not drill"`` with the ``fast`` Hypothesis
profile.  ``make drills`` is ``-m drill``; ``make check`` (what CI runs) is one run of
everything with the ``ci`` profile.  A *drill* is a real multi-process drill or a long
real-process scenario (a worker killed mid-match, a failover, a demo, a starter built with its
own toolchain): it proves what the fast tier cannot, and costs tens of seconds.

The rule that keeps the fast tier fast: a test recorded at more than ``DRILL_OVER_S`` seconds
in ``tests/durations.json`` carries the ``drill`` marker (``tests/test_tiers.py`` checks the
collected tests' markers against the record).  The record holds each test's figure from its
own tier's run (``make durations``), so a property test is judged by what it costs under the
``fast`` profile, the profile ``make test`` runs it with.

The Hypothesis profiles: ``ci`` is Hypothesis' own default (100 examples unless a test asks
for more or fewer); ``fast`` runs a quarter of each test's examples, never fewer than
``FAST_FLOOR`` (or the test's own count when that is smaller).  A test that sets its count
writes ``max_examples=examples(N)`` (N: its ``ci`` count), so both profiles apply to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from hypothesis import settings

DRILL = "drill"
DRILL_OVER_S = 10.0
"""A test recorded above this many seconds belongs to the drills (``make test`` leaves it
out)."""

CI_EXAMPLES = 100
FAST_EXAMPLES = 25
FAST_FLOOR = 25
"""The fewest examples a property test runs under ``fast``: enough that a shrunk
counter-example of the kind these tests found before (a wrong key for one five-card type, a
hidden card in one short-handed view) still turns up in the edit loop."""

settings.register_profile("ci", max_examples=CI_EXAMPLES)
settings.register_profile("fast", max_examples=FAST_EXAMPLES)
settings.load_profile("ci")  # `--hypothesis-profile fast` (make test) loads the other one


def examples(ci_count: int, loaded: int | None = None, floor: int = FAST_FLOOR) -> int:
    """A property test's example count under the loaded profile: ``ci_count`` under ``ci``,
    the same fraction of it as the profile's default is of ``CI_EXAMPLES`` otherwise, never
    below ``floor`` (or ``ci_count`` when that is smaller).  Also for a fixed sweep's
    repetitions (deals per variant), with the floor that sweep needs.

    Read when the test module is imported, after pytest loaded the profile of the run
    (``loaded``: that profile's default count, for the tests of this function).
    """
    if loaded is None:
        loaded = settings.default.max_examples
    if loaded >= CI_EXAMPLES:
        return ci_count
    return max(min(ci_count, floor), ci_count * loaded // CI_EXAMPLES)


class Item(Protocol):
    nodeid: str

    def get_closest_marker(self, name: str) -> Any: ...


def offenders(items: Iterable[Item], durations: dict[str, float]) -> list[str]:
    """The ids of the tests among ``items`` recorded above ``DRILL_OVER_S`` that do not carry
    the ``drill`` marker (on the test, its class or module, or its parameter set)."""
    return sorted(item.nodeid for item in items
                  if durations.get(item.nodeid, 0.0) > DRILL_OVER_S
                  and item.get_closest_marker(DRILL) is None)
