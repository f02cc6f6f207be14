"""Speed guard: the engine's instruction count against a reference commit, not wall time.

    python bench/engine_guard.py --against main       # or any commit, tag or branch
    make guard REF=main

The same fixed engine workload (whole deals of six presets, moves drawn by a seeded
``random.Random`` from the complete legal list, as ``bench/engine.py`` plays them) runs
under ``valgrind --tool=callgrind`` for this tree and for ``REF``, checked out in a temporary
git worktree, with the same interpreter.  Instruction counts do not depend on what else the
machine is doing, so the two figures compare even on a loaded shared machine, where timings
of a few per cent mean nothing.

Each tree runs twice: once with only the warm-up (interpreter start, imports, tables, one deal
per preset) and once with the workload added; the difference is the workload's instructions.
Both trees must play the same turns (a checksum is compared: if the moves differ, the engines
do not play the same game and the comparison would be meaningless; the golden-deal tests say
why).  Prints both counts and the ratio; exits 1 if this tree needs more than ``--limit``
(default 1.10) times REF's instructions.  About a minute on a two-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKLOAD = r"""
import gc, random, sys
tree, games = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, tree)
import referee
from referee import Deal, find_ruleset
assert referee.__file__.startswith(tree), (referee.__file__, tree)
PRESETS = ("standard", "hong-kong", "taiwan", "pusoy-dos", "three-player-stock", "president")
def play(rules, rng, count):
    turns = 0
    rnd = rng.random
    for _ in range(count):
        deal = Deal.new(rules, rng.getrandbits(32))
        while deal.outcome is None:
            moves = deal.legal_moves()
            deal.push(moves[int(rnd() * len(moves))])
        turns += len(deal.log)
    return turns
work = []
for name in PRESETS:
    rules = find_ruleset(name)
    rng = random.Random(1)
    play(rules, rng, 1)  # warm-up: tables and caches, also in the baseline run
    work.append((rules, rng))
gc.collect()  # the same collector state in both trees, whatever their imports allocated
gc.freeze()
print(sum(play(rules, rng, games) for rules, rng in work))
"""
"""Only ``from referee import Deal, find_ruleset`` (kept stable by the package) so that any
commit can run it, whatever its module layout."""

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def _run(python: str, script: Path, tree: Path, games: int, out: Path) -> tuple[int, int]:
    """(instructions, turns) of one callgrind run of the workload on ``tree``."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            python,
            str(script),
            str(tree),
            str(games),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        check=False,
    )
    found = _COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run failed on {tree}:\n{proc.stderr[-2000:]}")
    return int(found.group(1)), int(proc.stdout.strip() or 0)


def measure(python: str, trees: dict[str, Path], games: int, jobs: int) -> dict[str, int]:
    """Workload instructions per tree (full run minus warm-up-only run)."""
    for tree in trees.values():  # both load bytecode from files, neither compiles it
        subprocess.run(
            [python, "-m", "compileall", "-q", str(tree / "referee")], check=True, cwd=tree
        )
    with tempfile.TemporaryDirectory(prefix="engine-guard-") as tmp:
        script = Path(tmp) / "workload.py"
        script.write_text(WORKLOAD, encoding="utf-8")
        runs = [(name, tree, g) for name, tree in trees.items() for g in (0, games)]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(
                pool.map(
                    lambda r: _run(python, script, r[1], r[2], Path(tmp) / f"{r[0]}-{r[2]}.out"),
                    runs,
                )
            )
    counts: dict[str, int] = {}
    turns: dict[str, int] = {}
    for (name, _tree, g), (instr, t) in zip(runs, results, strict=True):
        counts[name] = counts.get(name, 0) + (instr if g else -instr)
        if g:
            turns[name] = t
    if len(set(turns.values())) != 1:
        raise SystemExit(f"the trees play different games (turns {turns}): not comparable")
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--against", default="main", help="reference commit (default: main)")
    ap.add_argument("--games", type=int, default=30, help="deals per preset (default: 30)")
    ap.add_argument("--limit", type=float, default=1.10, help="largest ratio allowed")
    ap.add_argument("--jobs", type=int, default=2, help="callgrind runs at once (default: 2)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install -y valgrind)", file=sys.stderr)
        return 2
    started = time.monotonic()
    ref = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{args.against}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="engine-guard-ref-") as tmp:
        ref_tree = Path(tmp) / "ref"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(ref_tree), ref],
            check=True,
        )
        try:
            counts = measure(
                sys.executable, {"current": ROOT, "ref": ref_tree}, args.games, args.jobs
            )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(ref_tree)],
                check=False,
            )
    ratio = counts["current"] / counts["ref"]
    result = {
        "against": args.against,
        "ref_commit": ref[:12],
        "games_per_preset": args.games,
        "current_instructions": counts["current"],
        "ref_instructions": counts["ref"],
        "ratio": round(ratio, 4),
        "limit": args.limit,
        "seconds": round(time.monotonic() - started, 1),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"  {key}: {value}")
    if ratio > args.limit:
        print(
            f"engine regressed: {ratio:.3f} x the instructions of {args.against}", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
