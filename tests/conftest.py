"""Suite-wide rules: tests reach loopback only (tests/loopback_only/loopback_guard.py); under
xdist the longest tests start first (tests/scheduling.py); the Hypothesis profiles of the two
tiers are registered before pytest loads one (tests/tiers.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

GUARD_DIR = Path(__file__).resolve().parent / "loopback_only"
sys.path.insert(0, str(GUARD_DIR))

import loopback_guard  # noqa: E402
import pytest  # noqa: E402

from tests import scheduling, tiers  # noqa: E402, F401 - tiers registers the profiles

os.environ[loopback_guard.ENV_FLAG] = "1"
# One prefix for RQ's keys in every test process and the workers they start (RQ reads it
# once, at import; each test's app has a REDIS_NAMESPACE of its own for the arena's keys,
# and its own queue name).  tests/arena/test_redis_namespace.py drills the real thing.
os.environ.setdefault("RQ_KEY_PREFIX", "arena-test:rq")
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(GUARD_DIR), os.environ.get("PYTHONPATH", "")) if p
)
loopback_guard.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist (``make test``), hand the recorded long tests out first, longest first
    (tests/scheduling.py): every worker sorts its identical collection the same way."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = scheduling.longest_first(items, scheduling.load())
