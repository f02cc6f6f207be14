"""Referee CPU per move: process CPU of a ``referee play``-style match divided by its moves.

Four sample bots (two random, greedy, planner) run as separate processes on 127.0.0.1, so
their CPU is not counted; this process runs ``run_match`` exactly as ``python -m referee
play`` does, and ``time.process_time()`` (all threads of this process) is read around each
match.  Two ways of calling the bots are measured side by side in one run, alternating
match by match so machine load hits both alike:

* ``botclient``: :class:`referee.wire.players.HttpPlayer` (the shipped client,
  referee.wire.httpbot);
* ``requests``: the same players over a keep-alive ``requests.Session`` (``trust_env`` off,
  ``json=`` and ``.json()``), i.e. what the referee paid per call when its client was built on
  requests/urllib3; the rest of the referee (request building, judging, recording) is shared.

Prints CPU per move (median over matches, and total CPU / total moves) for both sides and
their ratio.  ``--profile`` prints a cProfile of the shipped side instead.
Usage: ``python bench/referee_cpu.py [--json] [--matches N] [--deals N] [--profile]``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee import find_ruleset  # noqa: E402
from referee.runner.match import Limits, run_match  # noqa: E402
from referee.wire.netguard import NetPolicy  # noqa: E402
from referee.wire.players import HttpPlayer, Player, Reply  # noqa: E402

LOCAL = NetPolicy(allow_private=True)
RULES = find_ruleset("standard")
BOTS = ["random_bot", "greedy_bot", "planner_bot", "random_bot"]
LIMITS = Limits(deadline_ms=5000, time_bank_ms=0, max_strikes=None)


@contextlib.contextmanager
def sample_bots() -> Iterator[list[str]]:
    """Start the sample bots as processes on free loopback ports; yield their URLs."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", f"sample_bots.{name}", "--host", "127.0.0.1", "--port", "0"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in BOTS
    ]
    try:
        urls = []
        for p in procs:
            assert p.stderr is not None
            line = p.stderr.readline()  # "<name> listening on http://127.0.0.1:PORT[ (...)]"
            if "listening on " not in line:
                raise RuntimeError(f"bot did not start: {line!r}")
            urls.append(line.split("listening on ", 1)[1].split()[0])
        yield urls
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)


class RequestsPlayer(Player):
    """The baseline: the same bot calls over a keep-alive ``requests.Session``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.trust_env = False
        self.session.headers["Accept-Encoding"] = "identity"

    def _post(self, path: str, body: dict[str, Any], deadline_s: float) -> Reply:
        t0 = time.monotonic()
        r = self.session.post(self.url + path, json=body, timeout=(deadline_s, deadline_s),
                              allow_redirects=False)
        data = r.json()
        return Reply(data, time.monotonic() - t0)

    def describe(self, deadline_s: float) -> Reply:
        t0 = time.monotonic()
        r = self.session.get(self.url + "/", timeout=(deadline_s, deadline_s))
        return Reply(r.json(), time.monotonic() - t0)

    def start(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self._post("/start", info, deadline_s)

    def move(self, request: dict[str, Any], deadline_s: float) -> Reply:
        return self._post("/move", request, deadline_s)

    def end(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self._post("/end", info, deadline_s)

    def close(self) -> None:
        self.session.close()


def one_match(players: list[Player], seed: int, deals: int) -> tuple[float, int]:
    """(process CPU seconds, moves the bots were asked for) of one match."""
    c0 = time.process_time()
    rec = run_match(RULES, players, seed, deals, LIMITS, match_id=f"cpu-{seed}")
    cpu = time.process_time() - c0
    moves = sum(1 for d in rec.deals for t in d.turns if t.latency_ms is not None)
    assert not rec.strikes, rec.strikes[:3]
    return cpu, moves


def bench(matches: int, deals: int) -> dict[str, Any]:
    with sample_bots() as urls:
        sides: dict[str, list[Player]] = {
            "botclient": [HttpPlayer(u, policy=LOCAL) for u in urls],
            "requests": [RequestsPlayer(u) for u in urls],
        }
        per_move: dict[str, list[float]] = {k: [] for k in sides}
        totals: dict[str, list[float]] = {k: [0.0, 0] for k in sides}
        for players in sides.values():  # warm up pools and code paths
            one_match(players, 999, 1)
        for k in range(matches):
            order = list(sides) if k % 2 == 0 else list(reversed(sides))
            for name in order:  # the same seed on both sides: the same moves
                cpu, moves = one_match(sides[name], k, deals)
                per_move[name].append(cpu / moves)
                totals[name][0] += cpu
                totals[name][1] += moves
        for players in sides.values():
            for p in players:
                p.close()
    out: dict[str, Any] = {"matches_each": matches, "deals_per_match": deals}
    for name in sides:
        out[f"{name}_cpu_per_move_median_us"] = round(statistics.median(per_move[name]) * 1e6, 1)
        out[f"{name}_cpu_per_move_total_us"] = round(totals[name][0] / totals[name][1] * 1e6, 1)
        out[f"{name}_moves"] = int(totals[name][1])
    out["ratio_botclient_vs_requests"] = round(
        statistics.median(per_move["botclient"]) / statistics.median(per_move["requests"]), 3
    )
    return out


def profile(deals: int) -> None:
    with sample_bots() as urls:
        players: list[Player] = [HttpPlayer(u, policy=LOCAL) for u in urls]
        one_match(players, 999, 1)
        prof = cProfile.Profile(time.process_time)  # CPU, not wall time
        prof.enable()
        one_match(players, 1, deals)
        prof.disable()
        for p in players:
            p.close()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    parser.add_argument("--matches", type=int, default=10, help="matches on each side")
    parser.add_argument("--deals", type=int, default=4, help="deals per match")
    parser.add_argument("--profile", action="store_true", help="cProfile the shipped side")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.deals)
        return 0
    result = bench(args.matches, args.deals)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())
