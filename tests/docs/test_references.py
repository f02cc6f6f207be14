"""Docstrings and docs cite code that exists.

A docstring or a page that names ``arena.jobs.bodies.play_match`` or :func:`run_match` sends a
reader looking for it; after a rename or a move the name must follow.  Two checks:

* every Sphinx role (``:func:``, ``:class:``, ``:meth:``, ``:mod:``, ...) in a docstring of
  ``referee``, ``arena`` or ``sample_bots`` resolves the way Sphinx reads it: an absolute
  dotted name, a name relative to the module (``.cards`` in a package), or a name in the
  module's namespace or its enclosing class;
* every backticked dotted name that starts with ``arena.``, ``referee.`` or ``sample_bots.``
  in a docstring (of the packages, ``bench``, ``scripts`` and ``tests``), in ``docs/*.md`` or
  in ``README.md`` resolves to a module, or an attribute, a dataclass field or an annotated
  attribute of one.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("referee", "arena", "sample_bots")
NOT_CODE = {
    "arena.sqlite3": "the SQLite file's name",
    "sample_bots.NAME": "a placeholder for any sample bot's module",
}
"""Backticked dotted names that name no code on purpose."""

ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj|const):`~?([^`<>]+?)`")
SPAN = re.compile(r"``(.+?)``|`([^`\n]+)`")
DOTTED = re.compile(r"(?<![\w./:-])~?((?:arena|referee|sample_bots)(?:\.[A-Za-z_]\w*)+)")
_MISSING = object()


def _member(obj: Any, name: str) -> Any:
    """``obj.name``; None for a field that exists only on instances; _MISSING otherwise."""
    if hasattr(obj, name):
        return getattr(obj, name)
    if isinstance(obj, type):
        if dataclasses.is_dataclass(obj) and name in {f.name for f in dataclasses.fields(obj)}:
            return None
        for k in obj.__mro__:
            if name in getattr(k, "__annotations__", {}) or name in getattr(k, "__slots__", ()):
                return None
    return _MISSING


def _walk(obj: Any, parts: list[str]) -> bool:
    for part in parts:
        if obj is None:  # an instance attribute: its own members are not checked
            return True
        obj = _member(obj, part)
        if obj is _MISSING:
            return False
    return True


def resolves(dotted: str) -> bool:
    """Whether an absolute dotted name is a module or something reachable from one."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        return _walk(module, parts[i:])
    return False


def _modules() -> Iterator[tuple[Path, str]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if "migrations" in parts or parts[-1] == "__main__":
                continue  # alembic's env runs only inside alembic; mains run on import
            if parts[-1] == "__init__":
                parts.pop()
            yield path, ".".join(parts)


def _strings(tree: ast.AST) -> Iterator[tuple[ast.Expr, list[str]]]:
    """Every string statement (docstrings, attribute docstrings), with its class path."""
    def visit(node: ast.AST, classes: list[str]) -> Iterator[tuple[ast.Expr, list[str]]]:
        for child in ast.iter_child_nodes(node):
            inner = [*classes, child.name] if isinstance(child, ast.ClassDef) else classes
            if (isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant)
                    and isinstance(child.value.value, str)):
                yield child, classes
            yield from visit(child, inner)
    yield from visit(tree, [])


def _role_resolves(target: str, module: ModuleType, modname: str, classes: list[str],
                   is_package: bool) -> bool:
    if target.startswith("."):
        base = modname if is_package else modname.rpartition(".")[0]
        return resolves(base + target)
    if target.split(".")[0] in PACKAGES:
        return resolves(target)
    parts = target.split(".")
    for depth in range(len(classes), -1, -1):  # the enclosing classes, then the module
        if _walk(module, [*classes[:depth], *parts]):
            return True
    return resolves(target)  # the standard library or a dependency


def role_problems() -> list[str]:
    problems = []
    for path, modname in _modules():
        module = importlib.import_module(modname)
        is_package = path.name == "__init__.py"
        for node, classes in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            assert isinstance(node.value, ast.Constant)
            for m in ROLE.finditer(node.value.value):
                target = m.group(1).strip().removesuffix("()")
                if not _role_resolves(target, module, modname, classes, is_package):
                    problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {m.group(0)}")
    return problems


def _texts() -> Iterator[tuple[str, str]]:
    for folder in (*PACKAGES, "bench", "scripts", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node, _ in _strings(ast.parse(path.read_text(encoding="utf-8"))):
                assert isinstance(node.value, ast.Constant)
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node.value.value
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield f"{path.relative_to(ROOT)}:{i}", line


def dotted_problems() -> list[str]:
    problems = []
    for where, text in _texts():
        for span in SPAN.finditer(text):
            for m in DOTTED.finditer(span.group(1) or span.group(2)):
                name = m.group(1)
                if name not in NOT_CODE and not resolves(name):
                    problems.append(f"{where}: {name}")
    return problems


def test_sphinx_roles_in_docstrings_name_code_that_exists() -> None:
    assert role_problems() == []


@pytest.mark.drill
def test_dotted_names_in_docstrings_and_docs_name_code_that_exists() -> None:
    assert dotted_problems() == []


@pytest.mark.parametrize("name, found", [
    ("referee.wire.httpbot.BotClient", True),
    ("referee.runner.match.TurnRecord.latency_ms", True),  # a dataclass field
    ("arena.jobs.bodies.play_match", True),
    ("referee.httpbot", False),  # moved into referee.wire
    ("arena.jobs.bodies.no_such_job", False),
])
def test_the_resolver_tells_real_names_from_stale_ones(name: str, found: bool) -> None:
    assert resolves(name) is found
