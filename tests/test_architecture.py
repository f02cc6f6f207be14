"""The dependency rules of the design, checked on the source.

* ``referee/`` is the pure engine: standard library only, plus ``h11`` (the HTTP/1.1 parser) in
  the HTTP caller.  It never imports Flask, Redis, RQ, SQL, or ``arena``.
* ``sample_bots/`` speak only the wire protocol: no ``referee`` or ``arena`` imports.
* ``arena/`` may import ``referee``; ``referee`` never imports ``arena``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB = set(sys.stdlib_module_names)


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", sources("referee"), ids=lambda p: p.name)
def test_referee_imports_only_the_standard_library(path: Path) -> None:
    allowed = STDLIB | {"referee"}
    if path.name == "httpbot.py":
        allowed |= {"h11"}
    extra = imports_of(path) - allowed
    assert not extra, f"{path.name} imports {sorted(extra)}"


@pytest.mark.parametrize("path", sources("sample_bots"), ids=lambda p: p.name)
def test_sample_bots_speak_only_the_protocol(path: Path) -> None:
    extra = imports_of(path) - STDLIB - {"sample_bots"}
    assert not extra, f"{path.name} imports {sorted(extra)}"


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import flask\nfrom arena.models import Bot\nfrom .cards import card\n")
    assert imports_of(bad) == {"flask", "arena"}
