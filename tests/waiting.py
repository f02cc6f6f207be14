"""Waiting for a condition instead of sleeping a fixed time before an assertion.

A fixed sleep is either too short on a saturated machine (the test flakes) or too long on a
quiet one (the suite crawls); polling a condition with a generous deadline is neither.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout_s: float = 60.0, every_s: float = 0.1,
             what: str = "condition") -> Any:
    """The first truthy value of ``predicate()``, polled every ``every_s`` seconds; fails the
    test after ``timeout_s`` (generous: only a broken party should ever reach it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
