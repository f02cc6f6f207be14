"""The web pages in a real browser: submit a bot, start a tournament and watch its bracket
change without a reload, step through a replay, download a log and verify it, and make sure
nothing a user or a bot typed ever runs as script."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from playwright.sync_api import expect

from arena.core.models import Bot, BotVersion, utcnow
from arena.core.storage import get_db
from arena.ops.procs import Child
from sample_bots.sdk import serve_in_thread
from tests.arena.conftest import (
    ADMIN,
    admin_headers,
    both_backends,
    register,
    wait_for,
)
from tests.ports import closed_port_url

XSS = "<script>alert(1)</script>"
XSS_IMG = '<img src=x onerror="alert(2)">'


@pytest.fixture
def settings(settings: dict[str, Any]) -> dict[str, Any]:
    settings["MATCH_DEALS"] = 1
    return settings


@pytest.fixture
def five_bots(client: FlaskClient, sample_bots: dict[str, str]) -> list[int]:
    names = ["random", "greedy", "planner", "random-2", "greedy-2"]
    return [register(client, n, sample_bots[n])[0] for n in names]


@pytest.fixture
def evil_bot() -> Iterator[str]:
    """A bot that describes itself, and talks, in HTML."""
    import random

    rng = random.Random(4)

    def choose(request: dict[str, Any]) -> Any:
        ids = [m["id"] for m in request["legal_moves"]]
        return {"move": rng.choice(ids), "say": XSS_IMG}

    server = serve_in_thread(choose, name=XSS, author=XSS_IMG)
    yield server.url
    server.shutdown()
    server.server_close()


def finished_tournament(client: FlaskClient, bots: list[int], start_worker: Callable[[], Child],
                        **kw: Any) -> dict[str, Any]:
    r = client.post("/api/tournaments", json={"format": "knockout", "bots": bots, "deals": 1,
                                              "start": True, **kw}, headers=admin_headers())
    assert r.status_code == 201, r.get_json()
    tid = r.get_json()["id"]
    start_worker()
    return wait_for(lambda: (b := client.get(f"/api/tournaments/{tid}").get_json())
                    ["state"] == "finished" and b, 180, every_s=0.5,
                    what="the tournament to finish")


# --- submit a bot -----------------------------------------------------------------------------


@pytest.mark.drill
def test_submit_a_bot_through_the_form(page: Any, live_server: str, client: FlaskClient,
                                       sample_bots: dict[str, str], shots: Path,
                                       start_worker: Callable[[], Child]) -> None:
    start_worker()  # runs the health checks the form queues
    page.goto(live_server + "/bots/new")
    page.screenshot(path=str(shots / "submit-bot.png"), full_page=True)
    # A name the service refuses comes back as a clear, escaped error.
    page.fill("#name", XSS)
    page.fill("#url", sample_bots["greedy"])
    page.click("button[type=submit]")
    error = page.locator(".alert.error")
    assert "Name:" in error.inner_text() and "The bot was not submitted" in error.inner_text()
    assert page.input_value("#name") == XSS  # kept, as text
    # A good submission: the token is shown once, at once, and the page follows the health
    # check (local JavaScript polling the check's JSON) until it has passed.
    page.fill("#name", "my-greedy")
    page.click("button[type=submit]")
    page.wait_for_selector("#owner-token")
    token = page.inner_text("#owner-token").strip()
    assert len(token) > 30
    progress = page.locator("#check-progress")
    expect(progress).to_have_attribute("data-state", "passed", timeout=60_000)
    assert "Health check passed" in progress.inner_text()
    assert "the bot plays in the ladder" in progress.inner_text()
    page.screenshot(path=str(shots / "bot-submitted.png"), full_page=True)
    # The form redirected (no token in the URL), so a reload posts nothing again: the same
    # welcome, without the secrets, and no failure (issue 19 §4).
    assert re.search(r"/bots/\d+/welcome$", page.url) and token not in page.url
    page.reload()
    assert page.locator("h1").inner_text() == "Welcome to the arena, my-greedy"
    assert page.locator("[data-test=shown-once]").count() == 1
    assert page.locator("#owner-token").count() == 0 and token not in page.content()
    assert "exists already" not in page.content()
    bots = client.get("/api/bots").get_json()["items"]
    mine = next(b for b in bots if b["name"] == "my-greedy")
    # The token works as the owner token, and nothing else shows it again.
    r = client.get(f"/api/bots/{mine['id']}", headers={"Authorization": f"Bearer {token}"})
    assert r.get_json()["url"] == sample_bots["greedy"]
    page.click("text=Go to the bot's page")
    assert page.locator("h1").inner_text().startswith("my-greedy")
    assert token not in page.content()
    # A bot that does not answer: the page shows the failure, in words for its author.
    page.goto(live_server + "/bots/new")
    page.fill("#name", "ghost")
    page.fill("#url", closed_port_url())
    page.click("button[type=submit]")
    progress = page.locator("#check-progress")
    expect(progress).to_have_attribute("data-state", "failed", timeout=60_000)
    assert "no HTTP answer from the bot URL within" in progress.inner_text()
    assert "alert error" in (progress.get_attribute("class") or "")


def test_forms_refuse_a_missing_csrf_token(client: FlaskClient,
                                           sample_bots: dict[str, str]) -> None:
    r = client.post("/bots/new", data={"name": "x", "url": sample_bots["greedy"]})
    assert r.status_code == 400 and b"did not come from this site" in r.data
    r = client.post("/tournaments/new", data={"format": "knockout", "admin_token": ADMIN})
    assert r.status_code == 400
    assert client.get("/api/bots").get_json()["total"] == 0


# --- a tournament, live -----------------------------------------------------------------------


@pytest.mark.drill
@both_backends
def test_start_a_tournament_and_watch_the_bracket_change_live(
    page: Any, live_server: str, client: FlaskClient, five_bots: list[int],
    start_worker: Callable[[], Child], shots: Path,
) -> None:
    page.goto(live_server + "/tournaments/new")
    page.fill("#t-name", "Live knockout")
    page.select_option("#t-format", "knockout")
    page.fill("#t-deals", "2")
    page.check("input[name=duplicate]")
    page.fill("#t-admin", ADMIN)
    page.screenshot(path=str(shots / "new-tournament.png"), full_page=True)
    page.click("button[type=submit]")
    page.wait_for_url("**/tournaments/*")
    assert page.locator("h1").inner_text() == "Live knockout"
    page.evaluate("window.__no_reload = 'still the same page'")
    live = page.locator("#live")
    assert live.get_attribute("data-state") == "running"
    expect(live).to_have_attribute("data-push", "open")  # pushed by the live relay
    assert "0 of 4 matches played" in live.inner_text()
    # Round 1: one table and two byes; the final is drawn already, to be decided.
    assert page.locator("svg.bracket .box-table.box-playing").count() == 1
    assert page.locator("svg.bracket .box-byes").count() == 1
    assert page.locator("svg.bracket .box-table.box-pending").count() == 1
    assert page.locator("svg.bracket .tbd").count() == 4
    before = page.inner_html("#live")
    # Matches start finishing only now: the page must follow without a reload.
    start_worker()
    expect(live).to_contain_text(re.compile(r"[1-9][0-9]* of [0-9]+ matches played"),
                                 timeout=120_000)
    assert page.inner_html("#live") != before
    page.screenshot(path=str(shots / "tournament-live.png"), full_page=True)
    expect(live).to_have_attribute("data-state", "finished", timeout=240_000)
    assert page.evaluate("window.__no_reload") == "still the same page"
    # The final table appeared in its own column, with connectors from the advancers.
    assert page.locator("svg.bracket .box-table.box-done").count() == 2
    assert page.locator("svg.bracket .tbd").count() == 0
    assert page.locator("svg.bracket .connector").count() == 4
    assert page.locator("svg.bracket .row-adv").count() >= 4
    assert page.locator(".champion").count() == 1
    standings = client.get(page.url.replace(live_server, "").replace(
        "/tournaments/", "/api/tournaments/") + "/standings").get_json()
    assert page.locator(".champion").inner_text().endswith(standings["items"][0]["bot"]["name"])
    page.screenshot(path=str(shots / "tournament.png"), full_page=True)


@pytest.mark.drill
def test_round_robin_page_shows_standings_and_rounds(
    page: Any, live_server: str, client: FlaskClient, five_bots: list[int],
    start_worker: Callable[[], Child], shots: Path,
) -> None:
    t = finished_tournament(client, five_bots, start_worker, format="round_robin",
                            duplicate=False, name="Round robin of five")
    page.goto(f"{live_server}/tournaments/{t['id']}")
    rows = page.locator("table.standings tbody tr")
    assert rows.count() == 5
    assert page.locator("svg.bracket .box-table").count() == t["rounds"]
    page.screenshot(path=str(shots / "round-robin.png"), full_page=True)
    page.goto(live_server + "/tournaments")
    assert "Round robin of five" in page.inner_text("table")


# --- replay and downloads ---------------------------------------------------------------------


@pytest.mark.drill
def test_replay_steps_through_a_match_and_the_log_downloads_and_verifies(
    page: Any, live_server: str, client: FlaskClient, five_bots: list[int],
    start_worker: Callable[[], Child], shots: Path, tmp_path: Path,
) -> None:
    r = client.post("/api/matches", json={"bots": five_bots[:4], "deals": 2, "seed": 9},
                    headers=admin_headers())
    match_id = r.get_json()["id"]
    start_worker()
    wait_for(lambda: client.get(f"/api/matches/{match_id}").get_json()["state"] == "finished",
             120, what="the match")
    page.goto(f"{live_server}/matches/{match_id}")
    replay = page.locator("#replay")
    page.wait_for_selector("#replay[data-ready=true]")
    assert replay.get_attribute("data-turn") == "0"
    assert page.locator(".felt .seat").count() == 4
    assert page.locator(".felt .seat .card").count() == 52  # every hand, face up
    info0 = page.inner_text("[data-role=info]")
    for _ in range(5):
        page.click("[data-role=next]")
    assert replay.get_attribute("data-turn") == "5"
    info5 = page.inner_text("[data-role=info]")
    assert info5 != info0 and "turn 5/" in info5 and " ms" in info5
    assert page.locator(".felt .seat .card").count() < 52  # cards were played
    page.click("[data-role=prev]")
    assert replay.get_attribute("data-turn") == "4"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert replay.get_attribute("data-turn") == "6"
    page.screenshot(path=str(shots / "match-replay.png"), full_page=True)
    page.click("[data-role=play]")
    assert replay.get_attribute("data-playing") == "true"
    expect(replay).to_have_attribute("data-turn", re.compile(r"^([7-9]|\d\d+)$"),
                                     timeout=10_000)
    page.click("[data-role=play]")
    assert replay.get_attribute("data-playing") == "false"
    page.click("[data-role=last]")
    assert "wins deal 1" in page.inner_text(".felt .center") or \
        "deal 1 over" in page.inner_text(".felt .center")
    page.select_option("[data-role=deal]", "1")
    assert replay.get_attribute("data-deal") == "1"
    # Downloads: JSON and JSON Lines, both verified by the referee's own command.
    for test_id, suffix in (("download-json", ".json"), ("download-jsonl", ".jsonl")):
        with page.expect_download() as dl:
            page.click(f"[data-test={test_id}]")
        path = tmp_path / f"match-{match_id}{suffix}"
        dl.value.save_as(str(path))
        out = subprocess.run([sys.executable, "-m", "referee", "verify", str(path)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "valid" in out.stdout


# --- escaping, headers, spectators ------------------------------------------------------------


@pytest.mark.drill
def test_nothing_typed_by_a_user_or_a_bot_runs_as_script(
    page: Any, live_server: str, app: Flask, client: FlaskClient,
    sample_bots: dict[str, str], evil_bot: str, start_worker: Callable[[], Child],
    shots: Path,
) -> None:
    # The API refuses such a name, so put one in the database directly (as if an older
    # version had allowed it), and register a bot that *describes itself* in HTML.
    with get_db(app).begin() as s:
        bot = Bot(name=XSS, url=sample_bots["random"], version=1, token_hash="0" * 64,
                  check_state="passed",
                  created_at=utcnow(), updated_at=utcnow(), idle_since=utcnow(), info={
                      "name": XSS_IMG, "author": XSS, "version": XSS})
        s.add(bot)
        s.flush()
        s.add(BotVersion(bot_id=bot.id, version=1, url=sample_bots["random"], info={}))
        evil_id = bot.id
    talker = register(client, "talker", evil_bot)[0]
    others = [register(client, n, sample_bots[n])[0] for n in ("greedy", "planner")]
    t = finished_tournament(client, [evil_id, talker, *others], start_worker,
                            name=f"Cup {XSS}", duplicate=False)
    match_id = client.get(f"/api/tournaments/{t['id']}/bracket").get_json()[
        "rounds"][0]["tables"][0]["matches"][0]["id"]
    pages = ["/", "/leaderboard", "/bots", "/matches", f"/bots/{evil_id}", f"/bots/{talker}",
             f"/tournaments/{t['id']}", "/tournaments", f"/matches/{match_id}"]
    for path in pages:
        resp = page.goto(live_server + path)
        assert resp.status == 200, path
        headers = resp.headers
        assert "unsafe-inline" not in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        if path.startswith("/matches/"):
            page.wait_for_selector("#replay[data-ready=true]")
            for _ in range(8):
                page.click("[data-role=next]")
        html = page.content()
        assert "<script>alert(1)</script>" not in html, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, path  # shown, as text
        assert page.evaluate("document.querySelectorAll('img, [onerror]').length") == 0, path
        assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    # The name shows as text where it belongs.
    page.goto(f"{live_server}/bots/{evil_id}")
    assert page.locator("h1").inner_text().startswith(XSS)
    page.goto(f"{live_server}/tournaments/{t['id']}")
    assert XSS in page.locator("h1").inner_text()
    assert page.evaluate("document.title").startswith("Cup <script>")
    # Pages work for spectators: no token anywhere, no cookie needed.
    assert client.get("/leaderboard").status_code == 200


@pytest.mark.drill
def test_pages_for_unknown_things_are_404_pages(page: Any, live_server: str) -> None:
    for path in ("/bots/999", "/matches/999", "/tournaments/999"):
        resp = page.goto(live_server + path)
        assert resp.status == 404
        assert "Nothing here" in page.inner_text("h1")


@pytest.mark.drill
def test_home_leaderboard_and_bot_pages(
    page: Any, live_server: str, client: FlaskClient, five_bots: list[int],
    start_worker: Callable[[], Child], shots: Path,
) -> None:
    for i in range(3):
        table = five_bots[i:] + five_bots[:i]
        r = client.post("/api/matches", json={"bots": table[:4], "deals": 1, "seed": i},
                        headers=admin_headers())
        assert r.status_code == 202
    start_worker()
    wait_for(lambda: len(client.get("/api/matches?state=finished").get_json()["items"]) >= 3,
             120, what="ladder matches")
    page.goto(live_server + "/")
    assert "Big Two Arena" in page.inner_text("h1")
    page.screenshot(path=str(shots / "home.png"), full_page=True)
    page.goto(live_server + "/leaderboard")
    rows = page.locator("table.table tbody tr")
    assert rows.count() == 5
    assert page.locator(".chart polyline").count() == 5
    assert page.locator(".prov").count() >= 1  # everyone is provisional after a few games
    page.screenshot(path=str(shots / "leaderboard.png"), full_page=True)
    page.click("table.table tbody tr:first-child a.bot")
    assert page.locator(".chart polyline").count() >= 1
    assert "latency p50" in page.inner_text(".stats")
    page.screenshot(path=str(shots / "bot.png"), full_page=True)
    body = json.dumps(client.get("/api/openapi.json").get_json())
    assert "/tournaments/{tournament_id}/live" in body


# --- live matches -----------------------------------------------------------------------------


@pytest.mark.drill
def test_a_running_match_is_watched_live_turn_by_turn(
    page: Any, live_server: str, client: FlaskClient, sample_bots: dict[str, str],
    start_worker: Callable[[], Child], shots: Path,
) -> None:
    from sample_bots import greedy_bot

    # A thinking bot: the match takes a while. It thinks longer until the test has seen the
    # table move live: a queued page looks at the match every 5 s, and a match over in less
    # (a worker slow to start on a saturated machine, then quick turns) was never seen running.
    seen_live = threading.Event()

    def slow(request: dict[str, Any]) -> str:
        time.sleep(0.15 if seen_live.is_set() else 0.4)
        return str(greedy_bot.choose(request))

    srv = serve_in_thread(slow, name="thinker")
    try:
        bots = [register(client, "thinker", srv.url)[0]] + [
            register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
        r = client.post("/api/matches", json={"bots": bots, "deals": 2, "seed": 3},
                        headers=admin_headers())
        match_id = r.get_json()["id"]
        page.goto(f"{live_server}/matches/{match_id}")  # queued: it waits for the start
        page.evaluate("window.__no_reload = 'still the same page'")
        badge = page.locator("h1 [data-role=match-state]")  # follows the match's state
        expect(badge).to_have_attribute("data-state", "queued")
        expect(badge.locator(".badge")).to_have_text("queued")
        start_worker()
        replay = page.locator("#replay")
        expect(replay).to_have_attribute("data-live", "live", timeout=60_000)
        expect(badge).to_have_attribute("data-state", "running", timeout=60_000)
        expect(badge.locator(".badge.badge-running")).to_have_text("running")
        expect(replay).to_have_attribute("data-turn", re.compile(r"^([3-9]|\d\d+)$"),
                                         timeout=60_000)
        def position() -> tuple[str | None, str | None]:
            return replay.get_attribute("data-deal"), replay.get_attribute("data-turn")

        first = position()
        # Hands are face down while the deal is played: only their sizes are shown.
        assert page.locator(".felt .seat > .cards .card.back").count() > 0
        assert page.locator(".felt .seat > .cards .card:not(.back)").count() == 0
        assert "legal move" not in page.inner_text("[data-role=info]")
        # Moved on: a later turn, or the next deal (whose turns start again).
        wait_for(lambda: position() != first, 120, what="the table to move on by itself")
        seen_live.set()
        page.screenshot(path=str(shots / "match-live.png"), full_page=True)
        # The first deal ends: its hands are revealed, the viewer follows into deal 2.
        expect(replay).to_have_attribute("data-deal", "1", timeout=120_000)
        page.select_option("[data-role=deal]", "0")
        page.click("[data-role=first]")
        assert page.locator(".felt .seat > .cards .card:not(.back)").count() == 52
        expect(replay).to_have_attribute("data-over", "true", timeout=120_000)
        expect(badge.locator(".badge.badge-finished")).to_have_text("finished")
        assert badge.locator(".pulse").count() == 0
        assert page.evaluate("window.__no_reload") == "still the same page"
        page.click("[data-role=over] a")
        page.wait_for_selector("#replay[data-ready=true]")  # the finished match's replay
        assert page.locator("[data-test=download-json]").count() == 1
    finally:
        srv.shutdown()
        srv.server_close()
