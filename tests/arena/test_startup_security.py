"""What the service refuses at start and what it tells strangers: weak secrets stop it,
``/readyz`` names the failing part but never the error, the CSRF cookie is ``SameSite`` and,
over HTTPS (directly or through the trusted proxy), ``Secure``."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from arena import create_app
from arena.core.security import InsecureConfigError
from arena.core.storage import get_db

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "arena.env.example"
STRONG = "k" * 8 + "9f2c1e7a4b6d8f0a3c5e7b9d1f3a5c7e"


def example_value(name: str) -> str:
    for line in EXAMPLE.read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} not in {EXAMPLE}")


@pytest.mark.parametrize(("name", "value", "why"), [
    ("ADMIN_TOKEN", example_value("ADMIN_TOKEN"), "placeholder"),
    ("SECRET_KEY", example_value("SECRET_KEY"), "placeholder"),
    ("SIGNING_KEY", example_value("SIGNING_KEY"), "placeholder"),
    ("ADMIN_TOKEN", "change-me", "placeholder"),
    ("ADMIN_TOKEN", "admin", "characters long"),
    ("ADMIN_TOKEN", "x" * 31, "characters long"),
    ("SECRET_KEY", "dev", "characters long"),
    ("TOKEN_PEPPER", "pepper", "characters long"),
])
def test_weak_secrets_stop_the_start(tmp_path: Path, name: str, value: str, why: str) -> None:
    settings = {"INSTANCE_PATH": str(tmp_path), "SECRET_KEY": STRONG, name: value}
    with pytest.raises(InsecureConfigError) as info:
        create_app(settings)
    text = str(info.value)
    assert name in text and why in text
    assert "secrets.token_urlsafe" in text  # how to make a good one
    assert value not in text or len(value) < 12  # never echoes a whole secret


def test_strong_or_absent_secrets_start(tmp_path: Path) -> None:
    create_app({"INSTANCE_PATH": str(tmp_path), "ADMIN_TOKEN": STRONG, "SECRET_KEY": STRONG})
    app = create_app({"INSTANCE_PATH": str(tmp_path / "b")})  # admin off, key generated
    assert len(app.config["SECRET_KEY"]) == 64 and app.config["ADMIN_TOKEN"] == ""


@pytest.mark.parametrize("flag", ["TESTING", "DEBUG"])
def test_a_developer_machine_may_use_short_secrets(tmp_path: Path, flag: str) -> None:
    create_app({"INSTANCE_PATH": str(tmp_path), "ADMIN_TOKEN": "admin", "SECRET_KEY": "dev",
                flag: True})


@pytest.mark.drill
def test_a_process_started_with_the_example_env_refuses_with_the_reason(
    tmp_path: Path
) -> None:
    env = {**os.environ, "ARENA_INSTANCE_PATH": str(tmp_path), "SECRET_KEY": STRONG,
           "ADMIN_TOKEN": example_value("ADMIN_TOKEN")}
    env.pop("FLASK_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "arena", "config"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert "ADMIN_TOKEN is still a placeholder" in done.stderr


# --- /readyz -----------------------------------------------------------------------------


def test_readyz_names_the_failing_parts_without_their_errors(
    settings: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app({**settings,
                      "DATABASE_URL": "postgresql+psycopg://secretuser:pw@127.0.0.1:1/db",
                      "REDIS_URL": "redis://:hunter2@127.0.0.1:1/0"})
    with caplog.at_level(logging.ERROR):
        r = app.test_client().get("/readyz")
    assert r.status_code == 503
    assert r.get_json() == {"status": "unavailable", "ready": False,
                            "checks": {"database": "down", "redis": "down"}}
    for secret in (b"secretuser", b"127.0.0.1", b"hunter2", b"Error", b"psycopg", b"refused"):
        assert secret not in r.data
    logged = caplog.text
    assert "database does not answer" in logged and "Redis does not answer" in logged
    get_db(app).dispose()


def test_readyz_when_all_is_well(app: Flask) -> None:
    r = app.test_client().get("/readyz")
    assert r.status_code == 200
    assert r.get_json() == {"status": "ok", "ready": True,
                            "checks": {"database": "ok", "redis": "ok"}}


def test_readyz_reuses_one_probe_for_its_bound_and_reports_a_failure_within_it(
    app: Flask
) -> None:
    """A flood of ``/readyz`` costs one database round trip per ``READYZ_CACHE_S``; a part
    going down is reported once the probe is that old, not later."""
    from sqlalchemy import event

    from arena.core.queue import QueueService
    from arena.routes.site import Readiness

    now = [100.0]
    Readiness.of(app).clock = lambda: now[0]
    client = app.test_client()
    engine = get_db(app).engine
    seen: list[str] = []

    def count(*args: Any) -> None:
        if args[2] == "SELECT 1":  # the probe's (SQLite opens a transaction first)
            seen.append(args[2])

    event.listen(engine, "before_cursor_execute", count)
    try:
        assert [client.get("/readyz").status_code for _ in range(5)] == [200] * 5
        assert len(seen) == 1  # one probe for the five
        app.config["REDIS_URL"] = "redis://127.0.0.1:1/0"  # Redis goes down:
        app.extensions["arena.queue"] = QueueService(app)  # the app's client now points there
        now[0] += 0.49
        assert client.get("/readyz").status_code == 200  # within the bound: the last probe
        now[0] += 0.01
        r = client.get("/readyz")  # the probe is 0.5 s old: probed again, down
        assert r.status_code == 503 and r.get_json()["checks"]["redis"] == "down"
        assert len(seen) == 2
        app.config["READYZ_CACHE_S"] = 0.0  # off: every request probes
        for _ in range(3):
            client.get("/readyz")
        assert len(seen) == 5
    finally:
        event.remove(engine, "before_cursor_execute", count)


# --- cookies -----------------------------------------------------------------------------


def session_cookie(app: Flask, base_url: str = "http://localhost", **headers: str) -> str:
    r = app.test_client().get("/bots/new", base_url=base_url, headers=headers)
    assert r.status_code == 200
    cookies = [v for k, v in r.headers.items() if k == "Set-Cookie" and v.startswith("session=")]
    assert len(cookies) == 1, r.headers
    return cookies[0]


def flags(cookie: str) -> set[str]:
    return {part.strip().split("=")[0].lower() + (
        "=" + part.strip().split("=", 1)[1].lower() if part.strip().lower().startswith("samesite")
        else "") for part in cookie.split(";")[1:]}


def test_the_csrf_cookie_is_samesite_lax_and_httponly_and_not_secure_over_http(
    app: Flask
) -> None:
    f = flags(session_cookie(app))
    assert {"samesite=lax", "httponly"} <= f and "secure" not in f


def test_the_csrf_cookie_is_secure_over_https(app: Flask) -> None:
    assert "secure" in flags(session_cookie(app, "https://localhost"))


def test_behind_the_trusted_proxy_https_comes_from_x_forwarded_proto(
    settings: dict[str, Any]
) -> None:
    proxied = create_app({**settings, "TRUSTED_PROXY_HOPS": 1})
    assert "secure" in flags(session_cookie(proxied, **{"X-Forwarded-Proto": "https"}))
    assert "secure" not in flags(session_cookie(proxied, **{"X-Forwarded-Proto": "http"}))
    direct = create_app(settings)  # no trusted proxy: a client's header changes nothing
    assert "secure" not in flags(session_cookie(direct, **{"X-Forwarded-Proto": "https"}))
    for a in (proxied, direct):
        get_db(a).dispose()


def test_cookie_settings(settings: dict[str, Any]) -> None:
    strict = create_app({**settings, "COOKIE_SAMESITE": "Strict", "COOKIE_SECURE": "always"})
    f = flags(session_cookie(strict))
    assert {"samesite=strict", "secure"} <= f
    never = create_app({**settings, "COOKIE_SECURE": "never"})
    assert "secure" not in flags(session_cookie(never, "https://localhost"))
    for bad in ({"COOKIE_SAMESITE": "None"}, {"COOKIE_SECURE": "sometimes"}):
        with pytest.raises(InsecureConfigError):
            create_app({**settings, **bad})
    for a in (strict, never):
        get_db(a).dispose()
