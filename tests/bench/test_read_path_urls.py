"""The read-path benches (bench/read_path.py, bench/render_time.py) measure every GET rule of
the app: issue 20 asks for every page's p95, and a page missing from the bench's list has no
figure at all.  A new GET rule fails here until it gets a URL in ``url_list`` or a reason in
``UNMEASURED``.  (Statement counts per request: tests/arena/test_read_path.py.)"""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from flask import Flask

from arena import create_app

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    """bench/read_path.py, imported without the Redis namespace it sets for its own runs
    leaking into this process's environment."""
    before = os.environ.get("REDIS_NAMESPACE")
    spec = importlib.util.spec_from_file_location("read_path", ROOT / "bench" / "read_path.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("read_path", module)  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        if before is None:
            os.environ.pop("REDIS_NAMESPACE", None)
        else:
            os.environ["REDIS_NAMESPACE"] = before
    return module


BENCH = _bench()


@pytest.fixture
def app() -> Iterator[Flask]:
    """The app's routes (no request is served: no database is needed)."""
    yield create_app({"DATABASE_URL": "sqlite://", "SECRET_KEY": secrets.token_hex(32)})


def listed() -> list[str]:
    """The bench's list, with every optional fixture present (as on a seeded database)."""
    return BENCH.url_list(BENCH.Ids(busy=1, quiet=2, recent=3, swiss=4, knockout=5,
                                    challenge=6, webhook=7, reset="a-reset-token"))


def test_every_get_rule_is_measured_or_left_out_with_a_reason(app: Flask) -> None:
    missing = BENCH.unmeasured(app, listed())
    assert not missing, (f"GET endpoints bench/read_path.py neither measures nor lists in "
                         f"UNMEASURED: {sorted(missing)}")
    endpoints = {r.endpoint for r in app.url_map.iter_rules() if "GET" in (r.methods or set())}
    assert set(BENCH.UNMEASURED) <= endpoints, "UNMEASURED names endpoints that are gone"
    astray = [u for u in listed() if BENCH.endpoint_of(app, u) is None]
    assert not astray, f"listed URLs that reach no rule: {astray}"


def test_a_new_get_rule_fails_the_check(app: Flask) -> None:
    app.add_url_rule("/planted/<int:n>", "planted", lambda n: str(n))
    assert BENCH.unmeasured(app, listed()) == {"planted"}
    assert BENCH.unmeasured(app, [*listed(), "/planted/3"]) == set()


def test_a_url_dropped_from_the_list_fails_the_check(app: Flask) -> None:
    without = [u for u in listed() if not u.startswith("/api/webhooks")]
    assert BENCH.unmeasured(app, without) == {"webhooks.list_webhooks",
                                              "webhooks.webhook_deliveries"}


def test_signed_in_urls_carry_their_credentials() -> None:
    BENCH.CREDENTIALS[BENCH.SIGNED_IN] = {"Cookie": "session=x"}
    BENCH.CREDENTIALS[BENCH.BEARER] = {"Authorization": "Bearer bta_x"}
    assert BENCH.split(f"/account{BENCH.SIGNED_IN}") == ("/account", False)
    assert BENCH.credentials(f"/account{BENCH.SIGNED_IN}") == {"Cookie": "session=x"}
    assert BENCH.split(f"/api/webhooks{BENCH.BEARER}") == ("/api/webhooks", False)
    assert BENCH.credentials(f"/api/webhooks{BENCH.BEARER}") == {
        "Authorization": "Bearer bta_x"}
    assert BENCH.split(f"/tournaments/1/live{BENCH.REVALIDATE}") == ("/tournaments/1/live",
                                                                      True)
    assert BENCH.credentials("/account/sign-in") == {}
    signed = [u for u in listed() if u.endswith((BENCH.SIGNED_IN, BENCH.BEARER))]
    assert len(signed) == 7  # the account's pages and JSON, the bot's calls
