"""Rewrite code written against the flat ``arena/`` onto its rooms (``arena/core/``, ``play/``...).

    python scripts/rooms_rewrite.py FILE...      # rewrite these files in place
    python scripts/rooms_rewrite.py --move       # (once, done) git mv the modules, then rewrite

For a branch started before the rooms: after ``git rebase`` onto them, run it on the files the
branch added or changed (``git diff --name-only main...``); a new flat module ``arena/foo.py``
should then be ``git mv``-ed into the room it belongs to (docs/architecture.md) and the script
run on it once more.  It rewrites

* every import of a moved module, relative or absolute, at module level or in a function
  (a relative import is resolved where the file was: pass ``--was arena/foo.py`` for a file
  that has moved since);
* every dotted name (``arena.jobs.play_match``, ``:mod:`arena.bots```) and path
  (``arena/jobs.py``) of a moved module in code, strings, comments and Markdown.

Then ``ruff check --fix --select I`` sorts the import blocks it touched.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# old module (dotted, under arena.) -> new module
MOVES: dict[str, str] = {
    # core: what every room stands on
    "config": "core.config",
    "models": "core.models",
    "tournaments.models": "core.tournament_models",
    "storage": "core.storage",
    "queue": "core.queue",
    "embedded_redis": "core.embedded_redis",
    "security": "core.security",
    "signing": "core.signing",
    "privacy": "core.privacy",
    "families": "core.families",
    "bookkeeping": "core.bookkeeping",
    "heap": "core.heap",
    # play: matches and what they are worth
    "matches": "play.matches",
    "ladder": "play.ladder",
    "ratings": "play.ratings",
    "reseed": "play.reseed",
    "deal_secrecy": "play.deal_secrecy",
    "replay": "play.replay",
    # bots: submission, checks, sweep, call records
    "bots": "bots.service",
    "sweep": "bots.sweep",
    "calls": "bots.calls",
    # web: what every route shares
    "errors": "web.errors",
    "error_pages": "web.error_pages",
    "limits": "web.limits",
    "idempotency": "web.idempotency",
    "readcache": "web.readcache",
    "sharedcache": "web.sharedcache",
    "pagination": "web.pagination",
    "owners": "web.owners",
    "request_deadline": "web.request_deadline",
    "charts": "web.charts",
    "openapi": "web.openapi",
    "apidocs": "web.apidocs",
    "shapes": "web.shapes",
    # jobs: job bodies and the processes that run them
    "jobs": "jobs.bodies",
    "threadpool_worker": "jobs.threadpool_worker",
    "worker": "jobs.worker",
    "execution": "jobs.execution",
    "supervisor": "jobs.supervisor",
    "clock": "jobs.clock",
    "reconcile": "jobs.reconcile",
    # ops: commands and the processes around them
    "cli": "ops.cli",
    "cli_app": "ops.cli_app",
    "startup": "ops.startup",
    "demo": "ops.demo",
    "demo_record": "ops.demo_record",
    "procs": "ops.procs",
    "edge": "ops.edge",
    "tournaments.cli": "ops.tournament_cli",
    "tournaments.demo": "ops.tournament_demo",
}
PACKAGES = {"shapes"}  # moved whole


def new_name(old: str) -> str:
    """``arena.jobs.play_match`` -> ``arena.jobs.bodies.play_match`` (longest moved prefix)."""
    if not old.startswith("arena."):
        return old
    rest = old[len("arena."):]
    parts = rest.split(".")
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in MOVES:
            return "arena." + ".".join([MOVES[head], *parts[n:]])
    return old


_DOTTED = re.compile(
    r"(?<![A-Za-z0-9_./])arena\.("
    + "|".join(sorted((re.escape(k) for k in MOVES), key=len, reverse=True))
    + r")(?![A-Za-z0-9_])"
)
_PATH = re.compile(
    r"(?<![A-Za-z0-9_./])arena/("
    + "|".join(sorted((re.escape(k.replace(".", "/")) for k in MOVES), key=len, reverse=True))
    + r")(\.py|/)"
)


def rewrite_text(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        if "extensions" in line:  # app.extensions["arena.queue"]: a key, not a module
            out.append(line)
            continue
        line = _DOTTED.sub(lambda m: new_name("arena." + m.group(1)), line)

        def path(m: re.Match[str]) -> str:
            old = m.group(1).replace("/", ".")
            new = MOVES[old].replace(".", "/")
            return f"arena/{new}{m.group(2)}"

        out.append(_PATH.sub(path, line))
    return "".join(out)


# --- imports --------------------------------------------------------------------------------


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_old_module(name: str, old_modules: set[str]) -> bool:
    return name in old_modules


def rewrite_imports(text: str, was: str, now: str, is_pkg: bool, old_modules: set[str]) -> str:
    """Rewrite the relative imports and ``from arena import x`` of a file.

    ``was``/``now``: the file's module name before and after the move.  Absolute dotted names
    are left to :func:`rewrite_text`.
    """
    tree = ast.parse(text)
    old_pkg = was if is_pkg else was.rpartition(".")[0]
    new_pkg = now if is_pkg else now.rpartition(".")[0]
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement), 0-based
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            anchor = old_pkg.split(".")[: len(old_pkg.split(".")) - (node.level - 1)]
            base = ".".join(anchor + ([node.module] if node.module else []))
        elif node.module == "arena":
            base = "arena"
        else:
            continue
        if not base.startswith("arena"):
            continue
        # which old module each name comes from
        groups: dict[str, list[str]] = {}
        for alias in node.names:
            full = f"{base}.{alias.name}"
            asname = f" as {alias.asname}" if alias.asname else ""
            if full in old_modules:
                target = new_name(full)
                parent, _, last = target.rpartition(".")
                groups.setdefault(parent, []).append(last + (asname or
                                                             (f" as {alias.name}"
                                                              if last != alias.name else "")))
            else:
                groups.setdefault(new_name(base), []).append(alias.name + asname)
        moved_names = any(f"{base}.{a.name}" in old_modules for a in node.names)
        if not moved_names and new_name(base) == base and (not node.level or old_pkg == new_pkg):
            continue  # reads the same from where the file is now
        indent = " " * node.col_offset
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        original = "".join(lines[first:last + 1])
        if not moved_names:  # only the module changes: keep the names as they were laid out
            target = new_name(base)
            if node.level and target.rpartition(".")[0] == new_pkg:
                src = "." + target.rpartition(".")[2]
            elif node.level and target == new_pkg:
                src = "."
            else:
                src = target
            replacement = re.sub(r"from\s+\.*[\w.]*\s+import", f"from {src} import", original,
                                 count=1)
            if replacement != original:
                edits.append((first, last, replacement))
            continue
        stmts = []
        for parent, names in groups.items():
            if node.level and parent == new_pkg:
                src = "."
            elif parent.startswith(new_pkg + ".") and node.level:
                src = "." + parent[len(new_pkg) + 1:]
            else:
                src = parent
            one = f"{indent}from {src} import {', '.join(names)}"
            if len(one) > 100:
                inner = "".join(f"{indent}    {n},\n" for n in names)
                one = f"{indent}from {src} import (\n{inner}{indent})"
            stmts.append(one)
        replacement = "\n".join(stmts) + "\n"
        # keep the trailing comment of a one-line import (a noqa, say)
        if first == last and "#" in original:
            comment = original[original.index("#"):].rstrip("\n")
            replacement = replacement.rstrip("\n") + "  " + comment + "\n"
        if replacement != original:
            edits.append((first, last, replacement))
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first:last + 1] = [replacement]
    return "".join(lines)


def old_module_set() -> set[str]:
    """Every module of the flat layout (so a relative import written for it can be resolved)."""
    mods = {"arena"}
    for k in MOVES:
        mods.add("arena." + k)
    for sub in ("live", "routes", "tournaments", "migrations"):
        mods.add(f"arena.{sub}")
        for p in (ROOT / "arena" / sub).glob("*.py"):
            if p.stem != "__init__":
                mods.add(f"arena.{sub}.{p.stem}")
    for p in (ROOT / "arena" / "web" / "shapes").glob("*.py"):
        if p.stem != "__init__":
            mods.add(f"arena.shapes.{p.stem}")
    for p in (ROOT / "arena" / "shapes").glob("*.py"):
        if p.stem != "__init__":
            mods.add(f"arena.shapes.{p.stem}")
    return mods


def rewrite_file(path: Path, was: Path | None, old_modules: set[str]) -> bool:
    text = path.read_text()
    new = rewrite_text(text)
    if path.suffix == ".py":
        now_mod = module_of(path)
        was_mod = module_of(was) if was is not None else now_mod
        if was is None and now_mod.startswith("arena"):
            was_mod = now_mod
        new = rewrite_imports(new, was_mod, now_mod, path.name == "__init__.py", old_modules)
    if new != text:
        path.write_text(new)
        return True
    return False


def move() -> None:
    renames: dict[Path, Path] = {}
    for old, target in MOVES.items():
        src = ROOT / "arena" / (old.replace(".", "/") + ("" if old in PACKAGES else ".py"))
        dst = ROOT / "arena" / (target.replace(".", "/") + ("" if old in PACKAGES else ".py"))
        dst.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", str(src), str(dst)], check=True, cwd=ROOT)
        if old in PACKAGES:
            for p in dst.glob("*.py"):
                renames[p] = src / p.name
        else:
            renames[dst] = src
    old_modules = old_module_set()
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True,
                             cwd=ROOT).stdout.split()
    changed = []
    for name in tracked:
        p = ROOT / name
        if p.suffix not in (".py", ".md", ".toml", ".cfg", ".ini", ".txt", ".conf", ".yml",
                            ".yaml", ".html", "") or not p.is_file():
            continue
        if p.suffix == "" and p.name not in ("Procfile", "Makefile", "run"):
            continue
        if rewrite_file(p, renames.get(p), old_modules):
            changed.append(name)
    print(f"rewrote {len(changed)} files")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--move", action="store_true")
    parser.add_argument("--was", type=Path, help="where the (single) file was before it moved")
    args = parser.parse_args()
    if args.move:
        move()
        return
    old_modules = old_module_set()
    for f in args.files:
        was = (ROOT / args.was).resolve() if args.was else None
        if rewrite_file(f.resolve(), was, old_modules):
            print(f"rewrote {f}")
    sys.exit(0)


if __name__ == "__main__":
    main()
