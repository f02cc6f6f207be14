"""What a bot author types, from a fresh clone to a passing conformance run, in each language.

For each starter (and the Python SDK) this clones the repository into a temporary folder,
runs exactly the commands docs/starters.md gives an author (build, test, start the bot with
a signing secret), then ``python -m referee conformance URL --secret S --allow-private``
against it, and times each step.  Every step is a real command in a real shell; nothing is
skipped.  A figure for the closing note of issue 19 and for docs/starters.md.

    python bench/author_journey.py [--repo PATH] [--only go,java] [--json]

Package caches (npm's, Go's build cache) are whatever this machine has: say so when quoting
the figures.  The clone is local (``git clone PATH``): no network but npm's registry (the
TypeScript starter's dev dependencies) is used.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SECRET = "author-journey-secret"


@dataclass
class Journey:
    language: str
    folder: str
    steps: list[str]
    """Commands the author types in the starter's folder before starting it."""
    start: str
    """The command that serves the bot (``{port}`` and ``{secret}`` filled in)."""


JOURNEYS = [
    Journey("python", ".", [],
            ".venv/bin/python -m sample_bots.greedy_bot --port {port} --secret {secret}"),
    Journey("javascript", "starters/javascript", ["npm ci --no-audit --no-fund", "npm test"],
            "node dist/src/main.js --port {port} --secret {secret}"),
    Journey("go", "starters/go", ["go vet ./...", "go test ./...", "go build -o bot ."],
            "./bot -port {port} -secret {secret}"),
    Journey("java", "starters/java", ["make build", "make test"],
            "java -jar build/bigtwo-starter.jar --port {port} --secret {secret}"),
]


@dataclass
class Result:
    language: str
    commands: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    summary: str = ""
    passed: bool = False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(cmd: str, cwd: Path, result: Result, label: str) -> str:
    result.commands.append(cmd)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, shell=True, cwd=cwd, capture_output=True, text=True, timeout=900)
    result.seconds[label] = round(time.perf_counter() - t0, 2)
    if done.returncode not in (0, 1) or (done.returncode and "conformance" not in cmd):
        raise SystemExit(f"{result.language}: `{cmd}` failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the bot exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listened on {port} within {timeout_s} s")


def journey(j: Journey, repo: str, root: Path) -> Result:
    result = Result(j.language)
    clone = root / j.language
    run(f"git clone --quiet {repo} {clone}", root, result, "clone")
    # The kit (and the Python SDK's bots) run from the project's venv, as the README says.
    run("make .venv/.installed", clone, result, "install the kit: make .venv/.installed")
    here = clone / j.folder
    result.commands.append(f"cd {j.folder}")
    for i, step in enumerate(j.steps):
        run(step, here, result, f"step{i + 1}: {step}")
    port = free_port()
    start = j.start.format(port=port, secret=SECRET)
    result.commands.append(start + " &")
    t0 = time.perf_counter()
    proc = subprocess.Popen(start, shell=True, cwd=here, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_listening(port, proc)
        result.seconds["start"] = round(time.perf_counter() - t0, 2)
        check = (f".venv/bin/python -m referee conformance http://127.0.0.1:{port} "
                 f"--secret {SECRET} --allow-private")
        out = run(check, clone, result, "conformance")
        result.summary = next((line for line in out.splitlines()
                               if line.startswith("summary:")), out[-300:])
        result.passed = bool(re.search(r" 0 failed", result.summary))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    result.seconds["total"] = round(sum(result.seconds.values()), 2)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]),
                    help="the repository to clone (default: this checkout)")
    ap.add_argument("--only", default="", help="comma-separated languages")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    wanted = {x for x in args.only.split(",") if x}
    root = Path(tempfile.mkdtemp(prefix="author-journey-"))
    results = []
    try:
        for j in JOURNEYS:
            if not wanted or j.language in wanted:
                results.append(journey(j, args.repo, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps([r.__dict__ for r in results], indent=2))
    else:
        for r in results:
            print(f"## {r.language}: {'PASS' if r.passed else 'FAIL'} in {r.seconds['total']} s")
            for cmd in r.commands:
                print(f"    $ {cmd}")
            for label, s in r.seconds.items():
                print(f"    {label:<40} {s:>7.2f} s")
            print(f"    {r.summary}")
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
