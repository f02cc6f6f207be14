"""What hanging DNS and slow-to-refuse bots cost a well-behaved bot in the same worker process.

    python bench/dns_isolation.py                    # this tree and main, side by side
    python bench/dns_isolation.py --against HEAD~3   # any commit, tag or branch
    python bench/dns_isolation.py --json

A worker plays its matches on threads of one process, so whatever the referee keeps per
process is shared by every bot it calls.  The scenario, run once per tree in a process of its
own (this tree, and ``--against``'s ``referee`` and ``sample_bots`` extracted with
``git archive``): ``--hanging`` bots whose names hang in DNS (a resolver, injected at the
clients' resolver seam, that blocks on the real lookup thread until the scenario ends, as a
name server that never answers does) and ``--slow`` bots at a loopback address that is slow
to refuse (a listener with a full accept queue: the kernel drops the SYN and ``connect``
waits), four to a table, each table a match on its own thread; once every hostile table has
played a turn, one well-behaved bot (``sample_bots.sdk.serve_in_thread``, a name that resolves
at once) plays a match against three in-process players.  Every table uses the arena's default
limits (1 s a move, a 10 s time bank, 10 strikes, 5 s for ``GET /``, ``/start``, ``/end``).

Printed per tree: the well-behaved bot's strikes, failed courtesy calls and ``/move``
latencies (p50, p95, max), the hostile bots' strikes until its match ended (their matches are
then left behind), how often each hanging name was asked, the most DNS lookup threads alive at
once, and the scenario's wall time.  All traffic stays
on 127.0.0.1; names end in ``.test`` and never reach a real resolver.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCENARIO = r'''
import json, os, socket, sys, threading, time
tree, hanging_n, slow_n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, tree)
import referee
from referee import find_ruleset
from referee.runner.match import Limits, run_match
from referee.wire.httpbot import BotClient
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer, LocalPlayer
from sample_bots.sdk import serve_in_thread
assert referee.__file__.startswith(tree), (referee.__file__, tree)

LOCAL = NetPolicy(allow_private=True)
RULES = find_ruleset("standard")
released = threading.Event()
asked = {}
asked_lock = threading.Lock()
answers = {}
hanging = set()

def resolver(host):
    with asked_lock:
        asked[host] = asked.get(host, 0) + 1
    if host in hanging:
        released.wait(600)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    return answers[host]

def first_legal(request):
    return {"move": request["legal_moves"][0]["id"]}

good = serve_in_thread(first_legal, host="127.0.0.1", port=0, name="well-behaved")
port = good.server_address[1]
listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(0)
black_hole = listener.getsockname()[1]
fillers = []
while True:
    probe = socket.socket(); probe.settimeout(0.5); fillers.append(probe)
    try:
        probe.connect(("127.0.0.1", black_hole))
    except TimeoutError:
        break

answers["good.test"] = ["127.0.0.1"]
urls = []
for i in range(hanging_n):
    hanging.add(f"hang-{i}.test")
    urls.append(f"http://hang-{i}.test:{port}/")
for i in range(slow_n):
    answers[f"slow-{i}.test"] = ["127.0.0.1"]
    urls.append(f"http://slow-{i}.test:{black_hole}/")

def player(url, label):
    return HttpPlayer(url, label=label, client=BotClient(url, policy=LOCAL, resolver=resolver))

records, threads, errors = {}, [], []
playing = threading.Semaphore(0)
peak = [0]
sampling = threading.Event()

def sample():
    while not sampling.is_set():
        peak[0] = max(peak[0], sum(t.name == "bigtwo-dns" for t in threading.enumerate()))
        time.sleep(0.01)

hostile_faults = []

def play(seats, seed, signal):
    seen = threading.Event()
    def on_turn(turn):
        if signal and turn.fault not in (None, "forfeited"):  # a call that failed
            hostile_faults.append(turn.fault)
        if signal and not seen.is_set():
            seen.set(); playing.release()
    def run():
        try:
            records[seed] = run_match(RULES, seats, seed, 1, Limits(), on_turn=on_turn)
        except BaseException as exc:
            errors.append(repr(exc))
            if signal and not seen.is_set():
                playing.release()
    thread = threading.Thread(target=run, daemon=True); thread.start(); threads.append(thread)

started = time.monotonic()
threading.Thread(target=sample, daemon=True).start()
tables = len(urls) // 4
for t in range(tables):
    play([player(u, f"hostile:{t}:{i}") for i, u in enumerate(urls[4 * t:4 * t + 4])],
         100 + t, True)
for _ in range(tables):
    playing.acquire(timeout=600)
innocent_started = time.monotonic()
play([player(f"http://good.test:{port}/", "good"), LocalPlayer(first_legal),
      LocalPlayer(first_legal), LocalPlayer(first_legal)], 1, False)
threads[-1].join(900)
innocent_s = time.monotonic() - innocent_started
sampling.set()
wall = time.monotonic() - started
rec = records.get(1)
stats = rec.latency[0] if rec else None
hostile = list(hostile_faults)  # until the well-behaved bot's match ended; theirs go on
print(json.dumps({
    "good_strikes": len([s for s in rec.strikes if s.seat == 0]) if rec else None,
    "good_strike_reasons": sorted({s.reason for s in rec.strikes if s.seat == 0}) if rec else None,
    "good_failed_calls": [n.call for n in rec.notes if n.seat == 0] if rec else None,
    "good_forfeited": bool(rec and any(f.seat == 0 for f in rec.forfeits)),
    "good_move_calls": stats.calls if stats else None,
    "good_move_p50_ms": stats.p50_ms if stats else None,
    "good_move_p95_ms": stats.p95_ms if stats else None,
    "good_move_max_ms": stats.max_ms if stats else None,
    "good_match_s": round(innocent_s, 2),
    "hostile_strikes": len(hostile),
    "hostile_strike_reasons": sorted(set(hostile)),
    "hanging_names_asked_max": max((asked.get(n, 0) for n in hanging), default=0),
    "hanging_names_never_asked": sum(1 for n in hanging if not asked.get(n)),
    "peak_dns_threads": peak[0],
    "wall_s": round(wall, 1),
    "errors": errors,
}), flush=True)
os._exit(0)  # the hostile matches and their hung lookups are left behind, as in a worker
'''
"""Only APIs every tree since the SSRF guard has (``BotClient(resolver=)``, ``HttpPlayer(client=)``,
``run_match(on_turn=)``, ``serve_in_thread``), so that any commit can run it."""


def run_tree(tree: Path, hanging: int, slow: int) -> dict[str, object]:
    """The scenario's figures for ``tree``, in a process of its own."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(SCENARIO)
        script = handle.name
    try:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(
            [sys.executable, script, str(tree), str(hanging), str(slow)],
            capture_output=True, text=True, env=env, cwd=tree, check=False, timeout=1800,
        )
    finally:
        os.unlink(script)
    if proc.returncode != 0:
        raise RuntimeError(f"scenario failed on {tree}:\n{proc.stderr[-3000:]}")
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def extract(ref: str, into: Path) -> None:
    """``referee`` and ``sample_bots`` as they are at ``ref``, without touching the worktree."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "referee", "sample_bots"],
        capture_output=True, check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--against", default="main", help="reference commit (default: main)")
    ap.add_argument("--hanging", type=int, default=40, help="bots whose names hang (default 40)")
    ap.add_argument("--slow", type=int, default=8, help="bots slow to refuse (default 8)")
    ap.add_argument("--only-this", action="store_true", help="skip the reference tree")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    started = time.monotonic()
    results: dict[str, object] = {"hanging": args.hanging, "slow": args.slow}
    results["this_tree"] = run_tree(ROOT, args.hanging, args.slow)
    if not args.only_this:
        ref = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{args.against}^{{commit}}"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        with tempfile.TemporaryDirectory(prefix="dns-isolation-ref-") as tmp:
            extract(ref, Path(tmp))
            results["against"] = {"ref": args.against, "commit": ref[:12],
                                  **run_tree(Path(tmp), args.hanging, args.slow)}
    results["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(results))
        return 0
    trees = [k for k in ("against", "this_tree") if k in results]
    rows = list(results["this_tree"])  # type: ignore[arg-type]
    print(f"{args.hanging} bots with hanging DNS, {args.slow} slow to refuse, one well-behaved bot")
    print(f"  {'':28}" + "".join(f"{name:>24}" for name in trees))
    for key in rows:
        cells = "".join(f"{json.dumps(results[t].get(key))[:23]:>24}"  # type: ignore[union-attr]
                        for t in trees)
        print(f"  {key:28}{cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
