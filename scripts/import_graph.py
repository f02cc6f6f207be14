"""The import graph of a package, in a few numbers: how its code is laid out and how it leans.

    python scripts/import_graph.py [arena] [--rooms core,play,...]

Prints, for the package (``arena`` unless named):

* modules per folder (``.py`` files, ``__init__`` included), and the number of rooms: the
  package's direct children (a module or a sub-package), ``__init__``/``__main__`` aside (the
  package root, its ``__init__``, is counted below as one more room);
* arrows: room-to-room import edges, and floors: the longest chain of rooms (and of modules) in
  the import graph once every circle is folded into one;
* import circles between modules (every import counts: module level, function level,
  ``TYPE_CHECKING``), each listed;
* imports that run back up: the rooms (the package root counted as one) are put in the order,
  top to bottom, that leaves the fewest imports pointing upwards (a greedy pass: see
  :func:`top_down_order`); every import into a room above its own is listed with its line.
  Zero exactly when the rooms form layers.

Standard library only, so it runs on any checkout (``git stash``/``git worktree`` an old commit
and run it there to compare).
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOT_ROOM = "(root)"  # the package's __init__, counted as one more room


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_with_lines(path: Path, root: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level?) for every import of a module under ``root``."""
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    top = {id(n) for n in tree.body}

    def exists(name: str) -> bool:
        base = root.joinpath(*name.split("."))
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    out: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, id(node) in top) for a in node.names if exists(a.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if exists(full):
                    out.append((full, node.lineno, id(node) in top))
                elif exists(base):
                    out.append((base, node.lineno, id(node) in top))
    return out


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, every one (singletons too), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    found.append(sorted(component))
    return found


def top_down_order(weights: dict[tuple[str, str], int], nodes: list[str]) -> list[str]:
    """Rooms from the top (importers) down (imported), with as few imports running back up as
    a greedy pass finds (Eades, Lin and Smyth's heuristic for a minimum feedback arc set):
    take off rooms nothing left imports (to the top) and rooms that import nothing left (to
    the bottom); when neither is left, the room with most imports out minus in goes on top."""
    left = set(nodes)
    top: list[str] = []
    bottom: list[str] = []

    def out(v: str) -> int:
        return sum(n for (a, b), n in weights.items() if a == v and b in left and b != v)

    def into(v: str) -> int:
        return sum(n for (a, b), n in weights.items() if b == v and a in left and a != v)

    while left:
        changed = True
        while changed:
            changed = False
            for v in sorted(left):
                if out(v) == 0:
                    bottom.insert(0, v)
                    left.discard(v)
                    changed = True
            for v in sorted(left):
                if into(v) == 0:
                    top.append(v)
                    left.discard(v)
                    changed = True
        if left:
            v = max(sorted(left), key=lambda x: out(x) - into(x))
            top.append(v)
            left.discard(v)
    return top + bottom


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("package", nargs="?", default="arena")
    args = parser.parse_args()
    pkg = args.package
    files = sorted((ROOT / pkg).rglob("*.py"))
    per_folder = Counter(p.parent.relative_to(ROOT).as_posix() for p in files)

    def room(module: str) -> str | None:
        parts = module.split(".")
        if len(parts) < 2 or parts[1] == "__main__":
            return None
        return parts[1]

    edges: dict[str, list[tuple[str, int, bool]]] = {}
    for p in files:
        edges[module_name(p, ROOT)] = imports_with_lines(p, ROOT)
    edges = {m: [x for x in e if x[0] in edges] for m, e in edges.items()}  # this package only
    graph = {m: {t for t, _, _ in e} - {m} for m, e in edges.items()}

    def place(module: str) -> str | None:
        """The room of a module, the package root being one more (``__main__`` has none)."""
        if module == f"{pkg}.__main__":
            return None
        return room(module) or ROOT_ROOM

    rooms = sorted({r for m in graph if (r := room(m)) is not None})
    room_graph: dict[str, set[str]] = defaultdict(set)
    weights: dict[tuple[str, str], int] = Counter()
    for m, e in edges.items():
        for t, _, _ in e:
            a, b = place(m), place(t)
            if a and b and a != b:
                room_graph[a].add(b)
                weights[(a, b)] += 1
    arrows = sum(len(v) for v in room_graph.values())
    placed = [*rooms, ROOT_ROOM]

    components = strongly_connected({r: room_graph.get(r, set()) for r in placed})
    where = {r: i for i, c in enumerate(components) for r in c}
    folded: dict[int, set[int]] = defaultdict(set)
    for a, targets in room_graph.items():
        for b in targets:
            if where[a] != where[b]:
                folded[where[a]].add(where[b])
    floor: dict[int, int] = {}
    for i in range(len(components)):  # Tarjan emits a component after everything it reaches
        floor[i] = 1 + max((floor[j] for j in folded[i]), default=0)

    module_components = strongly_connected(graph)
    circles = [c for c in module_components if len(c) > 1]
    module_floor: dict[str, int] = {}
    for c in module_components:  # everything a component imports was emitted before it
        below = {t for m in c for t in graph[m] if t not in c}
        f = 1 + max((module_floor[t] for t in below), default=0)
        module_floor.update(dict.fromkeys(c, f))

    order = top_down_order(weights, placed)
    height = {r: len(order) - i for i, r in enumerate(order)}
    up: list[str] = []
    for m, e in sorted(edges.items()):
        a = place(m)
        for t, line, _ in sorted(set(e)):
            b = place(t)
            if a and b and a != b and height[b] > height[a]:
                up.append(f"{m}:{line} -> {t}")

    print(f"package: {pkg}")
    print(f"modules: {len(files)} in {len(per_folder)} folders")
    for folder, n in sorted(per_folder.items()):
        print(f"  {folder + '/':<32} {n:3}")
    print(f"rooms: {len(rooms)} (and the package root)")
    print(f"arrows between rooms: {arrows}")
    print(f"floors of rooms: {max(floor.values(), default=0)}")
    print(f"floors of modules: {max(module_floor.values(), default=0)}")
    print(f"import circles: {len(circles)}")
    for c in circles:
        print("  " + " <-> ".join(c))
    print(f"rooms top to bottom: {' > '.join(order)}")
    print(f"imports that run back up: {len(up)}")
    for u in up:
        print("  " + u)


if __name__ == "__main__":
    main()
