"""A PostgreSQL primary and a streaming standby of the drill's own, on loopback.

Two real clusters (``initdb``, ``pg_basebackup -R``) in a temporary folder, each a
``postgres`` server listening on a free port of 127.0.0.1 only (and on a unix socket in that
folder, never the system's).  The primary has ``wal_level=replica``, a replication role
(``replicator``) and a ``pg_hba.conf`` that trusts 127.0.0.1 only; the standby streams from
it, synchronously by default (``synchronous_standby_names``: a commit returns once the
standby has it, so a committed result survives the primary's loss), or asynchronously.

The drill can then lose the primary the hard way (:meth:`PgPair.kill_primary`: SIGKILL to
its postmaster and every backend at once, as when its machine dies) and promote the standby
(:meth:`PgPair.promote`, ``pg_ctl promote``).  :meth:`PgPair.detach_standby` stops the
standby's streaming so that an asynchronous standby falls behind for certain: the commits
of that moment are lost with the primary, as when a standby lags.

PostgreSQL refuses to run as root: run as root, the servers run as the ``postgres`` user
(``setpriv``), which is given the folder; run as anyone else, as that user.  The binaries
are ``ARENA_PG_BINDIR``'s, else the newest of ``/usr/lib/postgresql/*/bin`` (Debian), else
``pg_config --bindir``'s.  Nothing here touches another PostgreSQL server.

Used by ``tests/deploy/test_pg_failover.py`` and ``bench/pg_failover_drill.py``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from arena.ops.procs import descendants
from tests.ports import free_port

SUPERUSER = "arena"
"""The clusters' superuser (initdb ``-U``), which the arena connects as."""
DATABASE = "arena"
REPLICATION_USER = "replicator"
STANDBY_NAME = "standby"
"""The standby's ``application_name``, which ``synchronous_standby_names`` names."""
TOOLS = ("initdb", "pg_ctl", "pg_basebackup", "postgres")


class PgUnavailableError(Exception):
    """No PostgreSQL server binaries, or no user they may run as."""


def find_bindir() -> Path:
    """The folder of ``initdb``, ``pg_ctl``, ``pg_basebackup`` and ``postgres`` (module
    docstring); raises :class:`PgUnavailableError` saying what was looked at."""
    candidates: list[Path] = []
    if os.environ.get("ARENA_PG_BINDIR"):
        candidates.append(Path(os.environ["ARENA_PG_BINDIR"]))
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = [p for p in debian.iterdir() if p.name.isdigit()]
        candidates += [p / "bin" for p in sorted(versions, key=lambda p: -int(p.name))]
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True,
                                 timeout=10, check=True).stdout.strip()
            candidates.append(Path(out))
    for folder in candidates:
        if all(os.access(folder / tool, os.X_OK) for tool in TOOLS):
            return folder
    looked = ", ".join(str(c) for c in candidates) or "nothing found"
    raise PgUnavailableError(f"no PostgreSQL server binaries ({', '.join(TOOLS)}) in: {looked} "
                        "(Debian: apt-get install postgresql; or set ARENA_PG_BINDIR)")


def server_user() -> pwd.struct_passwd | None:
    """The user the servers run as: ``postgres`` when this process is root (PostgreSQL
    refuses root), None (this process's own user) otherwise."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError as exc:
        raise PgUnavailableError("running as root and there is no 'postgres' user for the servers "
                            "(PostgreSQL refuses to run as root)") from exc




@dataclass
class Server:
    """One cluster: its data folder and port."""

    name: str
    data: Path
    port: int

    def postmaster_pid(self) -> int | None:
        """The postmaster's pid from ``postmaster.pid`` (None: not started or gone)."""
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.data / "postmaster.pid").read_text().splitlines()[0])
        return None


