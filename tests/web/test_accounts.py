"""Owner accounts in a real browser: sign up, register a bot while signed in, watch its
health check pass, and find it on "my bots" with its status; make an API token there and use
it; sign out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from playwright.sync_api import expect

from arena.ops.procs import Child

PASSWORD = "correct horse battery"


@pytest.mark.drill
def test_sign_up_register_a_bot_and_see_it_on_my_bots(
        page: Any, live_server: str, client: FlaskClient, sample_bots: dict[str, str],
        shots: Path, start_worker: Callable[[], Child]) -> None:
    start_worker()  # runs the health check the form queues
    page.goto(live_server + "/")
    page.click("nav >> text=Sign in")
    page.click("text=Sign up")
    page.fill("#username", "ada")
    page.fill("#password", PASSWORD)
    page.fill("#password2", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(live_server + "/account")
    assert page.locator("[data-test=me]").inner_text() == "My bots (ada)"
    assert page.locator("[data-test=no-bots]").count() == 1
    page.click("text=Register a bot")
    page.fill("#name", "adas-greedy")
    page.fill("#url", sample_bots["greedy"])
    page.click("button[type=submit]")
    progress = page.locator("#check-progress")
    expect(progress).to_have_attribute("data-state", "passed", timeout=60_000)
    page.click("[data-test=me]")
    row = page.locator("[data-test=my-bots] tr", has_text="adas-greedy")
    expect(row).to_have_count(1)
    assert row.locator(".badge").text_content() == "active"
    # An API token for scripts, shown once, that reads the account's bots.
    page.fill("#token-name", "ci")
    page.check("input[name=scope][value='bots:read']")
    page.click("text=Make a token")
    token = page.inner_text("#new-token").strip()
    page.screenshot(path=str(shots / "my-bots.png"), full_page=True)
    r = client.get("/api/account/bots", headers={"Authorization": f"Bearer {token}"})
    assert [b["name"] for b in r.get_json()["items"]] == ["adas-greedy"]
    page.reload()
    assert token not in page.content()
    # The bot page opens its owner's corner for the account, without the owner token.
    row = page.locator("[data-test=my-bots] tr", has_text="adas-greedy")
    row.locator("a", has_text="adas-greedy").click()
    expect(page.locator("#owner")).to_contain_text("Your account owns this bot")
    page.goto(live_server + "/account")
    page.click("text=Sign out")
    page.wait_for_url(live_server + "/")
    expect(page.locator("nav")).to_contain_text("Sign in")
