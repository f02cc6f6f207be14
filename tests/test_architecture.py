"""The dependency rules of the design, checked on the source.

* ``referee/`` is the pure engine: standard library only, plus ``h11`` (the HTTP/1.1 parser) in
  the HTTP caller.  It never imports Flask, Redis, RQ, SQL, or ``arena``.
* ``sample_bots/`` speak only the wire protocol: no ``referee`` or ``arena`` imports.
* ``arena/`` may import ``referee``; ``referee`` never imports ``arena``.
* Inside ``referee/`` the rooms are layered: ``game`` imports no other room, ``wire`` may
  import ``game``, ``runner`` may import ``game`` and ``wire``, ``cli`` may import them all,
  and no room imports the package root (which re-exports the game).
* No import cycle between the referee's modules, counting every import (also the ones under
  ``TYPE_CHECKING`` or inside a function: a cycle hidden from the interpreter is still one
  module that cannot be read without the other).
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


def label(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", sources("referee"), ids=label)
def test_referee_imports_only_the_standard_library(path: Path) -> None:
    allowed = STDLIB | {"referee"}
    if label(path) == "referee/wire/httpbot.py":
        allowed |= {"h11"}
    extra = imports_of(path) - allowed
    assert not extra, f"{path.name} imports {sorted(extra)}"


@pytest.mark.parametrize("path", sources("sample_bots"), ids=label)
def test_sample_bots_speak_only_the_protocol(path: Path) -> None:
    extra = imports_of(path) - STDLIB - {"sample_bots"}
    assert not extra, f"{path.name} imports {sorted(extra)}"


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import flask\nfrom arena.models import Bot\nfrom .cards import card\n")
    assert imports_of(bad) == {"flask", "arena"}


# --- the referee's rooms ------------------------------------------------------------------

ROOMS: dict[str, set[str]] = {
    "game": set(),
    "wire": {"game"},
    "runner": {"game", "wire"},
    "cli": {"game", "wire", "runner"},
}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def internal_imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every module of the source tree under ``root`` that ``path`` imports, by full name.

    Relative imports are resolved; ``from package import name`` counts as importing the module
    ``package.name`` when that is a module, else the package.  Every import statement counts,
    wherever it is (module level, ``TYPE_CHECKING`` block, function body).
    """
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    tree = ast.parse(path.read_text(), filename=str(path))

    def exists(name: str) -> bool:
        base = root.joinpath(*name.split("."))
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if exists(a.name)}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if exists(full):
                    out.add(full)
                elif exists(base):
                    out.add(base)
    return out


def room_of(module: str) -> str | None:
    """``referee.wire.httpbot`` -> ``wire``; the package root and ``__main__`` have no room."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else None


def room_violations(path: Path, root: Path = ROOT) -> list[str]:
    room = room_of(module_name(path, root))
    if room is None:
        return []
    bad = []
    for target in sorted(internal_imports(path, root)):
        other = room_of(target)
        if other is None and target.split(".")[0] == "referee":
            bad.append(f"{target} (the package root; import from the room itself)")
        elif other is not None and other != room and other not in ROOMS[room]:
            bad.append(f"{target} (the {room} room may import only {sorted(ROOMS[room])})")
    return bad


def test_every_referee_module_lives_in_a_room() -> None:
    loose = [
        label(p)
        for p in sources("referee")
        if room_of(module_name(p)) is None
        and label(p) not in ("referee/__init__.py", "referee/__main__.py")
    ]
    assert not loose, f"modules outside game/wire/runner/cli: {loose}"


@pytest.mark.parametrize("path", sources("referee"), ids=label)
def test_each_room_imports_only_the_rooms_below_it(path: Path) -> None:
    assert not room_violations(path), f"{label(path)} imports {room_violations(path)}"


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan; the referee is small enough for recursion
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_referee_has_no_import_cycles() -> None:
    graph = {module_name(p): internal_imports(p) for p in sources("referee")}
    assert graph["referee.game.state"] >= {"referee.game.scoring"}  # the graph is really built
    assert import_cycles(graph) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert sorted(import_cycles(graph)) == [["a", "b", "c"], ["e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_the_room_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    pkg = tmp_path / "referee"
    for room in ("game", "wire", "runner", "cli"):
        (pkg / room).mkdir(parents=True)
        (pkg / room / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "wire" / "players.py").write_text("")
    (pkg / "runner" / "match.py").write_text("")
    state = pkg / "game" / "state.py"
    state.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..wire import players\n"
        "def f():\n    from referee.runner.match import run\n"
    )
    assert internal_imports(state, tmp_path) == {"referee.wire.players", "referee.runner.match"}
    assert len(room_violations(state, tmp_path)) == 2
    cli = pkg / "cli" / "play.py"
    cli.write_text("from referee.runner import match\nfrom referee import Deal\n")
    assert room_violations(cli, tmp_path) == [
        "referee (the package root; import from the room itself)"
    ]
