"""Child processes of the demo (and the tests): sample bots, workers, and how to stop them.

Every child runs in its own session (process group) so a Ctrl-C in the terminal reaches the
parent only, which then stops its children in order.  Children are stopped by their pid,
SIGTERM first and SIGKILL after a grace period.  Arena children also die with their parent
when it is killed without a chance to stop them (``ARENA_PARENT_PID``, see
:mod:`arena.core.processes`): a killed demo or test run leaves no worker behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

LISTENING = re.compile(r"listening on (http://[^\s\"]+)")
"""The line a child writes once it listens (plain, or inside a JSON log line)."""


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    url: str | None = None
    log: list[str] = field(default_factory=list)
    drain: threading.Thread | None = None
    """The thread that keeps reading the child's stderr (:func:`_drain`), if any."""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, SIGKILL after ``grace_s``; then SIGKILL whatever the child left behind
        (an RQ worker's scheduler process or work horse outlives a killed worker)."""
        family = descendants(self.proc.pid)
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        for pid in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.close_pipes()

    def close_pipes(self) -> None:
        """Close our ends of the child's pipes once it is gone (the drain thread closes
        stderr at its end of file; a pipe left open is a leaked descriptor)."""
        if self.drain is not None:
            self.drain.join(timeout=5)
            if self.drain.is_alive():
                return  # something still holds the pipe: the thread closes it at EOF
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def descendants(pid: int) -> list[int]:
    """The children, grandchildren... of ``pid`` now (Linux /proc; empty elsewhere)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def start_bot(module: str, *, port: int = 0, host: str = "127.0.0.1",
              env: Mapping[str, str] | None = None, timeout_s: float = 20.0,
              args: Sequence[str] = ()) -> Child:
    """Start ``python -m sample_bots.<module> --port <port> [args]`` and wait for its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", f"sample_bots.{module}", "--host", host, "--port", str(port),
         *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    child = Child(module, proc)
    child.url = _wait_for_url(proc, timeout_s)
    if child.url is None:
        child.stop()
        raise RuntimeError(f"bot {module} did not start")
    # Keep draining stderr so the bot never blocks on a full pipe.
    child.drain = _drain(proc)
    return child


def _wait_for_url(proc: subprocess.Popen[bytes], timeout_s: float) -> str | None:
    """The URL a child prints on stderr once it listens (None: it did not in time)."""
    assert proc.stderr is not None
    url = None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    buf = b""
    while time.monotonic() < deadline and proc.poll() is None:
        if not sel.select(timeout=0.1):
            continue
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        buf += chunk
        m = LISTENING.search(buf.decode(errors="replace"))
        if m:
            url = m.group(1)
            break
    sel.close()
    return url


def _drain(proc: subprocess.Popen[bytes]) -> threading.Thread:
    """Read the child's stderr until its end (then close it) in a daemon thread."""
    stream = proc.stderr
    assert stream is not None

    def run() -> None:
        with contextlib.suppress(OSError, ValueError), stream:
            while stream.read(65536):
                pass

    thread = threading.Thread(target=run, daemon=True, name=f"drain-{proc.pid}")
    thread.start()
    return thread


def start_arena(args: list[str], *, env: Mapping[str, str], name: str,
                quiet: bool = True, cwd: str | None = None,
                python: str | None = None) -> Child:
    """Start ``python -m arena <args>`` with ``env`` (a worker, a clock, a server); ``cwd``:
    the checkout whose ``arena`` runs (``-m`` imports from the working folder first: a bench
    runs another branch's worker this way), ``python`` its interpreter (default: this one)."""
    from arena.core.processes import PARENT_PID_ENV

    out = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen(
        [python or sys.executable, "-m", "arena", *args],
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=out,
        env={**env, PARENT_PID_ENV: str(os.getpid())},
        start_new_session=True,
        cwd=cwd,
    )
    return Child(name, proc)


def start_relay(env: Mapping[str, str], *, port: int = 0, host: str = "127.0.0.1",
                timeout_s: float = 30.0) -> Child:
    """Start ``arena live`` (the live relay) and wait until it listens; ``url`` is its
    base (``http://host:port``)."""
    from arena.core.processes import PARENT_PID_ENV

    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "live", "--host", host, "--port", str(port)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**env, PARENT_PID_ENV: str(os.getpid())}, start_new_session=True,
    )
    child = Child("live", proc)
    url = _wait_for_url(proc, timeout_s)
    if url is None:
        child.stop()
        raise RuntimeError("the live relay did not start")
    child.url = url.removesuffix("/live/")
    child.drain = _drain(proc)
    return child


def stop_all(children: list[Child]) -> None:
    for c in reversed(children):
        if c.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(c.pid, signal.SIGTERM)
    for c in reversed(children):
        c.stop()
