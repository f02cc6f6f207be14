"""Processes that die with their parent, and whether a process is alive.

Shared by every long-running process of the service: the embedded Redis keeper
(:mod:`arena.core.embedded_redis`) and a running demo's record (:mod:`arena.ops.demo_record`)
ask whether a pid is alive; the worker (:mod:`arena.jobs.supervisor`, :mod:`arena.jobs.worker`)
makes its children die with it, and the clock, started by it, dies with it.

:func:`die_with_parent` makes the calling process receive a signal when its parent dies:
``prctl(PR_SET_PDEATHSIG)`` on Linux (the kernel sends it, even after a SIGKILL of the
parent), plus a thread that polls the parent pid (the portable fallback, and a second line on
Linux).  :func:`children_die_with_me` does it for every process forked from now on.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger(__name__)

PARENT_PID_ENV = "ARENA_PARENT_PID"
"""Environment variable through which a supervised child learns whom to die with."""

PR_SET_PDEATHSIG = 1
PARENT_POLL_S = 0.5
"""How often the portable fallback looks at the parent pid."""


# --- dying with the parent ---------------------------------------------------------------


def set_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux only).
    Returns whether it could."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int, sig: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent_pid:
            log.warning("parent %s is gone; stopping", parent_pid)
            os.kill(os.getpid(), sig)
            time.sleep(10 * PARENT_POLL_S)  # the handler had its chance to stop cleanly
            os._exit(1)


def die_with_parent(parent_pid: int | None = None, sig: int = signal.SIGTERM, *,
                    use_prctl: bool = True, watch: bool = True) -> None:
    """Make this process get ``sig`` when ``parent_pid`` (default: the current parent) dies.

    The kernel's death signal has a race (the parent may die before the call): so the parent
    pid is checked right after it, and a daemon thread keeps checking it (the only mechanism
    where ``prctl`` does not exist)."""
    parent = os.getppid() if parent_pid is None else parent_pid
    armed = use_prctl and set_parent_death_signal(sig)
    if os.getppid() != parent:  # the parent died before we could ask
        os.kill(os.getpid(), sig)
        return
    if watch or not armed:
        threading.Thread(target=_watch_parent, args=(parent, sig), daemon=True,
                         name="parent-watch").start()


def die_with_parent_from_env(sig: int = signal.SIGTERM) -> None:
    """For a child started by a :class:`arena.jobs.supervisor.ChildKeeper`: die with the pid
    it was given."""
    raw = os.environ.pop(PARENT_PID_ENV, "")
    if raw.isdigit():
        die_with_parent(int(raw), sig)


_HOOKED = False
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def children_die_with_me() -> None:
    """Every process this one forks from now on (RQ's work horses and its scheduler) gets
    SIGKILL when this process dies.  (A horse killed mid-match loses nothing: its lease
    runs out and the reconciler hands the match to another worker.)"""
    global _HOOKED
    if _HOOKED:
        return
    _HOOKED = True
    me = os.getpid()
    masks: dict[int, set[int | signal.Signals]] = {}  # the forking thread's mask, by thread

    def before() -> None:
        # A stop signal that reaches the child between the fork and ``in_child`` would run
        # the inherited handler (a flag nobody reads there) or be dropped once the handler
        # is reset: RQ stops its scheduler with one SIGTERM and waits for it without a
        # timeout, so a lost signal hangs the worker's shutdown.  Held back over the fork,
        # the signal stays pending until the child's default action is in place.
        masks[threading.get_ident()] = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)

    def in_parent() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, masks.pop(threading.get_ident()))

    def in_child() -> None:
        # A fork inherits the parent's Python signal handlers (ours set a flag in the
        # parent's supervision, which means nothing here): until the child installs its own
        # (RQ's scheduler does, a little later), SIGTERM must simply end it.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        # The same thread forked (a fork copies only it); a pending stop ends the child now.
        signal.pthread_sigmask(signal.SIG_SETMASK, masks.pop(threading.get_ident()))
        if os.getppid() == me:
            # The kernel signal only; a thread per horse would be wasted on Linux.
            die_with_parent(me, signal.SIGKILL, watch=not sys.platform.startswith("linux"))

    os.register_at_fork(before=before, after_in_parent=in_parent, after_in_child=in_child)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host.  A zombie (exited, not yet reaped) does
    not: it holds no lease and serves no worker name."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
