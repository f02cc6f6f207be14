"""Challenges in a real browser: the owner signs in on the bot page, challenges chosen bots
from its owner corner, lands on the challenge's page (its place in line while no worker runs),
then follows it to the match a real worker plays; and opts the bot out of challenges."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from playwright.sync_api import expect

from arena.ops.procs import Child
from tests.arena.conftest import register


@pytest.mark.drill
def test_challenge_from_the_bot_page_and_watch_the_match(
        page: Any, live_server: str, client: FlaskClient, sample_bots: dict[str, str],
        shots: Path, start_worker: Callable[[], Child]) -> None:
    names = ["c-random", "c-greedy", "c-planner", "c-random-2"]
    bots = [register(client, n, sample_bots[n[2:]]) for n in names]
    bot_id, token = bots[0]
    page.goto(f"{live_server}/bots/{bot_id}")
    page.fill("#owner-sign-in-token", token)
    page.click("text=Sign in as the owner")
    page.goto(f"{live_server}/bots/{bot_id}")
    form = page.locator("[data-test=challenge-form]")
    form.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "challenge-form.png"), full_page=False)
    form.locator("#challenge-opponents").fill(", ".join(names[1:]))
    form.locator("#challenge-deals").fill("1")
    form.locator("text=Challenge now").click()
    page.wait_for_url(f"{live_server}/challenges/*")
    status = page.locator("#challenge-status")
    expect(status).to_have_attribute("data-state", "queued")
    expect(page.locator("[data-test=queue-position]")).to_have_text("1")
    page.screenshot(path=str(shots / "challenge-queued.png"), full_page=True)
    challenge_id = int(page.url.rsplit("/", 1)[1])
    match_id = client.get(f"/api/challenges/{challenge_id}").get_json()["match_id"]
    start_worker()
    expect(status).to_have_attribute("data-state", "finished", timeout=120_000)
    link = page.locator("[data-test=challenge-match]")
    expect(link).to_be_visible()
    assert link.get_attribute("href") == f"/matches/{match_id}"
    link.click()
    page.wait_for_url(f"{live_server}/matches/{match_id}")
    expect(page.locator("body")).to_contain_text("c-planner")
    # The owner opts the bot out; the page says so, and the API refuses challenges of it.
    page.goto(f"{live_server}/bots/{bot_id}")
    page.click("text=Opt out of challenges")
    page.wait_for_url(f"{live_server}/bots/{bot_id}#owner")
    expect(page.locator("[data-test=accepts-challenges]")).to_contain_text(
        "does not accept challenges")
    other, other_token = bots[1]
    r = client.post("/api/challenges", json={"bot": other, "opponents": [
        bot_id, bots[2][0], bots[3][0]], "deals": 1},
        headers={"Authorization": f"Bearer {other_token}"})
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "opponent_opted_out"
