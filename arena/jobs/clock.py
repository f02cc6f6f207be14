"""The clock: periodic duties of the service, in one process at a time.

Every ``CLOCK_TICK_S`` the clock runs what is due: the reconciler
(``RECONCILE_INTERVAL_S``), the waiting challenges whose slot came free
(``CHALLENGE_DISPATCH_INTERVAL_S``), a ladder round (``LADDER_INTERVAL_S``, when
``LADDER_ENABLED``), the health sweep (a tenth of ``HEALTH_SWEEP_INTERVAL_S``, so each bot
is checked within about one interval of its last check) and the webhook sweep
(``WEBHOOK_SWEEP_S``: the retries that are due, :mod:`arena.notify.delivery`).
``arena worker`` starts one clock per
worker process by default (``WORKER_CLOCK``); they elect a leader with a Redis lock that
expires after a few ticks, so with many workers on many machines exactly one clock works at
a time and another takes over within seconds when it dies.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from flask import Flask

from arena.bots.sweep import sweep
from arena.core import metrics
from arena.core.queue import get_queue
from arena.core.rediskeys import redis_key
from arena.notify.delivery import sweep as webhook_sweep
from arena.play.challenges import dispatch as start_challenges
from arena.play.ladder import run_round

from .reconcile import reconcile

log = logging.getLogger(__name__)


def leader_key(config: Any) -> str:
    """The clocks' leader lock: one per deployment (``<REDIS_NAMESPACE>:clock:leader``)."""
    return redis_key(config, "clock", "leader")


SWEEPS_PER_INTERVAL = 10
"""The health sweep runs this many times per ``HEALTH_SWEEP_INTERVAL_S``: a bot becomes due
between two sweeps, and with one sweep per interval it would wait for the next one, i.e. be
checked every *two* intervals.  (Sweeps are cheap: one query of the due bots.)"""


def sweep_every(cfg: Any) -> float:
    """Seconds between two health sweeps of the clock."""
    interval = float(cfg["HEALTH_SWEEP_INTERVAL_S"])
    return max(float(cfg["CLOCK_TICK_S"]), interval / SWEEPS_PER_INTERVAL)


class Clock:
    def __init__(self, app: Flask) -> None:
        self.app = app
        self.me = f"{socket.gethostname()}:{os.getpid()}"
        self.last: dict[str, float] = {}
        self.stopped = False

    def lead(self) -> bool:
        """Take or keep the leader lock (expires after three ticks without renewal)."""
        r = get_queue(self.app).redis
        ttl_ms = int(max(3.0, 3 * float(self.app.config["CLOCK_TICK_S"])) * 1000)
        key = leader_key(self.app.config)
        if r.set(key, self.me, nx=True, px=ttl_ms):
            return True
        holder = r.get(key)
        if isinstance(holder, bytes):
            holder = holder.decode()
        if holder == self.me:
            r.pexpire(key, ttl_ms)
            return True
        return False

    def duties(self) -> list[tuple[str, float, Callable[[], object]]]:
        cfg = self.app.config
        out: list[tuple[str, float, Callable[[], object]]] = [
            ("reconcile", float(cfg["RECONCILE_INTERVAL_S"]), lambda: reconcile(self.app)),
            ("health", sweep_every(cfg), lambda: sweep(self.app)),
            ("webhooks", float(cfg["WEBHOOK_SWEEP_S"]), lambda: webhook_sweep(self.app)),
        ]
        from arena.tournaments.service import advance_all

        out.append(("tournaments", float(cfg["TOURNAMENT_ADVANCE_INTERVAL_S"]),
                    lambda: advance_all(self.app)))
        out.append(("challenges", float(cfg["CHALLENGE_DISPATCH_INTERVAL_S"]),
                    lambda: start_challenges(self.app)))
        if cfg["LADDER_ENABLED"]:
            out.append(("ladder", float(cfg["LADDER_INTERVAL_S"]), lambda: run_round(self.app)))
        return out

    def tick(self) -> list[str]:
        """Run whatever is due (if leader); returns the names of the duties run."""
        leading = self.lead()
        metrics.CLOCK_LEADER.set(1 if leading else 0)
        if not leading:
            return []
        ran = []
        now = time.monotonic()
        for name, every, duty in self.duties():
            if now - self.last.get(name, -1e18) < every:
                continue
            self.last[name] = now
            try:
                with metrics.timed(metrics.CLOCK_DUTY_SECONDS.labels(name)):
                    duty()
                ran.append(name)
            except Exception:
                metrics.CLOCK_DUTY_FAILURES.labels(name).inc()
                log.exception("clock duty %s failed", name)
        return ran

    def run(self) -> None:
        tick = float(self.app.config["CLOCK_TICK_S"])
        log.info("clock %s started", self.me)
        while not self.stopped:
            try:
                self.tick()
            except Exception as exc:  # Redis or database down: try again next tick
                log.warning("clock tick failed: %s", exc)
            time.sleep(tick)
