"""Live now (``/live``, ``/api/live``, the home page's section) with real running matches:
a real worker plays bots that think (``--think-ms``), the real relay streams the match and
writes its viewer counts to the real Redis, and the pages show them; without a relay the
counts are unknown ("—"), never a wrong zero; whatever a user typed is escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from arena.core.models import Bot, Match, utcnow
from arena.core.storage import get_db
from arena.live.viewers import ViewerCounts
from arena.ops.procs import Child, start_relay, stop_all
from sample_bots import greedy_bot, planner_bot, random_bot
from sample_bots.sdk import BotServer, make_server, serve_in_thread, think_ms_arg
from tests.arena.conftest import admin_headers, both_backends, register, wait_for, worker_env
from tests.arena.sse import Stream
from tests.arena.test_openapi import check_answer
from tests.ports import closed_port

THINK_MS = 60
"""Each test bot's thinking time: a 4-deal match lasts seconds, long enough to watch."""
EVIL = "<script>alert('x')</script>&"


@pytest.fixture
def relay(app: Flask) -> Iterator[Callable[[], str]]:
    children: list[Child] = []

    def start() -> str:
        child = start_relay(worker_env(app))
        children.append(child)
        assert child.url is not None
        return child.url

    yield start
    stop_all(children)


@pytest.fixture
def thinkers() -> Iterator[list[BotServer]]:
    servers = [serve_in_thread(choose, name=f"thinker-{i}", think_ms=THINK_MS)
               for i, choose in enumerate((greedy_bot.choose, random_bot.choose,
                                           planner_bot.choose, greedy_bot.choose))]
    yield servers
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def new_match(client: FlaskClient, bots: list[int], deals: int) -> int:
    r = client.post("/api/matches", json={"bots": bots, "deals": deals, "seed": 3},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    return int(r.get_json()["id"])


def live(client: FlaskClient) -> dict[str, Any]:
    r = client.get("/api/live")
    assert r.status_code == 200
    body: dict[str, Any] = r.get_json()
    return body


def shown(client: FlaskClient, match_id: int) -> dict[str, Any] | None:
    return next((m for m in live(client)["matches"] if m["id"] == match_id), None)


@pytest.mark.drill
@both_backends
def test_a_running_match_is_live_with_its_viewers_and_thinking_bots_take_their_time(
        app: Flask, client: FlaskClient, thinkers: list[BotServer],
        start_worker: Callable[[], Child], relay: Callable[[], str]) -> None:
    bots = [register(client, f"thinker-{i}", srv.url)[0] for i, srv in enumerate(thinkers)]
    base = relay()
    match_id = new_match(client, bots, deals=4)
    start_worker()
    wait_for(lambda: shown(client, match_id), what="the match to be live")
    body = wait_for(lambda: (lambda b: b if b["viewers_known"] else None)(live(client)),
                    what="the relay's counts")
    assert body["featured"] == match_id and body["matches"][0]["id"] == match_id
    assert [s["bot"]["id"] for s in body["matches"][0]["seats"]] == bots
    doc = client.get("/api/openapi.json").get_json()
    check_answer(doc, client, "get", "/api/live", "/api/live", 200)

    with Stream(f"{base}/live/matches/{match_id}/events") as stream:
        assert stream.status == 200
        watched = wait_for(lambda: (shown(client, match_id) or {}).get("viewers", 0) >= 1
                           and shown(client, match_id), what="the viewer to be counted")
        assert watched["viewers"] == 1
        page = client.get("/live").get_data(as_text=True)
        assert f'href="/matches/{match_id}"' in page and "1 watching" in page
        home = client.get("/").get_data(as_text=True)
        assert 'id="live-now"' in home and f'data-match="{match_id}"' in home

    def over() -> bool:
        state = client.get(f"/api/matches/{match_id}").get_json()["state"]
        return state in ("finished", "failed")

    wait_for(over, timeout_s=180, what="the match to end")
    done = client.get(f"/api/matches/{match_id}").get_json()
    assert done["state"] == "finished"
    for seat in done["seats"]:  # every answer waited the thinking time (never an upper bound)
        assert seat["latency"]["p50_ms"] >= THINK_MS, seat
    assert shown(client, match_id) is None  # no longer live


@both_backends
def test_without_a_relay_counts_are_unknown_and_names_are_escaped(
        app: Flask, client: FlaskClient, four_bots: list[int]) -> None:
    match_id = new_match(client, four_bots, deals=1)
    with get_db(app).begin() as s:  # running, as a worker's claim leaves it (none runs here)
        s.execute(update(Match).where(Match.id == match_id)
                  .values(state="running", started_at=utcnow()))
        # A name from before today's rules (they forbid these characters): shown as text.
        s.execute(update(Bot).where(Bot.id == four_bots[0]).values(name=EVIL))
    body = live(client)
    assert body["viewers_known"] is False and body["featured"] == match_id
    assert body["matches"][0]["viewers"] is None
    assert body["matches"][0]["seats"][0]["bot"]["name"] == EVIL
    for url in ("/live", "/"):
        page = client.get(url).get_data(as_text=True)
        assert "&mdash; watching" in page, url
        assert EVIL not in page and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;" in page


def test_an_unreachable_redis_means_unknown_counts() -> None:
    port = closed_port()  # nothing listens, and nobody can start to
    counts = ViewerCounts(f"redis://127.0.0.1:{port}/0", "nowhere:live")
    assert counts.get([("match", 1)]) is None


def test_think_ms_is_bounded_well_under_the_deadline() -> None:
    assert think_ms_arg("0") == 0 and think_ms_arg("500") == 500
    for bad in ("501", "-1", "fast"):
        with pytest.raises(Exception, match=r"must be from 0 to 500|not a whole number"):
            think_ms_arg(bad)
    with pytest.raises(ValueError):
        make_server(greedy_bot.choose, name="x", think_ms=10_000)
