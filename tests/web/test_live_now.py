""""Live now" in a real browser: a match being played by real bots shows up on the home page
and on /live as the featured table, and its "Watch it live" button opens the live match.
When nothing is played any more, both say so."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from playwright.sync_api import expect

from arena.ops.procs import Child
from sample_bots.sdk import serve_in_thread
from tests.arena.conftest import admin_headers, register, wait_for


@pytest.mark.drill
def test_a_running_match_is_featured_and_watched_from_live_now(
    page: Any, live_server: str, client: FlaskClient, sample_bots: dict[str, str],
    start_worker: Callable[[], Child], shots: Path,
) -> None:
    from sample_bots import greedy_bot

    released = threading.Event()

    def slow(request: dict[str, Any]) -> str:
        """A thinking bot: the match lasts until the test has watched it, then ends fast."""
        if not released.is_set():
            time.sleep(0.3)
        return str(greedy_bot.choose(request))

    srv = serve_in_thread(slow, name="thinker")
    try:
        page.goto(f"{live_server}/live")
        expect(page.locator("[data-role=no-live]")).to_be_visible()
        bots = [register(client, "thinker", srv.url)[0]] + [
            register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
        r = client.post("/api/matches", json={"bots": bots, "deals": 8, "seed": 5},
                        headers=admin_headers())
        match_id = r.get_json()["id"]
        start_worker()
        wait_for(lambda: client.get(f"/api/matches/{match_id}").get_json()["state"]
                 == "running", 120, what="the match to start")

        # The home page's section and /live both feature it, with its seats.
        page.goto(live_server + "/")
        home = page.locator("[data-role=featured]")
        expect(home).to_have_attribute("data-match", str(match_id))
        page.goto(f"{live_server}/live")
        featured = page.locator("[data-role=featured]")
        expect(featured).to_have_attribute("data-match", str(match_id))
        expect(featured.locator(".seats")).to_contain_text("thinker")
        expect(featured.locator("[data-role=viewers]")).to_contain_text("watching")
        assert page.locator("[data-role=no-live]").count() == 0
        api = client.get("/api/live").get_json()
        assert api["featured"] == match_id and [m["id"] for m in api["matches"]] == [match_id]
        page.screenshot(path=str(shots / "live-now.png"), full_page=True)

        # "Watch it live" opens the match, played turn by turn.
        featured.get_by_role("link", name="Watch it live").click()
        page.wait_for_url(f"{live_server}/matches/{match_id}")
        replay = page.locator("#replay")
        expect(replay).to_have_attribute("data-live", "live", timeout=60_000)

        # Once it is over, nothing is live any more.
        released.set()
        wait_for(lambda: client.get(f"/api/matches/{match_id}").get_json()["state"]
                 == "finished", 300, what="the match to finish")
        page.goto(f"{live_server}/live")
        expect(page.locator("[data-role=no-live]")).to_be_visible()
        assert page.locator("[data-role=featured]").count() == 0
    finally:
        released.set()
        srv.shutdown()
        srv.server_close()
