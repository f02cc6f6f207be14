"""The deployment's Redis namespace (arena.core.rediskeys): how it is derived, what it
refuses.  The drill with real processes is tests/arena/test_redis_namespace.py."""

from __future__ import annotations

from typing import Any

import pytest

from arena import create_app
from arena.core import rediskeys
from arena.core.rediskeys import derived_namespace, namespace_of, redis_key


def test_the_namespace_follows_the_database_not_its_credentials_or_spelling() -> None:
    a = derived_namespace("postgresql+psycopg://arena:pw1@DB.example:5432/arena")
    assert a.startswith("arena-") and len(a) == len("arena-") + 8
    assert derived_namespace("postgresql://other:pw2@db.example/arena") == a  # user, pw, port
    assert derived_namespace("postgres://arena@db.example:5432/arena") == a
    assert derived_namespace("postgresql+psycopg://arena@db.example:5432/staging") != a
    assert derived_namespace("postgresql+psycopg://arena@db2.example:5432/arena") != a
    # libpq's multi-host form (a primary and a standby): the same, in any order.
    two = derived_namespace(
        "postgresql+psycopg://arena@/arena?host=db1:5432&host=db2:5432"
        "&target_session_attrs=read-write")
    assert two == derived_namespace(
        "postgresql+psycopg://arena@/arena?host=db2:5432&host=db1:5432")
    assert two != a
    # ... and its other spelling, the ports listed apart: the same deployment.
    assert derived_namespace(
        "postgresql+psycopg://arena@/arena?host=db1,db2&port=5432,5432") == two
    assert derived_namespace("postgresql+psycopg://arena@/arena?host=db1,db2&port=5432") == two
    # Two deployments on the same hosts, other ports: two namespaces (the ports were
    # ignored in this spelling, and both came out as db1:5432,db2:5432).
    assert derived_namespace(
        "postgresql+psycopg://arena@/arena?host=db1,db2&port=5433,5434") != two
    assert derived_namespace("") == rediskeys.EMBEDDED_NAMESPACE
    assert derived_namespace("sqlite:////tmp/x/a.sqlite3") != derived_namespace(
        "sqlite:////tmp/y/a.sqlite3")


def test_an_explicit_namespace_wins_and_must_be_plain() -> None:
    cfg: dict[str, Any] = {"REDIS_NAMESPACE": "prod-eu", "DATABASE_URL": "sqlite:///x"}
    assert namespace_of(cfg) == "prod-eu"
    assert redis_key(cfg, "clock", "leader") == "prod-eu:clock:leader"
    for bad in ("a:b", "a b", "x" * 65, "é"):
        with pytest.raises(ValueError, match="REDIS_NAMESPACE"):
            namespace_of({"REDIS_NAMESPACE": bad})


def test_an_app_whose_namespace_rq_does_not_use_is_refused(
    settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The suite gives RQ_KEY_PREFIX explicitly (trusted); without it, an app whose
    # namespace differs from the prefix RQ took at import would enqueue where no worker of
    # its deployment looks.
    monkeypatch.setattr(rediskeys, "_explicit_rq_prefix", False)
    with pytest.raises(RuntimeError, match="RQ_KEY_PREFIX"):
        create_app({**settings, "REDIS_NAMESPACE": "not-the-one-rq-uses"})
    ns = rediskeys.rq_prefix_in_use().removesuffix(":rq")
    create_app({**settings, "REDIS_NAMESPACE": ns})


def test_rq_is_given_the_namespace_from_the_environment() -> None:
    env = {"DATABASE_URL": "postgresql://u@h/db"}
    import sys

    rq = sys.modules.pop("rq")  # as if RQ were not imported yet
    try:
        rediskeys.adopt_environment(env)
    finally:
        sys.modules["rq"] = rq
    assert env["RQ_KEY_PREFIX"] == f"{derived_namespace('postgresql://u@h/db')}:rq"
    explicit = {"RQ_KEY_PREFIX": "mine", "REDIS_NAMESPACE": "x"}
    rediskeys.adopt_environment(explicit)
    assert explicit["RQ_KEY_PREFIX"] == "mine"
