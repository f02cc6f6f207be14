"""Suite-wide rules: tests reach loopback only (tests/loopback_only/loopback_guard.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

GUARD_DIR = Path(__file__).resolve().parent / "loopback_only"
sys.path.insert(0, str(GUARD_DIR))

import loopback_guard  # noqa: E402

os.environ[loopback_guard.ENV_FLAG] = "1"
# One prefix for RQ's keys in every test process and the workers they start (RQ reads it
# once, at import; each test's app has a REDIS_NAMESPACE of its own for the arena's keys,
# and its own queue name).  tests/arena/test_redis_namespace.py drills the real thing.
os.environ.setdefault("RQ_KEY_PREFIX", "arena-test:rq")
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(GUARD_DIR), os.environ.get("PYTHONPATH", "")) if p
)
loopback_guard.install()
