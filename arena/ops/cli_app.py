"""The app an ``arena`` command works on: which instance, and whether its database is ready.

Three rules, so that a command typed in a second terminal does the obvious thing:

1. **It finds the running demo.**  Given no instance of its own (neither
   ``ARENA_INSTANCE_PATH`` nor ``DATABASE_URL`` in the environment), a command uses the
   ``arena demo`` that runs on this machine (:mod:`arena.ops.demo_record`) and says so on
   stderr.  ``arena demo`` itself never does (it makes its own instance).
2. **It never prints a traceback for a database that is missing, unreachable or not
   migrated**: it says which database it looked at, what is wrong, and how to point the
   command at the right one (:class:`DatabaseNotReady`, a :class:`click.ClickException`).
3. **A command that only reads creates no file**: no ``instance/`` folder, no SQLite file,
   no secret key.  (A secret key for such a command is made up in memory when the instance
   has none: it only reads rows.)

``arena init-db``/``migrate`` create what is missing, as before; the long-running commands
(``serve``, ``worker``, ``clock``) follow rule 1 and check their database in
:mod:`arena.ops.startup` (they wait for one that does not answer yet, and migrate the embedded
SQLite one).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from flask import Flask

from arena.core.storage import (
    current_revision,
    get_db,
    head_revision,
    resolve_database_url,
    sqlite_file,
)

from . import demo_record

POINT_AT_IT = (
    "To use an existing instance, set ARENA_INSTANCE_PATH to its folder (the demo prints it "
    "as 'instance folder:'), or DATABASE_URL (and REDIS_URL) to its database; while an "
    "`arena demo` runs on this machine, commands find it by themselves."
)


class DatabaseNotReady(click.ClickException):
    """The command's database is missing, unreachable or not migrated (exit status 1)."""


def _explicit_instance(env: Mapping[str, str]) -> bool:
    return bool(env.get("ARENA_INSTANCE_PATH") or env.get("DATABASE_URL"))


def adopt_running_demo() -> demo_record.DemoRecord | None:
    """Rule 1: point this process (and the children it starts) at the running demo, if it
    was given no instance of its own.  Returns the demo adopted."""
    if _explicit_instance(os.environ):
        return None
    found = demo_record.running_demo()
    if found is None:
        return None
    os.environ["ARENA_INSTANCE_PATH"] = found.instance
    if not os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = found.redis
    click.echo(f"arena: using the demo running on this machine (pid {found.pid}, instance "
               f"{found.instance}, web {found.web}); set ARENA_INSTANCE_PATH or DATABASE_URL "
               "to use another instance", err=True)
    return found


def instance_path() -> str:
    """The instance folder ``create_app()`` would use, found without creating it."""
    configured = os.environ.get("ARENA_INSTANCE_PATH")
    if configured:
        return os.path.abspath(configured)
    return Flask("arena").instance_path


def _shown(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _no_side_effects(instance: str) -> dict[str, Any]:
    """Overrides that keep ``create_app`` from writing a secret key into ``instance``."""
    from arena.core.config import from_environment

    if from_environment().get("SECRET_KEY") or (Path(instance) / "secret_key").exists():
        return {}
    return {"SECRET_KEY": secrets.token_hex(32)}


def command_app(*, database: bool = True) -> Flask:
    """The app of a command that works on an existing instance (rules 2 and 3).

    ``database``: the command needs the database, migrated to this code's newest revision;
    without it (``arena config``) nothing is opened at all."""
    from arena import create_app

    instance = instance_path()
    url = resolve_database_url(os.environ.get("DATABASE_URL", ""), instance)
    file = sqlite_file(url)
    if database and file is not None and not file.exists():
        where = ("the instance folder " + instance + (" has none"
                 if Path(instance).is_dir() else " does not exist"))
        raise DatabaseNotReady(f"no arena database at {file} ({where}). {POINT_AT_IT} "
                               "To create a new one there: `arena init-db`.")
    app = create_app(_no_side_effects(instance))
    if database:
        check_ready(app, url)
    return app


def check_ready(app: Flask, url: str) -> None:
    """Raise :class:`DatabaseNotReady` unless the database answers and is migrated."""
    from sqlalchemy.exc import SQLAlchemyError

    db = get_db(app)
    try:
        have = current_revision(db)
    except SQLAlchemyError as exc:
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0:1]
        raise DatabaseNotReady(f"cannot open the database {_shown(url)}: "
                               f"{first[0] if first else type(exc).__name__}. "
                               f"{POINT_AT_IT}") from None
    want = head_revision()
    if have is None:
        raise DatabaseNotReady(f"the database {_shown(url)} has no arena tables yet: run "
                               f"`arena init-db` to create them. {POINT_AT_IT}")
    if have != want:
        raise DatabaseNotReady(f"the database {_shown(url)} is at migration {have}, and this "
                               f"code expects {want}: run `arena migrate` (if {have} is "
                               "newer, use the arena version that made it).")
