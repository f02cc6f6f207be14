"""What the fault drills share: slow bots, workers whose log the test reads, a Redis of the
test's own that it can stop and start again."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from arena.core.processes import PARENT_PID_ENV
from arena.ops.procs import Child
from sample_bots.sdk import serve_in_thread

from .conftest import admin_headers, register, worker_env


class SlowTable:
    """Four bot servers (one endpoint per seat) that think ``move_s`` on every move and
    play the lowest legal move (every deal ends, in ~50 turns)."""

    def __init__(self, move_s: float = 0.05) -> None:
        self.move_s = move_s
        self.servers = [serve_in_thread(self.choose, name=f"slow-{i}") for i in range(4)]
        self.urls = [server.url for server in self.servers]
        self.lock = threading.Lock()
        self.moves = 0
        self.playing: set[str] = set()
        """The match ids (as bots see them) that have asked for a move."""

    def choose(self, request: dict[str, Any]) -> str:
        time.sleep(self.move_s)
        with self.lock:
            self.moves += 1
            self.playing.add(str(request.get("match_id")))
        ids: list[str] = [m["id"] for m in request["legal_moves"]]
        return "pass" if "pass" in ids else ids[0]

    def quiet_for(self, seconds: float) -> bool:
        """Whether no move was asked for during the last ``seconds`` (waits that long)."""
        before = self.moves
        time.sleep(seconds)
        return self.moves == before

    def register(self, client: FlaskClient) -> list[int]:
        """Register the four (each passes its health check); ``playing`` starts empty."""
        ids = [register(client, f"slow-{i}", url)[0] for i, url in enumerate(self.urls)]
        with self.lock:
            self.playing.clear()  # the health checks' probes
        return ids

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


def post_match(client: FlaskClient, bots: list[int], deals: int = 1, seed: int = 5) -> int:
    r = client.post("/api/matches", json={"bots": bots, "deals": deals, "seed": seed},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    match_id: int = r.get_json()["id"]
    return match_id


def start_logged(args: list[str], env: dict[str, str], log: Path, name: str) -> Child:
    """``python -m arena <args>`` with its stdout and stderr appended to ``log``."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "arena", *args], stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT,
            env={**env, PARENT_PID_ENV: str(os.getpid())}, start_new_session=True)
    return Child(name, proc)


def logged_worker(app: Flask, log: Path, *args: str, **env: str) -> Child:
    """An ``arena worker`` of the app (no clock unless asked), its log in ``log``."""
    return start_logged(["worker", "--no-clock", *args], {**worker_env(app), **env}, log,
                        "worker")
