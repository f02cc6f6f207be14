"""A bot's last calls, for its owner: exact requests, raw answers, verdicts; nobody else.

A real match is played by the job body against real HTTP bots: three sample bots and a bot
of our own that records every ``/move`` body it receives and, late in each deal, answers
garbage (an HTML ``<script>``) or a move id that does not exist.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from arena.bots.calls import key
from arena.core.models import Bot, MatchResult
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from arena.play.matches import create_match, default_limits
from referee.game.cards import mask_texts, parse_move
from referee.game.rules import RuleSet
from referee.game.state import Deal, DealContext

from .brokenbot import SECRET_PATH, broken_bot
from .conftest import ADMIN, register

GARBAGE = b"<script>alert('owned')</script>"
CARD = re.compile(r"^(?:10|[2-9TJQKA])[DCHS]$")


@dataclass
class Flaky:
    """Answers well in the opening of a deal (the health probe passes), then alternates a
    good answer, garbage and an unknown move id."""

    received: dict[tuple[str, int], bytes] = field(default_factory=dict)
    server: ThreadingHTTPServer | None = None

    def answer(self, body: bytes) -> bytes:
        request = json.loads(body)
        self.received.setdefault((request["deal_id"], request["turn"]), body)
        turn = request["turn"]
        if turn >= 8 and turn % 3 == 1:
            return GARBAGE
        if turn >= 8 and turn % 3 == 2:
            return b'{"move": "no-such-move"}'
        padding = {"pad": "x" * 5000} if turn >= 8 else {}  # a long answer, still valid
        return json.dumps({"move": request["legal_moves"][0]["id"], **padding}).encode()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_port}"


@pytest.fixture
def flaky() -> Iterator[Flaky]:
    bot = Flaky()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(b'{"protocol": 1, "name": "flaky", "author": "tests", "version": "1"}')

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            self._send(bot.answer(body) if self.path.endswith("/move") else b"{}")

        def log_message(self, *a: object) -> None:
            pass

    bot.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=bot.server.serve_forever, daemon=True).start()
    yield bot
    bot.server.shutdown()
    bot.server.server_close()


@dataclass
class Played:
    match_id: int
    bot_id: int
    token: str
    other_id: int
    other_token: str


@pytest.fixture
def played(app: Flask, client: FlaskClient, sample_bots: dict[str, str],
           flaky: Flaky) -> Played:
    bot_id, token = register(client, "flaky", flaky.url)
    others = [register(client, n, sample_bots[n]) for n in ("random", "greedy", "planner")]
    with get_db(app).begin() as s:
        bots = [s.get(Bot, b) for b in [bot_id, *(o[0] for o in others)]]
        match = create_match(s, bots=[b for b in bots if b is not None], ruleset="standard",
                             deals=2, limits=default_limits(app.config), kind="admin", seed=9)
        match_id = match.id
    with app.app_context():
        assert jobs.play_match(match_id) == "finished"
    return Played(match_id, bot_id, token, others[0][0], others[0][1])


def calls_json(client: FlaskClient, bot_id: int, token: str | None,
               query: str = "") -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.get(f"/api/bots/{bot_id}/calls{query}", headers=headers)


def csrf(client: FlaskClient, bot_id: int) -> str:
    page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found
    return found.group(1)


def sign_in(client: FlaskClient, bot_id: int, token: str) -> Any:
    return client.post(f"/bots/{bot_id}/owner",
                       data={"csrf_token": csrf(client, bot_id), "owner_token": token})


def test_the_owner_gets_the_exact_requests_and_raw_answers(
        client: FlaskClient, played: Played, flaky: Flaky) -> None:
    r = calls_json(client, played.bot_id, played.token)
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    items = r.get_json()["items"]
    assert 0 < len(items) <= 50
    assert [(c["deal"], c["turn"]) for c in items] == sorted(
        ((c["deal"], c["turn"]) for c in items), reverse=True), "newest first"
    for c in items:
        assert c["match_id"] == played.match_id
        sent = json.dumps(c["request"], separators=(",", ":"), ensure_ascii=False).encode()
        assert sent == flaky.received[(c["request"]["deal_id"], c["turn"])]
        assert c["latency_ms"] is not None and c["latency_ms"] >= 0
    verdicts = {c["verdict"] for c in items}
    assert verdicts == {"ok", "not JSON", "unknown move id"}  # each fault's own name
    garbage = next(c for c in items if c["verdict"] == "not JSON")
    assert garbage["answer"] == GARBAGE.decode() and garbage["fault"] == "not_json"
    assert garbage["detail"] == "the answer is not JSON (strict JSON in UTF-8 is expected)"
    assert "reason" not in garbage  # one sentence, not two
    liar = next(c for c in items if c["verdict"] == "unknown move id")
    assert liar["fault"] == "unknown_move" and "no-such-move" in liar["answer"]
    good = next(c for c in items if c["verdict"] == "ok" and not c["answer_truncated"])
    assert json.loads(good["answer"])["move"] == good["move"]
    long = next(c for c in items if c["answer_truncated"])  # kept: its first 2000 bytes
    assert long["verdict"] == "ok" and long["answer_bytes"] > 5000
    assert len(long["answer"].encode()) == 2000 and long["answer"].startswith('{"move": ')
    assert calls_json(client, played.bot_id, played.token, "?limit=3").get_json()[
        "items"] == items[:3]
    assert calls_json(client, played.bot_id, played.token, "?limit=0").status_code == 400
    assert calls_json(client, played.bot_id, played.token, "?limit=51").status_code == 400
    assert calls_json(client, played.bot_id, played.token, "?limit=9" * 3).status_code == 400


def cards_in(value: Any) -> Iterator[str]:
    """Every card text anywhere in a JSON value."""
    if isinstance(value, str) and CARD.match(value):
        yield value
    elif isinstance(value, list):
        for x in value:
            yield from cards_in(x)
    elif isinstance(value, dict):
        for x in value.values():
            yield from cards_in(x)


def test_the_answers_fit_the_documented_schemas(client: FlaskClient, played: Played) -> None:
    from .test_openapi import check_answer

    doc = client.get("/api/openapi.json").get_json()
    path, url = "/api/bots/{bot_id}/calls", f"/api/bots/{played.bot_id}/calls"
    owner = {"Authorization": f"Bearer {played.token}"}
    body = check_answer(doc, client, "get", path, url, 200, headers=owner)
    assert body["kept"] == 50 and body["items"]
    check_answer(doc, client, "get", path, url, 401)
    check_answer(doc, client, "get", path, url, 403, headers={"Authorization": f"Bearer {ADMIN}"})
    check_answer(doc, client, "get", path, url + "?limit=51", 400, headers=owner)
    limit = doc["paths"][path]["get"]["parameters"][0]
    assert limit["schema"]["maximum"] == 50 and limit["schema"]["default"] == 50


def test_a_request_shows_its_own_seat_only(app: Flask, client: FlaskClient,
                                           played: Played) -> None:
    """Every card in a request is the seat's own (its hand, its legal plays) or public
    (already played): never a card another seat still holds."""
    with get_db(app).begin() as s:
        result = s.scalars(select(MatchResult).where(
            MatchResult.match_id == played.match_id)).one()
        doc = json.loads(gzip.decompress(result.log_gz))
    rules = RuleSet.from_options(doc["rules"]["name"], doc["rules"]["options"])
    items = calls_json(client, played.bot_id, played.token).get_json()["items"]
    assert items
    for c in items:
        d = doc["deals"][c["deal"]]
        deal = Deal.new(rules, d["seed"], DealContext(d["index"], d["previous_winner"],
                                                      d["previous_loser"]))
        for t in d["turns"][:c["turn"]]:
            deal.push(parse_move(t["move"]))
        seat = deal.to_move
        hidden = {x for other, hand in enumerate(deal.hands) if other != seat
                  for x in mask_texts(hand)}
        shown = set(cards_in(c["request"]))
        assert shown and not (shown & hidden), (c["deal"], c["turn"], shown & hidden)
        assert set(c["request"]["hand"]) == set(mask_texts(deal.hands[seat]))


def test_nobody_but_the_owner_sees_the_calls(client: FlaskClient, played: Played) -> None:
    assert calls_json(client, played.bot_id, None).status_code == 401
    assert calls_json(client, played.bot_id, played.other_token).status_code == 403
    assert calls_json(client, played.bot_id, ADMIN).status_code == 403
    assert calls_json(client, played.bot_id, "x" * 43).status_code == 403
    # The page: not signed in, signed in with a wrong token, signed in for another bot.
    r = client.get(f"/bots/{played.bot_id}/calls")
    assert r.status_code == 403
    page = r.get_data(as_text=True)
    assert "Sign in with the bot&#39;s owner token to see its last calls." in page
    assert GARBAGE.decode() not in page and "alert(" not in page
    assert sign_in(client, played.bot_id, played.other_token).status_code == 403
    assert client.get(f"/bots/{played.bot_id}/calls").status_code == 403
    assert sign_in(client, played.other_id, played.other_token).status_code == 303
    assert client.get(f"/bots/{played.bot_id}/calls").status_code == 403
    assert client.get(f"/bots/{played.other_id}/calls").status_code == 200


def test_the_owner_signs_in_sees_escaped_calls_and_signs_out(
        app: Flask, client: FlaskClient, played: Played) -> None:
    page = client.get(f"/bots/{played.bot_id}").get_data(as_text=True)
    assert "Sign in as the owner" in page and "Your bot's last calls" not in page
    r = sign_in(client, played.bot_id, played.token)
    assert r.status_code == 303 and r.headers["Location"].endswith(
        f"/bots/{played.bot_id}/calls")
    assert played.token not in client.get_cookie("session").value  # type: ignore[union-attr]
    r = client.get(f"/bots/{played.bot_id}/calls")
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    page = r.get_data(as_text=True)
    assert "&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;" in page
    assert "<script>alert" not in page
    assert "not JSON (strict JSON in UTF-8 is expected)" in page and "no-such-move" in page
    assert page.count("strict JSON in UTF-8") == page.count('data-fault="not_json"')  # once
    assert '&#34;legal_moves&#34;' in page or '"legal_moves"' in page
    bot_page = client.get(f"/bots/{played.bot_id}").get_data(as_text=True)
    assert "Your bot's last calls" in bot_page
    # Another browser is not signed in.
    assert app.test_client().get(f"/bots/{played.bot_id}/calls").status_code == 403
    r = client.post(f"/bots/{played.bot_id}/owner/sign-out",
                    data={"csrf_token": csrf(client, played.bot_id)})
    assert r.status_code == 303
    assert client.get(f"/bots/{played.bot_id}/calls").status_code == 403
    # Without the CSRF token, signing in is refused.
    r = client.post(f"/bots/{played.bot_id}/owner", data={"owner_token": played.token})
    assert r.status_code == 403


def test_only_the_newest_are_kept_and_a_second_delivery_adds_none(
        app: Flask, played: Played) -> None:
    redis = get_queue(app).redis
    n = redis.llen(key(app, played.bot_id))
    assert 0 < n <= int(app.config["BOT_CALLS_KEPT"])
    assert redis.ttl(key(app, played.bot_id)) > 0
    with app.app_context():
        assert jobs.play_match(played.match_id) == "already finished"
    assert redis.llen(key(app, played.bot_id)) == n


def test_the_ring_is_capped(app: Flask, client: FlaskClient, sample_bots: dict[str, str],
                            flaky: Flaky) -> None:
    app.config["BOT_CALLS_KEPT"] = 5
    bot_id, token = register(client, "flaky", flaky.url)
    others = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    for seed in (1, 2):
        with get_db(app).begin() as s:
            bots = [s.get(Bot, b) for b in [bot_id, *others]]
            match_id = create_match(s, bots=[b for b in bots if b is not None],
                                    ruleset="standard", deals=1,
                                    limits=default_limits(app.config), kind="admin",
                                    seed=seed).id
        with app.app_context():
            assert jobs.play_match(match_id) == "finished"
    items = calls_json(client, bot_id, token).get_json()["items"]
    assert len(items) == 5 and {c["match_id"] for c in items} == {match_id}
    assert get_queue(app).redis.llen(key(app, bot_id)) == 5


def test_redis_down_is_said_not_a_500(app: Flask, client: FlaskClient,
                                      played: Played) -> None:
    from redis import Redis

    from ..ports import closed_port

    get_queue(app)._redis = Redis(host="127.0.0.1", port=closed_port(), socket_timeout=5,
                                  socket_connect_timeout=5)
    r = calls_json(client, played.bot_id, played.token)
    assert r.status_code == 503 and r.get_json()["error"]["code"] == "unavailable"
    assert sign_in(client, played.bot_id, played.token).status_code == 303
    r = client.get(f"/bots/{played.bot_id}/calls")
    assert r.status_code == 200 and "cannot be read right now" in r.get_data(as_text=True)


def test_with_the_response_cache_on_an_owners_pages_are_theirs_alone(
        app: Flask, played: Played) -> None:
    """The response cache (READ_CACHE_S, off in the other tests) shares public answers: a
    signed-in owner's bot page and calls page must neither be shared with a stranger nor
    be answered from a stranger's render."""
    from arena import create_app

    cached = create_app({**app.config, "READ_CACHE_S": 30.0})
    owner, stranger = cached.test_client(), cached.test_client()
    page = f"/bots/{played.bot_id}"
    assert "Your bot's last calls" not in stranger.get(page).get_data(as_text=True)
    # The public page is shared: answered from the cache (its Age counts real seconds, so a
    # render slower than a second under load makes it 1, not 0).
    assert "Age" in stranger.get(page).headers
    assert sign_in(owner, played.bot_id, played.token).status_code == 303
    mine = owner.get(page)
    assert "Age" not in mine.headers and "Your bot's last calls" in mine.get_data(as_text=True)
    calls = owner.get(f"{page}/calls")
    assert calls.status_code == 200 and "Age" not in calls.headers
    assert "Your bot's last calls" not in stranger.get(page).get_data(as_text=True)
    assert stranger.get(f"{page}/calls").status_code == 403