class PgPair:
    """A primary and its standby (module docstring).  :meth:`start` builds and starts
    both; :meth:`stop` stops whatever is left and removes the folder."""

    def __init__(self, *, synchronous: bool = True, folder: Path | None = None) -> None:
        self.bindir = find_bindir()
        self.user = server_user()
        self.synchronous = synchronous
        # Not under a test's tmp_path: the server user must be able to reach it.
        self.dir = folder or Path(tempfile.mkdtemp(prefix="arena-pgpair-"))
        self.primary = Server("primary", self.dir / "primary", free_port())
        self.standby = Server("standby", self.dir / "standby", free_port())
        self.promoted = False

    # --- running the tools as the server user ------------------------------------------
    def _cmd(self, tool: str, *args: str) -> list[str]:
        argv = [str(self.bindir / tool), *args]
        if self.user is None:
            return argv
        return ["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}",
                "--init-groups", "--", *argv]

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", HOME=str(self.dir))
        return env

    def run(self, tool: str, *args: str, timeout_s: float = 300) -> str:
        proc = subprocess.run(self._cmd(tool, *args), capture_output=True, text=True,
                              env=self._env(), cwd=self.dir, timeout=timeout_s, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed ({proc.returncode}): "
                               f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        return proc.stdout

    # --- URLs ---------------------------------------------------------------------------
    def url(self, *, hosts: str = "both") -> str:
        """The arena's ``DATABASE_URL``: libpq's multi-host form listing the primary
        first, writes only (``target_session_attrs=read-write``); ``hosts="primary"`` or
        ``"standby"``: one server, any role."""
        if hosts == "primary":
            return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.primary.port}/{DATABASE}"
        if hosts == "standby":
            return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.standby.port}/{DATABASE}"
        return (f"postgresql+psycopg://{SUPERUSER}@/{DATABASE}"
                f"?host=127.0.0.1:{self.primary.port}&host=127.0.0.1:{self.standby.port}"
                "&target_session_attrs=read-write")

    def conninfo(self, server: Server, dbname: str = DATABASE) -> str:
        return f"host=127.0.0.1 port={server.port} user={SUPERUSER} dbname={dbname}"

    # --- building and starting ----------------------------------------------------------
    def start(self, timeout_s: float = 300) -> None:
        """initdb the primary, start it, make the role and the database, clone the
        standby with ``pg_basebackup -R``, start it and wait until it streams (and, when
        synchronous, is the synchronous standby)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.run("initdb", "-D", str(self.primary.data), "-U", SUPERUSER, "--auth=trust",
                 "--encoding=UTF8", "--locale=C", "--no-sync")
        (self.primary.data / "pg_hba.conf").write_text(
            "# the drill's: loopback only\n"
            "local all all trust\n"
            "host all all 127.0.0.1/32 trust\n"
            f"host replication {REPLICATION_USER} 127.0.0.1/32 trust\n")
        with (self.primary.data / "postgresql.conf").open("a") as conf:
            conf.write(self._settings(self.primary))
        self._start(self.primary, timeout_s)
        with psycopg.connect(self.conninfo(self.primary, "postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {REPLICATION_USER} WITH REPLICATION LOGIN")
            conn.execute(f"CREATE DATABASE {DATABASE}")
        self.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.primary.port),
                 "-U", REPLICATION_USER, "-D", str(self.standby.data), "-R", "-X", "stream",
                 "--checkpoint=fast", "--no-sync", timeout_s=timeout_s)
        with (self.standby.data / "postgresql.conf").open("a") as conf:
            conf.write(self._settings(self.standby))
            # Once promoted it is a primary alone: naming a standby there would hold every
            # commit forever waiting for one (the failover tooling's job in production).
            conf.write("synchronous_standby_names = ''\n")
        with (self.standby.data / "postgresql.auto.conf").open("a") as conf:
            conf.write(f"primary_conninfo = 'host=127.0.0.1 port={self.primary.port} "
                       f"user={REPLICATION_USER} application_name={STANDBY_NAME}'\n")
        self._start(self.standby, timeout_s)
        if self.synchronous:
            # Only now: a primary naming a standby that is not there yet waits for it at
            # every commit (CREATE DATABASE above included).
            with psycopg.connect(self.conninfo(self.primary), autocommit=True) as conn:
                conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME}'")
                conn.execute("SELECT pg_reload_conf()")
        want = "sync" if self.synchronous else "async"
        deadline = time.monotonic() + timeout_s
        while self.replication_state() != want:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standby never became {want}: "
                                   f"{self.replication_state()}")
            time.sleep(0.2)

    def _settings(self, server: Server) -> str:
        """Appended to a cluster's postgresql.conf (later lines win)."""
        return (
            "\n# the drill's\n"
            "listen_addresses = '127.0.0.1'\n"
            f"port = {server.port}\n"
            f"unix_socket_directories = '{self.dir}'\n"
            "wal_level = replica\n"
            "max_wal_senders = 5\n"
            "hot_standby = on\n"
            "max_connections = 200\n"
            "shared_buffers = 32MB\n"
            # A killed process loses nothing the kernel has: fsync guards against the OS
            # crashing, which the drill does not do (and which would slow it on a busy disk).
            "fsync = off\n"
            "logging_collector = off\n"
            f"cluster_name = '{server.name}'\n")

    def _start(self, server: Server, timeout_s: float, tries: int = 3) -> None:
        """``pg_ctl start``; a port taken meanwhile (it is picked when the pair is made,
        and initdb takes seconds: a second CI run beside this one took it) is picked again
        and the start tried again, up to ``tries`` times."""
        log = self.dir / f"{server.name}.log"
        for attempt in range(1, tries + 1):
            seen = log.stat().st_size if log.exists() else 0
            try:
                self.run("pg_ctl", "start", "-D", str(server.data), "-w", "-t",
                         str(int(timeout_s)), "-l", str(log), timeout_s=timeout_s + 30)
                return
            except RuntimeError as exc:
                said = log.read_text(errors="replace")[seen:] if log.exists() else ""
                if attempt == tries or "could not bind" not in said:
                    raise RuntimeError(f"{exc}\n{server.name}.log: {said[-2000:]}") from None
            server.port = free_port()
            with (server.data / "postgresql.conf").open("a") as conf:
                conf.write(f"port = {server.port}\n")  # (later lines win)

    def replication_state(self) -> str | None:
        """The standby's ``sync_state`` as the primary sees it (None: not streaming)."""
        with contextlib.suppress(psycopg.Error), psycopg.connect(
                self.conninfo(self.primary), connect_timeout=5) as conn:
            row = conn.execute("SELECT sync_state FROM pg_stat_replication "
                               "WHERE application_name = %s AND state = 'streaming'",
                               (STANDBY_NAME,)).fetchone()
            return None if row is None else str(row[0])
        return None

    # --- the incident -------------------------------------------------------------------
    def kill_primary(self) -> list[int]:
        """SIGKILL the primary's postmaster and every process it started, at once (its
        machine died); returns their pids."""
        pid = self.primary.postmaster_pid()
        if pid is None:
            raise RuntimeError("the primary is not running")
        pids = [pid, *descendants(pid)]  # its backends and auxiliary processes
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        return pids

    def detach_standby(self, timeout_s: float = 60) -> None:
        """Stop the standby's streaming (its ``primary_conninfo`` emptied and reloaded, the
        walreceiver gone): an asynchronous standby falls behind for certain, as one that
        lags.  (Stopping its processes would not do: the kernel keeps receiving WAL into
        the socket's buffer, and the standby replays it when it resumes.)"""
        with psycopg.connect(self.conninfo(self.standby), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
            conn.execute("SELECT pg_reload_conf()")
            deadline = time.monotonic() + timeout_s
            while conn.execute("SELECT count(*) FROM pg_stat_wal_receiver").fetchone() != (0,):
                if time.monotonic() > deadline:
                    raise RuntimeError("the standby's walreceiver did not stop")
                time.sleep(0.05)

    def promote(self, timeout_s: float = 120) -> None:
        """``pg_ctl promote -w``: returns once the standby takes writes."""
        self.run("pg_ctl", "promote", "-D", str(self.standby.data), "-w",
                 "-t", str(int(timeout_s)), timeout_s=timeout_s + 30)
        self.promoted = True

    def stop(self) -> None:
        """Stop both servers (immediate) and remove the folder."""
        for server in (self.standby, self.primary):
            pid = server.postmaster_pid()
            if pid is None or not _alive(pid):
                continue
            with contextlib.suppress(Exception):
                self.run("pg_ctl", "stop", "-D", str(server.data), "-m", "immediate", "-w",
                         timeout_s=60)
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
