"""The tournament part of ``arena demo``: the sample bots in a tournament, through the API.

Created and started with ``POST /api/tournaments`` (the operator token of the demo), played
by the demo's real worker processes, followed with a progress bar; then the standings and
the URL of the tournament page are printed.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import requests
from flask import Flask

from arena.tournaments.service import advance_all

from .tournament_cli import standings_text

DEMO_TOURNAMENT_TIMEOUT_S = 900.0


def run_demo_tournament(
    app: Flask,
    base: str,
    admin: str,
    *,
    fmt: str,
    deals: int,
    duplicate: bool,
    stop: threading.Event,
    say: Callable[[str], None],
) -> tuple[int | None, bool]:
    """Create, start and follow a tournament of every registered bot; returns its id and
    whether every match finished."""
    auth = {"Authorization": f"Bearer {admin}"}
    bots = requests.get(f"{base}/api/bots?limit=200", timeout=30).json()["items"]
    body: dict[str, Any] = {
        "name": f"Demo {fmt.replace('_', ' ')}" + (" (duplicate)" if duplicate else ""),
        "format": fmt, "bots": [b["id"] for b in bots], "deals": deals,
        "duplicate": duplicate, "start": True,
    }
    r = requests.post(f"{base}/api/tournaments", json=body, headers=auth, timeout=60)
    if r.status_code != 201:
        say(f"could not create the tournament: {r.status_code} {r.text}")
        return None, False
    t = r.json()
    tid = t["id"]
    url = f"{base}/tournaments/{tid}"
    say(f"\ntournament #{tid}: {t['name']}, {len(bots)} bots, {t['rounds']} round(s), "
        f"{deals} deal(s) per match" + (", every deal played from every seat" if duplicate
                                        else ""))
    say(f"watch it live: {url}")
    tty = sys.stdout.isatty()
    t0 = time.monotonic()
    last = ""
    while not stop.is_set():
        info = requests.get(f"{base}/api/tournaments/{tid}", timeout=30).json()
        p = info["progress"]
        total = sum(p.values())
        done = p["finished"] + p["failed"]
        filled = int(30 * done / total) if total else 0
        line = (f"[{'#' * filled}{'-' * (30 - filled)}] round {info['current_round']}/"
                f"{info['rounds']}: {done}/{total} matches, {p['running']} running")
        if tty:
            print("\r" + line + f"  {time.monotonic() - t0:5.1f}s", end="", flush=True)
        elif line != last:
            print(line, flush=True)
        last = line
        if info["state"] in ("finished", "cancelled"):
            break
        if time.monotonic() - t0 > DEMO_TOURNAMENT_TIMEOUT_S:
            say("\nthe demo tournament timed out")
            return tid, False
        advance_all(app)  # what the clock does; the workers advance it after each match
        time.sleep(0.3)
    if tty:
        print()
    if stop.is_set():
        return tid, False
    standings = requests.get(f"{base}/api/tournaments/{tid}/standings", timeout=30).json()
    say(f"\ntournament standings ({'places' if fmt == 'knockout' else 'points, then tie-breaks'}):")
    say(standings_text(standings, width=12))
    say(f"\ntournament: {url}  (logs: {base}/api/tournaments/{tid}/archive)")
    info = requests.get(f"{base}/api/tournaments/{tid}", timeout=30).json()
    return tid, info["progress"]["failed"] == 0
