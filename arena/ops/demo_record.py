"""Where a running ``arena demo`` is, so ``arena`` commands in another terminal find it.

The demo's instance folder is a new temporary one each time, so a command started in another
terminal cannot guess it.  While it runs, the demo keeps a small record of itself in a
well-known file, :func:`record_path`: ``$ARENA_DEMO_RECORD``, else
``$TMPDIR/arena-demo-<uid>.json`` (one per user).  It holds the demo's pid, its instance
folder, database URL, Redis URL and web address; no secret (a command reads the database
directly, and the secret key is in the instance folder, mode 0600).

An ``arena`` command that was given no instance of its own (neither ``ARENA_INSTANCE_PATH``
nor ``DATABASE_URL`` in the environment) uses the demo of the record when that demo still
runs (:func:`running_demo`), and says so on stderr (:mod:`arena.ops.cli_app`).  A record whose
process is gone, or a file that another user owns or could have written, is ignored.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from arena.core.processes import pid_alive

RECORD_ENV = "ARENA_DEMO_RECORD"
"""Environment variable naming the record file instead of the default (tests, or two users
of one account)."""


@dataclass(frozen=True)
class DemoRecord:
    """A running demo: its process and where its parts are."""

    pid: int
    instance: str
    database: str
    redis: str
    web: str


def record_path() -> Path:
    configured = os.environ.get(RECORD_ENV, "")
    if configured:
        return Path(configured)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"arena-demo-{uid}.json"


def write(record: DemoRecord, path: Path | None = None) -> Path:
    """Publish ``record`` (atomically: a reader sees the old record or the new one)."""
    target = path or record_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as f:  # mkstemp: mode 0600
            json.dump(asdict(record), f)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def remove(pid: int, path: Path | None = None) -> None:
    """Delete the record if it is still the one of process ``pid`` (a newer demo's stays)."""
    target = path or record_path()
    found = read(target)
    if found is not None and found.pid == pid:
        target.unlink(missing_ok=True)


def read(path: Path | None = None) -> DemoRecord | None:
    """The record in the file, whether or not its demo still runs (None: no usable record).

    A file not owned by this user, or writable by others, is not trusted: it could point this
    user's commands at someone else's database."""
    target = path or record_path()
    try:
        st = target.stat()
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
            return None
        data = json.loads(target.read_text())
        return DemoRecord(pid=int(data["pid"]), instance=str(data["instance"]),
                          database=str(data["database"]), redis=str(data["redis"]),
                          web=str(data["web"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running_demo(path: Path | None = None) -> DemoRecord | None:
    """The demo of the record if its process still runs and its instance folder exists."""
    found = read(path)
    if found is None or not pid_alive(found.pid) or not Path(found.instance).is_dir():
        return None
    return found
