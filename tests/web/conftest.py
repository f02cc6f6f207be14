"""Browser tests: Playwright driving the machine's Chromium against the real service.

The app (SQLite or PostgreSQL, the real Redis) is served by a threaded Werkzeug server on a
loopback port; matches are played by real ``arena worker`` processes and real sample bots.

Chromium is the Debian package (``which chromium``; ``.ci/run`` installs it when missing).
Playwright never downloads a browser of its own: it is launched with ``executable_path``.
Without a chromium binary these tests skip, saying why, unless ``CI=true``: in CI they
must run, so they fail instead.

Screenshots go to the test's temporary folder, or to ``$ARENA_SCREENSHOTS`` (e.g.
``docs/screenshots``) when that is set: ``ARENA_SCREENSHOTS=docs/screenshots pytest tests/web``.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from werkzeug.serving import make_server

from arena.ops.procs import start_relay
from tests.arena.conftest import (  # noqa: F401 - fixtures shared with the arena tests
    app,
    backend,
    client,
    database_url,
    pg_database,
    pg_databases,
    redis,
    redis_url,
    sample_bots,
    settings,
    sqlite_template_path,
    start_worker,
    worker_env,
)

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def chromium_path() -> str | None:
    return shutil.which("chromium")


@pytest.fixture
def browser() -> Iterator[Any]:
    """A browser per test: no idle connection of one test's server is ever reused by the
    next test's (whose server may get the same port)."""
    path = chromium_path()
    if path is None:
        message = ("no chromium binary on PATH (Debian: apt-get install chromium "
                   "chromium-driver); browser tests")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " must run in CI")
        pytest.skip(message + " skipped")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("the playwright package is missing (pip install -e '.[dev]')")
        pytest.skip("the playwright package is missing (pip install -e '.[dev]')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def live_server(app: Flask) -> Iterator[str]:  # noqa: F811 - the imported fixture
    """The web app, and beside it the live relay (``arena live``) as the demo runs it: on a
    port of its own, reading the app's fragments and the workers' events."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.port}"
    relay = start_relay({**worker_env(app), "LIVE_WEB_URL": base})
    app.config["LIVE_URL"] = f"{relay.url}/live"
    yield base
    relay.stop()
    server.shutdown()
    thread.join(timeout=10)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (its own cookies); any JavaScript dialog (an alert from injected script)
    or page error fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  accept_downloads=True)
    pg = context.new_page()
    problems: list[str] = []
    pg.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    expected = ("status of 400", "status of 404")  # forms with errors, 404 pages: checked

    def on_console(m: Any) -> None:
        if m.type == "error" and not any(x in m.text for x in expected):
            problems.append(f"console {m.type}: {m.text}")

    pg.on("console", on_console)
    pg.problems = problems
    yield pg
    context.close()
    assert not problems, problems


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    target = os.environ.get("ARENA_SCREENSHOTS")
    out = Path(target) if target else tmp_path / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    return out
