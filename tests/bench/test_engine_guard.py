"""The speed guard's moving parts that need no valgrind (the callgrind runs take a minute and
are ``make guard``'s, not the test suite's): its workload still runs against this tree's
public API, and its reading of callgrind's summary line."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _guard() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "engine_guard", ROOT / "bench" / "engine_guard.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GUARD = _guard()


def test_the_workload_plays_whole_deals_on_this_tree(tmp_path: Path) -> None:
    script = tmp_path / "workload.py"
    script.write_text(GUARD.WORKLOAD, encoding="utf-8")
    out = [
        subprocess.run(
            [sys.executable, str(script), str(ROOT), str(games)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        for games in (0, 2)
    ]
    assert int(out[0]) == 0  # the baseline run plays only the warm-up
    assert int(out[1]) > 6 * 2 * 13  # two whole deals of six presets: many turns each


def test_callgrinds_summary_is_read() -> None:
    found = GUARD._COLLECTED.search("==123== Events    : Ir\n==123== Collected : 248268929\n")
    assert found is not None and int(found.group(1)) == 248268929