def test_the_calls_cost_a_fixed_number_of_statements(
        app: Flask, client: FlaskClient, played: Played) -> None:
    """The owner-only routes (left out of test_read_path's seeded owners): the bot, then in
    one query which listed matches still keep their deals secret and every other listed
    call's log, however many calls are listed."""
    from sqlalchemy import event

    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    assert sign_in(client, played.bot_id, played.token).status_code == 303
    engine = get_db(app).engine
    event.listen(engine, "before_cursor_execute", before)
    try:
        page = client.get(f"/bots/{played.bot_id}/calls")
        page_statements, seen[:] = len(seen), []
        answer = calls_json(client, played.bot_id, played.token)
        json_statements = len(seen)
    finally:
        event.remove(engine, "before_cursor_execute", before)
    assert page.status_code == 200 and answer.status_code == 200
    assert len(answer.get_json()["items"]) > 10  # many calls listed, from one match log
    assert page_statements <= 3 and json_statements <= 3, (page_statements, json_statements)


def test_the_owner_sees_the_first_bytes_of_a_500_scrubbed_and_escaped(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    """A bot answering 500 with its traceback: its owner's calls show the body's first
    ``BOT_CALLS_ANSWER_MAX`` bytes (cut, and said so), without the bot's URL or address,
    escaped on the page; nobody else sees them, and no public page does."""
    with broken_bot() as bot:
        bot_id, token = register(client, "broken", bot.url)
        others = [register(client, n, sample_bots[n]) for n in ("random", "greedy", "planner")]

        def play(seed: int) -> int:
            with get_db(app).begin() as s:
                bots = [s.get(Bot, b) for b in [bot_id, *(o[0] for o in others)]]
                match = create_match(s, bots=[b for b in bots if b is not None],
                                     ruleset="standard", deals=2,
                                     limits=default_limits(app.config), kind="admin",
                                     seed=seed)
                match_id = match.id
            with app.app_context():
                assert jobs.play_match(match_id) == "finished"
            return match_id

        app.config["BOT_CALLS_ANSWER_MAX"] = 120
        first = play(9)
        app.config["BOT_CALLS_ANSWER_MAX"] = 2000  # the operator's choice: the whole body
        second = play(10)
        full = bot.traceback().decode()
    items = calls_json(client, bot_id, token).get_json()["items"]
    cut = next(c for c in items if c["fault"] == "http_status" and c["match_id"] == first)
    # An HTTP 500 with a body is an answer: its name says so (it once read "no answer").
    assert cut["verdict"] == "HTTP error status" and cut["detail"].startswith("answered HTTP 500")
    assert cut["answer"].startswith("Traceback (most recent call last):")
    assert len(cut["answer"].encode()) <= 120 and cut["answer_truncated"]
    c = next(x for x in items if x["fault"] == "http_status" and x["match_id"] == second)
    assert "ZeroDivisionError: division by zero <script>alert(1)</script>" in c["answer"]
    assert not c["answer_truncated"]
    # Scrubbed like every fault text: the URL the traceback names is gone.
    assert SECRET_PATH in full and SECRET_PATH not in c["answer"]
    assert "127.0.0.1" not in c["answer"] and "[redacted]" in c["answer"]
    # Garbage keeps its body; a reset has none.
    assert any(x["fault"] == "not_json" and x["answer"] == "<html>oops</html>" for x in items)
    assert all(x["answer"] == "" for x in items if x["fault"] == "connection")
    assert sign_in(client, bot_id, token).status_code == 303
    page = client.get(f"/bots/{bot_id}/calls").get_data(as_text=True)
    assert "ZeroDivisionError: division by zero &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page and SECRET_PATH not in page
    # Owner only: another bot's token, the operator's, none; and no public page shows it.
    assert calls_json(client, bot_id, others[0][1]).status_code == 403
    assert calls_json(client, bot_id, ADMIN).status_code == 403
    assert calls_json(client, bot_id, None).status_code == 401
    stranger = app.test_client()
    assert stranger.get(f"/bots/{bot_id}/calls").status_code == 403
    for path in (f"/matches/{second}", f"/api/matches/{second}", f"/bots/{bot_id}",
                 f"/matches/{second}/replay.json", f"/api/matches/{second}/log"):
        assert "ZeroDivisionError" not in stranger.get(path).get_data(as_text=True), path
