"""Regenerate the screenshots in docs/screenshots: the browser tests take them on the machine's
Chromium (``tests/web``; desktop 1280 px and phone 390 px), against the real service with real
bots and matches, and write them where ``ARENA_SCREENSHOTS`` points.

    .venv/bin/python scripts/screenshots.py                      # every browser test
    .venv/bin/python scripts/screenshots.py tests/web/test_list_pages.py   # just these

Extra arguments go to pytest.  The tests must pass: a screenshot of a page that is wrong
is not one to publish.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ARENA_SCREENSHOTS": str(OUT)}
    args = argv or ["tests/web"]
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            *args], cwd=ROOT, env=env)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
