"""The response cache (:mod:`arena.web.readcache`): answers reused within ``READ_CACHE_S`` and
never older, writes through the process empty it, per-user and per-session answers are
never stored, and the routes that must stay fresh exist."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask, Response
from sqlalchemy import event, update

from arena import create_app
from arena.core.models import Bot
from arena.core.storage import get_db, upgrade
from arena.web.readcache import NEVER, TOKEN_SLOT, ReadCache, get_cache

from .conftest import admin_headers, both_backends, both_backends_drill_on_postgres
from .test_read_path import seed


@both_backends
def test_a_shared_form_page_carries_each_visitors_own_csrf_token(
        cached_app: tuple[Flask, Clock]) -> None:
    app, _ = cached_app
    a, b = app.test_client(), app.test_client()
    page_a, page_b = a.get("/bots/new"), b.get("/bots/new")
    assert page_b.headers["Age"] == "0"  # one render, shared
    token = re.compile(r'name="csrf_token" value="([^"]+)"')
    ta, tb = token.findall(page_a.get_data(as_text=True)), token.findall(
        page_b.get_data(as_text=True))
    assert len(ta) == len(tb) == 1 and ta != tb and TOKEN_SLOT not in ta + tb
    # Each token is the one in its visitor's session: the form's CSRF check passes with it
    # (the answer names the bad URL, not an expired form) and fails with the other's.
    ok = a.post("/bots/new", data={"csrf_token": ta[0], "name": "x", "url": "nope"})
    crossed = a.post("/bots/new", data={"csrf_token": tb[0], "name": "x", "url": "nope"})
    assert ok.status_code == crossed.status_code == 400
    assert "expired" not in ok.get_data(as_text=True)
    assert "expired" in crossed.get_data(as_text=True)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cached_app(settings: dict[str, Any]) -> Iterator[tuple[Flask, Clock]]:
    app = create_app({**settings, "READ_CACHE_S": 5.0})
    upgrade(get_db(app))
    cache = get_cache(app)
    assert cache is not None
    clock = cache.clock = Clock()
    if cache.shared is not None:  # the deployment's tier ages entries by the same clock
        cache.shared.wall = clock
    yield app, clock
    get_db(app).dispose()


def statements(app: Flask) -> list[str]:
    seen: list[str] = []
    event.listen(get_db(app).engine, "before_cursor_execute",
                 lambda *args: seen.append(args[2]))
    return seen


@both_backends
def test_an_answer_is_reused_within_the_bound_and_never_older(
        cached_app: tuple[Flask, Clock]) -> None:
    app, clock = cached_app
    data = seed(app, 12)
    client = app.test_client()
    first = client.get("/leaderboard")
    assert first.status_code == 200 and "Age" not in first.headers
    with get_db(app).begin() as s:  # a change the process does not see (another process)
        s.execute(update(Bot).where(Bot.id.in_(data.bots)).values(name=Bot.name + "-renamed"))
    sent = statements(app)
    clock.now += 2.4
    again = client.get("/leaderboard")
    assert again.get_data() == first.get_data() and again.headers["Age"] == "2"
    assert sent == []  # a hit renders nothing
    clock.now += 0.1  # half its life gone: the next request renders it anew
    fresh = client.get("/leaderboard")
    assert "-renamed" in fresh.get_data(as_text=True) and "Age" not in fresh.headers
    assert sent, "the aging answer was not rendered again"
    sent.clear()
    clock.now += 0.1
    assert client.get("/leaderboard").get_data() == fresh.get_data() and sent == []


def test_no_answer_is_older_than_the_bound_even_while_another_is_rendered() -> None:
    clock = Clock()
    cache = ReadCache(5.0, 2**20, clock=clock)
    app = Flask(__name__)
    with app.test_request_context("/"):
        cache.answer("k", lambda: Response("old"))
        cache._inflight["k"] = threading.Event()  # another thread renders "k" meanwhile
        clock.now += 4.9
        assert cache.answer("k", lambda: Response("new")).get_data() == b"old"
        clock.now += 0.1  # 5 s: too old to give out, whoever is rendering
        cache._inflight["k"].set()
        assert cache.answer("k", lambda: Response("new")).get_data() == b"new"


@both_backends
def test_a_write_through_the_process_empties_its_cache(
        cached_app: tuple[Flask, Clock]) -> None:
    app, _ = cached_app
    client = app.test_client()
    assert client.get("/api/bots").get_json()["total"] == 0
    r = client.post("/api/bots", json={"name": "newcomer", "url": "http://127.0.0.1:9/x"})
    assert r.status_code == 202
    listed = client.get("/api/bots").get_json()
    assert [b["name"] for b in listed["items"]] == ["newcomer"]
    assert client.get("/api/bots").headers.get("Age") == "0"  # cached again


@both_backends_drill_on_postgres
def test_private_answers_are_never_stored(
        cached_app: tuple[Flask, Clock]) -> None:
    app, _ = cached_app
    data = seed(app, 12)
    bot = data.bots[0]
    client = app.test_client()
    private = client.get(f"/api/bots/{bot}", headers=admin_headers()).get_json()
    assert "url" in private  # the owner's (or operator's) view
    public = client.get(f"/api/bots/{bot}")
    assert "url" not in public.get_json() and "Age" not in public.headers
    assert "url" in client.get(f"/api/bots/{bot}", headers=admin_headers()).get_json()
    assert client.get(f"/api/bots/{bot}").headers["Age"] == "0"
    # A conditional request is answered by the view itself.
    assert "Age" not in client.get(f"/api/bots/{bot}",
                                   headers={"If-None-Match": '"x"'}).headers


def test_the_routes_that_must_stay_fresh_exist_and_are_not_cached(
        cached_app: tuple[Flask, Clock]) -> None:
    app, _ = cached_app
    rules = {r.rule for r in app.url_map.iter_rules()}
    assert rules >= NEVER, f"NEVER names routes that no longer exist: {NEVER - rules}"
    client = app.test_client()
    for _ in range(2):
        assert "Age" not in client.get("/healthz").headers


def test_a_render_that_began_before_a_write_is_not_stored() -> None:
    cache = ReadCache(60.0, 2**20, clock=Clock())
    renders = []

    def render(during: Any = None) -> Response:
        renders.append(1)
        if during is not None:
            during()
        return Response(f"render {len(renders)}")

    app = Flask(__name__)
    with app.test_request_context("/"):
        assert cache.answer("k", lambda: render(cache.clear)).get_data() == b"render 1"
        assert cache.answer("k", render).get_data() == b"render 2"  # not stored
        assert cache.answer("k", render).get_data() == b"render 2"  # stored
    assert len(renders) == 2


def test_the_cache_keeps_the_newest_entries_within_its_memory() -> None:
    cache = ReadCache(60.0, 400, clock=Clock())
    app = Flask(__name__)
    with app.test_request_context("/"):
        for key in "abcde":
            cache.answer(key, lambda key=key: Response(key * 100))
        renders = []
        cache.answer("e", lambda: renders.append(1) or Response("x"))
        cache.answer("a", lambda: renders.append(1) or Response("x"))
    assert renders == [1]  # "e" was kept, "a" was evicted


@both_backends_drill_on_postgres
def test_a_visitor_whose_session_holds_more_than_a_csrf_token_is_answered_by_the_view(
        cached_app: tuple[Flask, Clock]) -> None:
    """A signed-in owner's pages may differ from everyone's (their bots' links, their calls):
    such a request neither takes a shared answer nor leaves one for others."""
    app, _ = cached_app
    seed(app, 12)
    owner, stranger = app.test_client(), app.test_client()
    with owner.session_transaction() as sess:
        sess["owned"] = [1]
    assert "Age" not in owner.get("/leaderboard").headers  # rendered for the owner alone
    assert "Age" not in stranger.get("/leaderboard").headers  # nothing was left behind
    assert stranger.get("/leaderboard").headers["Age"] == "0"  # the public answer is shared
    assert "Age" not in owner.get("/leaderboard").headers  # and never given to the owner


# --- only a real change empties the cache (arena.core.changes) --------------------------------


def csrf_of(client: Any, path: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).get_data(as_text=True))
    assert found is not None
    return found.group(1)


def generation(app: Flask) -> bytes | None:
    cache = get_cache(app)
    assert cache is not None and cache.shared is not None
    value: bytes | None = cache.shared._client().get(cache.shared.generation_key)  # type: ignore[union-attr]
    return value


@both_backends
def test_writes_that_change_nothing_empty_no_cache(cached_app: tuple[Flask, Clock]) -> None:
    """Sign-outs (nobody signed in), refused forms, a wrong owner token, a pause of a running
    bot, a refused or replayed submission: each answers as before and leaves every render,
    in this process and in the shared tier (778 sign-outs in 3 s used to keep every page
    uncached for everyone)."""
    app, _ = cached_app
    visitor = app.test_client()
    first = visitor.post("/api/bots", json={"name": "resident", "url": "http://127.0.0.1:9/r"},
                         headers={"Idempotency-Key": "resident-1"})
    assert first.status_code == 202
    bot_id, token = first.get_json()["bot"]["id"], first.get_json()["token"]
    owner = {"Authorization": f"Bearer {token}"}
    pages = ["/api/bots", f"/api/bots/{bot_id}", "/leaderboard"]
    for page in pages:
        assert "Age" not in visitor.get(page).headers
    before = generation(app)
    csrf = csrf_of(visitor, f"/bots/{bot_id}")
    no_ops = [
        (303, lambda: visitor.post(f"/bots/{bot_id}/owner/sign-out", data={"csrf_token": csrf})),
        (403, lambda: visitor.post(f"/bots/{bot_id}/owner",
                                   data={"csrf_token": csrf, "owner_token": "wrong"})),
        (400, lambda: visitor.post("/bots/new", data={"csrf_token": csrf, "name": "x",
                                                      "url": "no"})),
        (200, lambda: visitor.patch(f"/api/bots/{bot_id}", json={"paused": False},
                                    headers=owner)),
        (409, lambda: visitor.post("/api/bots", json={"name": "resident",
                                                      "url": "http://h:9/"})),
        (202, lambda: visitor.post("/api/bots", json={"name": "resident",
                                                      "url": "http://127.0.0.1:9/r"},
                                   headers={"Idempotency-Key": "resident-1"})),
        (404, lambda: visitor.delete("/api/bots/999999", headers=owner)),
    ]
    for i, (status, op) in enumerate(no_ops):
        assert op().status_code == status, i
        for page in pages:  # still the stored render
            assert visitor.get(page).headers.get("Age") == "0", (i, page)
    assert generation(app) == before


@both_backends
def test_every_real_change_empties_the_cache(cached_app: tuple[Flask, Clock],
                                             four_bots: list[int]) -> None:
    """A pause, a deletion, an operator's step (committed inside the service, on a
    connection of its own): each is seen at once, here and through the shared tier."""
    app, _ = cached_app
    client = app.test_client()
    r = client.post("/api/bots", json={"name": "changer", "url": "http://127.0.0.1:9/c"})
    bot_id, token = r.get_json()["bot"]["id"], r.get_json()["token"]
    owner = {"Authorization": f"Bearer {token}"}
    shown = client.get(f"/api/bots/{bot_id}").get_json()["updated_at"]
    before = generation(app)
    paused = client.patch(f"/api/bots/{bot_id}", json={"paused": True}, headers=owner)
    assert paused.status_code == 200 and paused.get_json()["updated_at"] != shown
    assert client.get(f"/api/bots/{bot_id}").get_json()["updated_at"] != shown
    assert generation(app) != before
    assert client.delete(f"/api/bots/{bot_id}", headers=owner).status_code == 204
    assert client.get(f"/api/bots/{bot_id}").status_code == 404
    t = client.post("/api/tournaments", json={"format": "round_robin", "bots": four_bots},
                    headers=admin_headers()).get_json()
    assert client.get(f"/api/tournaments/{t['id']}").get_json()["state"] == "created"
    assert client.post(f"/api/tournaments/{t['id']}/cancel",
                       headers=admin_headers()).status_code == 200
    assert client.get(f"/api/tournaments/{t['id']}").get_json()["state"] == "cancelled"
