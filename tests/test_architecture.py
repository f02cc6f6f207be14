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
* ``arena/`` has rooms too (:data:`ARENA_ROOMS`, drawn in docs/architecture.md): every module
  lives in one, each imports only the rooms below it, and no two of its modules import each
  other, counting every import as above.  Each checker is shown failing on a synthetic tree.
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
    bad.write_text("import flask\nfrom arena.core.models import Bot\nfrom .cards import card\n")
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


ROOT_ROOM = "(root)"
"""A rooms table that lists this may import the package root (``arena``: ``create_app``)."""


def room_of(module: str, rooms: dict[str, set[str]] = ROOMS) -> str | None:
    """``referee.wire.httpbot`` -> ``wire``; the package root is :data:`ROOT_ROOM` when the
    table has a row for it, else (like ``__main__``) it has no room."""
    parts = module.split(".")
    if len(parts) == 1:
        return ROOT_ROOM if ROOT_ROOM in rooms else None
    return parts[1] if parts[1] in rooms else None


def room_violations(path: Path, root: Path = ROOT,
                    rooms: dict[str, set[str]] = ROOMS) -> list[str]:
    here = module_name(path, root)
    package = here.split(".")[0]
    room = room_of(here, rooms)
    if room is None:
        return []
    bad = []
    for target in sorted(internal_imports(path, root)):
        if target.split(".")[0] != package:
            continue  # another package: the rules at the top of this file
        other = room_of(target, rooms)
        if other is None:
            bad.append(f"{target} (the package root; import from the room itself)")
        elif other != room and other not in rooms[room]:
            bad.append(f"{target} (the {room} room may import only {sorted(rooms[room])})")
    return bad


def loose_modules(package: str, root: Path = ROOT,
                  rooms: dict[str, set[str]] = ROOMS) -> list[str]:
    """The package's modules outside every room (its ``__init__``/``__main__`` aside)."""
    return [
        p.relative_to(root).as_posix()
        for p in sorted((root / package).rglob("*.py"))
        if room_of(module_name(p, root), rooms) in (None, ROOT_ROOM)
        and p.relative_to(root / package).as_posix() not in ("__init__.py", "__main__.py")
    ]


def test_every_referee_module_lives_in_a_room() -> None:
    loose = loose_modules("referee")
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


# --- the service's rooms ------------------------------------------------------------------

ARENA_ROOMS: dict[str, set[str]] = {
    "core": set(),
    "play": {"core"},
    "web": {"core"},
    "notify": {"core"},
    "bots": {"core", "play", "notify"},
    "accounts": {"core"},
    "tournaments": {"core", "play", "notify"},
    "live": {"core", "play"},
    "migrations": {"core"},
    "routes": {"core", "play", "web", "bots", "tournaments", "live", "accounts", "notify"},
    ROOT_ROOM: {"core", "web", "routes"},
    "jobs": {"core", "play", "bots", "tournaments", "live", "notify", ROOT_ROOM},
    "ops": {"core", "play", "web", "bots", "tournaments", "live", "routes", "jobs", "accounts",
            "notify", ROOT_ROOM},
}
"""Which room of ``arena/`` may import which (docs/architecture.md draws it).  The package
root builds the app (``create_app``: the core's resources, the web's plumbing, every route);
the worker (``jobs``) and the commands (``ops``) build apps, so they stand above it.
``routes`` reads ``live`` for the "live now" pages: the viewer counts the relay writes
(:mod:`arena.live.viewers`) and the live streams' names."""


def test_the_arena_rooms_are_layered() -> None:
    assert import_cycles(ARENA_ROOMS) == []
    assert set(sources("arena")) and {room_of(module_name(p), ARENA_ROOMS)
                                      for p in sources("arena")} - {None} == set(ARENA_ROOMS)


def test_every_arena_module_lives_in_a_room() -> None:
    loose = loose_modules("arena", rooms=ARENA_ROOMS)
    assert not loose, f"modules outside the rooms {sorted(ARENA_ROOMS)}: {loose}"


@pytest.mark.parametrize("path", sources("arena"), ids=label)
def test_each_arena_room_imports_only_the_rooms_below_it(path: Path) -> None:
    bad = room_violations(path, rooms=ARENA_ROOMS)
    assert not bad, f"{label(path)} imports {bad}"


def test_arena_has_no_import_cycles() -> None:
    graph = {module_name(p): internal_imports(p) for p in sources("arena")}
    assert graph["arena.jobs.bodies"] >= {"arena.play.matches"}  # the graph is really built
    assert import_cycles(graph) == []


def synthetic_arena(tmp_path: Path) -> Path:
    """A tiny ``arena/`` with two rooms, in ``tmp_path``: its root, ``core`` and ``play``."""
    pkg = tmp_path / "arena"
    for room in ("core", "play"):
        (pkg / room).mkdir(parents=True)
        (pkg / room / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .core import models\n")
    (pkg / "__main__.py").write_text("")
    (pkg / "core" / "models.py").write_text("")
    (pkg / "play" / "matches.py").write_text("from arena.core.models import Bot\n")
    return pkg


SYNTHETIC_ROOMS: dict[str, set[str]] = {"core": set(), "play": {"core"}, ROOT_ROOM: {"core"}}


def test_the_arena_checkers_pass_a_clean_tree(tmp_path: Path) -> None:
    pkg = synthetic_arena(tmp_path)
    assert loose_modules("arena", tmp_path, SYNTHETIC_ROOMS) == []
    assert all(room_violations(p, tmp_path, SYNTHETIC_ROOMS) == [] for p in pkg.rglob("*.py"))
    graph = {module_name(p, tmp_path): internal_imports(p, tmp_path) for p in pkg.rglob("*.py")}
    assert import_cycles(graph) == []


def test_the_loose_module_checker_sees_a_module_outside_the_rooms(tmp_path: Path) -> None:
    pkg = synthetic_arena(tmp_path)
    (pkg / "helpers.py").write_text("")
    (pkg / "extra").mkdir()
    (pkg / "extra" / "__init__.py").write_text("")
    assert loose_modules("arena", tmp_path, SYNTHETIC_ROOMS) == [
        "arena/extra/__init__.py", "arena/helpers.py"]


def test_the_arena_room_checker_sees_an_import_running_up(tmp_path: Path) -> None:
    pkg = synthetic_arena(tmp_path)
    models = pkg / "core" / "models.py"
    models.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..play.matches import Match\n"
        "def f():\n    import arena\n"
    )
    assert room_violations(models, tmp_path, SYNTHETIC_ROOMS) == [
        "arena (the core room may import only [])",
        "arena.play.matches (the core room may import only [])",
    ]
    root = pkg / "__init__.py"
    root.write_text("def create_app():\n    from .play import matches\n")
    assert room_violations(root, tmp_path, SYNTHETIC_ROOMS) == [
        "arena.play.matches (the (root) room may import only ['core'])"]


def test_the_cycle_checker_sees_an_arena_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    pkg = synthetic_arena(tmp_path)
    (pkg / "play" / "ladder.py").write_text("from .matches import Bot\n")
    (pkg / "play" / "matches.py").write_text("def f():\n    from arena.play import ladder\n")
    graph = {module_name(p, tmp_path): internal_imports(p, tmp_path) for p in pkg.rglob("*.py")}
    assert import_cycles(graph) == [["arena.play.ladder", "arena.play.matches"]]
