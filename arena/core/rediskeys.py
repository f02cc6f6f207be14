"""The deployment's namespace in Redis: every key the arena writes starts with it.

Found in a drill: the clock's leader key was ``arena:clock:leader`` for every deployment,
so two deployments sharing one Redis shared one leader, and one of them got no ladder,
reconciler or sweep; RQ's keys (``rq:...``) were shared as well.  Now every key is
``<REDIS_NAMESPACE>:...``: the queue and everything RQ keeps (``<ns>:rq:...``), rate-limit
counters (``<ns>:limits:...``), the shared read cache (``<ns>:readcache:...``), live streams
(``<ns>:live:...``), the clock's leader lock (``<ns>:clock:leader``), bots' kept calls
(``<ns>:bot-calls:<id>``) and results waiting for the database (``<ns>:finished:<id>``).

The namespace is ``REDIS_NAMESPACE`` when set; otherwise it is derived from the database,
the one thing every process of a deployment must agree on anyway: ``arena-`` and 8 hex
digits of a hash of ``DATABASE_URL``'s location (backend, hosts, ports, database name; not
the user or the password, so rotating a password changes nothing), or ``arena`` with the
embedded SQLite database (no ``DATABASE_URL``: one machine).  Two deployments with different
databases therefore never meet in a shared Redis unless they are told to.

RQ reads its key prefix once, from the environment variable ``RQ_KEY_PREFIX``, when it is
first imported; it cannot differ between two apps of one process.  :func:`adopt_environment`
(called by ``arena/__init__.py`` before anything imports RQ) sets it to ``<ns>:rq`` from
the same environment the app will read; :func:`check_rq_prefix` (called by ``create_app``)
refuses an app whose namespace differs from the prefix RQ already took, unless
``RQ_KEY_PREFIX`` was given explicitly (an operator's choice, and the test suite's).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

EMBEDDED_NAMESPACE = "arena"
"""The namespace of a deployment on the embedded SQLite database (no ``DATABASE_URL``)."""

VALID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""What a namespace may be: letters, digits, ``_ . -`` (RQ's prefix also allows ``:{}``, but
a colon would blur where the namespace ends)."""

RQ_PREFIX_ENV = "RQ_KEY_PREFIX"

_explicit_rq_prefix = False
"""Whether ``RQ_KEY_PREFIX`` was in the environment before :func:`adopt_environment`."""


def location_of(database_url: str) -> str:
    """What identifies a database in its URL: backend, hosts, ports, database name."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        return f"sqlite|{os.path.abspath(url.database) if url.database else ':memory:'}"
    if backend == "postgres":
        backend = "postgresql"
    hosts = [url.host or ""]
    ports = [str(url.port or "")]
    extra = url.query.get("host")  # libpq's multi-host form: ?host=a:5432&host=b:5432
    if extra:
        listed = [extra] if isinstance(extra, str) else list(extra)
        hosts, ports = [], []
        for item in listed:
            for part in item.split(","):
                host, _, port = part.partition(":")
                hosts.append(host)
                ports.append(port)
        # ... or ?host=a,b&port=5432,5433: one port for every host, or one per host.
        given = url.query.get("port")
        if isinstance(given, str) and not any(ports):
            split = given.split(",")
            ports = split * len(hosts) if len(split) == 1 else split
    if url.host and "," in url.host:
        hosts = url.host.split(",")
    default_port = {"postgresql": "5432"}.get(backend, "")
    pairs = sorted(f"{h.lower()}:{p or default_port}" for h, p in zip(hosts, ports, strict=False))
    return f"{backend}|{','.join(pairs)}|{url.database or ''}"


@functools.lru_cache(maxsize=32)
def derived_namespace(database_url: str) -> str:
    """The namespace of a deployment on this database (module docstring).  Remembered: every
    Redis key a worker names goes through here (parsing the URL and hashing it cost a worker
    about a millisecond of CPU a match)."""
    if not database_url:
        return EMBEDDED_NAMESPACE
    digest = hashlib.sha256(location_of(database_url).encode()).hexdigest()[:8]
    return f"arena-{digest}"


def namespace_of(config: Mapping[str, Any]) -> str:
    """The deployment's namespace: ``REDIS_NAMESPACE``, or derived from ``DATABASE_URL``."""
    explicit = str(config.get("REDIS_NAMESPACE") or "")
    ns = explicit or derived_namespace(str(config.get("DATABASE_URL") or ""))
    if not VALID.fullmatch(ns):
        raise ValueError(f"REDIS_NAMESPACE {ns!r}: use 1-64 letters, digits, '_', '.' or '-'")
    return ns


def redis_key(config: Mapping[str, Any], *parts: str) -> str:
    """``<namespace>:<part>:<part>...``: the one way the arena names a Redis key."""
    return ":".join((namespace_of(config), *parts))


def rq_prefix(namespace: str) -> str:
    """The prefix of RQ's keys in the namespace."""
    return f"{namespace}:rq"


def adopt_environment(environ: MutableMapping[str, str] | None = None) -> None:
    """Give RQ the namespace's prefix, from the environment the app will be built from.

    Must run before RQ is first imported (RQ reads ``RQ_KEY_PREFIX`` then, and only then);
    an explicit ``RQ_KEY_PREFIX`` is left alone."""
    global _explicit_rq_prefix
    env = os.environ if environ is None else environ
    if RQ_PREFIX_ENV in env:
        _explicit_rq_prefix = True
        return
    if "rq" in sys.modules:  # too late to matter: check_rq_prefix will say so
        return
    try:
        ns = namespace_of(env)
    except Exception:  # a bad setting: create_app reports it with the others
        return
    env[RQ_PREFIX_ENV] = rq_prefix(ns)


def rq_prefix_in_use() -> str:
    from rq.defaults import RQ_KEY_PREFIX

    return RQ_KEY_PREFIX


def check_rq_prefix(config: Mapping[str, Any]) -> None:
    """Refuse an app whose namespace is not the one RQ's keys are under (jobs enqueued by
    it would go where its workers never look), unless ``RQ_KEY_PREFIX`` was explicit."""
    want = rq_prefix(namespace_of(config))
    have = rq_prefix_in_use()
    if have == want or _explicit_rq_prefix:
        return
    raise RuntimeError(
        f"RQ's keys are under {have!r} but this app's Redis namespace needs {want!r}: RQ was "
        f"imported before the arena read its settings (or the app was given another "
        f"REDIS_NAMESPACE or DATABASE_URL than the environment).  Set "
        f"{RQ_PREFIX_ENV}={want} in the environment, or import arena before rq.")


def child_env(config: Mapping[str, Any]) -> dict[str, str]:
    """What a child process of this app (the worker's clock, the demo's processes) needs in
    its environment to use the same namespace."""
    return {"REDIS_NAMESPACE": namespace_of(config), RQ_PREFIX_ENV: rq_prefix_in_use()}
