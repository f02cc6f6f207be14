"""Longest tests first: the order in which ``make test`` hands tests to its worker processes.

pytest-xdist hands tests out in collection order, one at a time as workers free up.  In file
order the long drills (real worker processes killed mid-match, route walks over seeded
databases, demos, starters built with their own toolchains: half a minute to two minutes each)
started wherever their module happened to sit, often late, and the last of them ran alone on
one worker while the others had finished: minutes of the run with one of four workers busy.
Handed out longest first, the drills overlap each other and with the short tests, and the run
ends on tests of a second or less (the classic longest-processing-time-first rule).

The durations come from ``tests/durations.json`` (seconds per test id: set-up, call and
tear-down together, from ``--durations=0`` runs; only tests of a second or more).  For the
order it is a hint only: a stale or missing entry changes when a test starts, never whether or
how it runs.  A test it does not know keeps its collection order, after the known ones.  It is
also the record the tiers' ten-second rule reads (tests/tiers.py): each test's figure comes
from its own tier's run.  Refresh it after adding a long test (``make durations`` does this)::

    pytest -n 4 -m "not drill" --hypothesis-profile=fast --durations=0 | tee /tmp/fast.log
    pytest -n 4 -m drill --durations=0 | tee /tmp/drills.log
    python -m tests.scheduling /tmp/fast.log /tmp/drills.log

The order applies only under xdist (``-n``): in one process, file order keeps each module's
module-scoped fixtures set up once.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

DURATIONS = Path(__file__).resolve().parent / "durations.json"
RECORD_AT_LEAST_S = 1.0
LINE = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)\s*$")
NOT_PASSED = re.compile(r"^(ERROR|FAILED) (\S+)")


class Item(Protocol):
    nodeid: str


def load(path: Path = DURATIONS) -> dict[str, float]:
    """The recorded seconds per test id (empty when there is no record)."""
    if not path.exists():
        return {}
    data: dict[str, float] = json.loads(path.read_text())
    return data


def longest_first(items: Sequence[Item], durations: dict[str, float]) -> list[Item]:
    """``items`` with the recorded ones first, longest first; the others after them, in their
    collection order (the sort is stable)."""
    return sorted(items, key=lambda item: -durations.get(item.nodeid, 0.0))


def parse_durations(log: str) -> dict[str, float]:
    """Seconds per test id from pytest's ``--durations=0`` report (phases summed), leaving out
    the tests that failed or errored (their time says nothing about a passing run)."""
    totals: dict[str, float] = {}
    broken: set[str] = set()
    for line in log.splitlines():
        if (m := LINE.match(line)) is not None:
            totals[m[3]] = totals.get(m[3], 0.0) + float(m[1])
        elif (b := NOT_PASSED.match(line)) is not None:
            broken.add(b[2])
    return {k: v for k, v in totals.items() if k not in broken}


def refresh(log: str, old: dict[str, float]) -> dict[str, float]:
    """The new record: the log's tests of a second or more; tests the log did not measure
    (not run, failed) keep their old entry."""
    measured = parse_durations(log)
    merged = {k: v for k, v in old.items() if k not in measured}
    merged.update({k: v for k, v in measured.items() if v >= RECORD_AT_LEAST_S})
    return {k: round(merged[k], 1) for k in sorted(merged, key=lambda k: (-merged[k], k))}


def main(argv: list[str]) -> int:
    """Each log in turn refreshes the record (a test measured by several: the last one's)."""
    if not argv:
        print("usage: python -m tests.scheduling DURATIONS_LOG...", file=sys.stderr)
        return 2
    record = load()
    for log in argv:
        record = refresh(Path(log).read_text(), record)
    DURATIONS.write_text(json.dumps(record, indent=0) + "\n")
    print(f"{DURATIONS}: {len(record)} tests, {sum(record.values()) / 60:.1f} test-minutes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
