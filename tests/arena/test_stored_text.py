"""No stored text can break a reader (issue 17 §2).

A JSON string may hold NUL (``"\\u0000"``) or a lone UTF-16 surrogate (``"\\ud800"``); a bot
that said either once made ``GET /api/matches/<id>/log?format=jsonl`` answer 500 on every
request.  A real loopback bot says both (as the JSON escapes, in a well-formed answer), a
valid surrogate pair, and once answers bytes that are not UTF-8; a real match is played by
the job body on both databases.  Then every download and page of the match, and its owner's
calls, answer 200 with valid UTF-8 whose strings all keep the rule, and the log says why each
say was dropped.  Data stored the old way (a log and a call record holding the bad strings,
written directly) is served the same way: repaired on read.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from arena.bots.calls import key
from arena.core.models import Bot, MatchResult
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from arena.play.matches import create_match, default_limits
from referee.wire.protocol import SAY_DROPPED
from referee.wire.text import text_problem

from .conftest import ADMIN, both_backends, register, submit, wait_check

NOT_UTF8 = b'\xff\xfe{"move": "\x00"}'


class Sayer:
    """Plays the first legal move and says, turn by turn: a lone surrogate, NUL, a valid
    surrogate pair (an emoji); its first answer after the opening is bytes that are not UTF-8
    (with a NUL among them)."""

    server: ThreadingHTTPServer | None = None
    garbled = False

    def answer(self, body: bytes) -> bytes:
        request = json.loads(body)
        turn = request["turn"]
        if turn >= 8 and not self.garbled:
            self.garbled = True
            return NOT_UTF8
        say = ("\\ud800", "nul \\u0000 here", "ok \\ud83d\\ude00")[turn % 3]
        move = json.dumps(request["legal_moves"][0]["id"])
        return f'{{"move": {move}, "say": "{say}"}}'.encode()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_port}"


def serve(bot: Any, description: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(description)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            self._send(bot.answer(body) if self.path.endswith("/move") else b"{}")

        def log_message(self, *a: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def sayer() -> Iterator[Sayer]:
    bot = Sayer()
    bot.server = serve(bot, b'{"protocol": 1, "name": "sayer", "author": "tests", '
                            b'"version": "1"}')
    yield bot
    bot.server.shutdown()
    bot.server.server_close()


@dataclass
class Played:
    match_id: int
    bot_id: int
    token: str


def play(app: Flask, client: FlaskClient, sample_bots: dict[str, str], sayer: Sayer) -> Played:
    bot_id, token = register(client, "sayer", sayer.url)
    others = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    with get_db(app).begin() as s:
        bots = [s.get(Bot, b) for b in [bot_id, *others]]
        match = create_match(s, bots=[b for b in bots if b is not None], ruleset="standard",
                             deals=2, limits=default_limits(app.config), kind="admin", seed=5)
        match_id = match.id
    with app.app_context():
        assert jobs.play_match(match_id) == "finished"
    return Played(match_id, bot_id, token)


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)


def clean(client: FlaskClient, url: str, **kw: Any) -> str:
    """GET ``url``: a 200 whose body is UTF-8 and, when it is JSON (or JSON Lines), whose every
    string keeps the text rule once parsed."""
    r = client.get(url, **kw)
    assert r.status_code == 200, (url, r.status_code, r.get_data()[:300])
    text = r.get_data().decode("utf-8")  # strict: a lone surrogate cannot be in UTF-8
    kind = r.mimetype
    if kind == "application/json":
        docs = [json.loads(text)]
    elif kind == "application/x-ndjson":
        docs = [json.loads(line) for line in text.splitlines() if line]
    else:
        docs = []
    for doc in docs:
        for s in strings(doc):
            assert text_problem(s) is None, (url, s)
    return text


def every_reader(client: FlaskClient, p: Played) -> dict[str, str]:
    owner = {"Authorization": f"Bearer {p.token}"}
    urls = [f"/api/matches/{p.match_id}/log", f"/api/matches/{p.match_id}/log?format=jsonl",
            f"/api/matches/{p.match_id}", f"/matches/{p.match_id}",
            f"/matches/{p.match_id}/replay.json", f"/api/bots/{p.bot_id}", f"/bots/{p.bot_id}",
            f"/api/matches?bot={p.bot_id}", "/matches", "/"]
    out = {url: clean(client, url) for url in urls}
    out["calls"] = clean(client, f"/api/bots/{p.bot_id}/calls", headers=owner)
    return out


@both_backends
def test_a_bots_bad_strings_are_checked_at_the_wire_and_every_reader_answers(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str], sayer: Sayer) -> None:
    p = play(app, client, sample_bots, sayer)
    read = every_reader(client, p)
    log = json.loads(read[f"/api/matches/{p.match_id}/log"])
    seat = next(x["seat"] for x in log["seats"] if x.get("player") == f"bot:{p.bot_id}")
    turns = [t for d in log["deals"] for t in d["turns"] if t["seat"] == seat]
    dropped = [t for t in turns if t["fault"] is None and t["detail"].startswith(SAY_DROPPED)]
    assert {t["detail"] for t in dropped} == {
        SAY_DROPPED + "holds a lone UTF-16 surrogate", SAY_DROPPED + "holds a NUL character"}
    assert all(t["say"] is None for t in dropped)  # dropped, and the move stood
    assert "ok \U0001F600" in {t["say"] for t in turns}  # a valid pair is kept
    assert any(t["fault"] == "not_json" for t in turns)
    calls = json.loads(read["calls"])["items"]
    garbled = [c for c in calls if c["fault"] == "not_json"]
    assert garbled and garbled[0]["answer"] == '\\xff\\xfe{"move": "\\x00"}'
    assert any(c["detail"].startswith(SAY_DROPPED) for c in calls if c["fault"] is None)


@pytest.mark.drill
@both_backends
def test_data_stored_before_the_rule_is_repaired_on_read(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str], sayer: Sayer) -> None:
    p = play(app, client, sample_bots, sayer)
    with get_db(app).begin() as s:
        stored = s.scalar(select(MatchResult.log_gz).where(MatchResult.match_id == p.match_id))
        doc = json.loads(gzip.decompress(stored))
        turn = doc["deals"][0]["turns"][0]
        turn["say"], turn["detail"] = "\ud800 old", "nul \x00 old"
        doc["seats"][0]["author"] = "\udfff"
        # As the spool wrote it: json.dumps escapes both, so the bytes are plain ASCII.
        s.execute(update(MatchResult).where(MatchResult.match_id == p.match_id)
                  .values(log_gz=gzip.compress(json.dumps(doc).encode(), mtime=0)))
        # What an older arena kept of the bot's GET / description.
        s.execute(update(Bot).where(Bot.id == p.bot_id)
                  .values(info={"name": "\ud800", "author": "a\x00", "version": "1"}))
    r = get_queue(app).redis
    old_call = json.loads(r.lindex(key(app, p.bot_id), 0))
    old_call.update(say="\ud800", answer="\x00\udcff", detail="\ud800")
    r.lset(key(app, p.bot_id), 0, json.dumps(old_call))
    read = every_reader(client, p)
    jsonl = read[f"/api/matches/{p.match_id}/log?format=jsonl"]
    assert "\\\\ud800 old" in jsonl and "nul \\\\x00 old" in jsonl  # shown, escaped
    calls = json.loads(read["calls"])["items"]
    assert calls[0]["say"] == "\\ud800" and calls[0]["answer"] == "\\x00\\udcff"
    assert json.loads(read[f"/api/bots/{p.bot_id}"])["info"] == {
        "name": "\\ud800", "author": "a\\x00", "version": "1"}
    clean(client, "/bots")


@both_backends
def test_a_description_with_a_bad_name_fails_the_check_saying_why(
        client: FlaskClient) -> None:
    bot = Sayer()
    bot.server = serve(bot, b'{"protocol": 1, "name": "bad\\u0000name", "author": "\\ud800", '
                            b'"version": "1"}')
    try:
        bot_id, _ = submit(client, "badname", bot.url)
        check = wait_check(client, bot_id)
    finally:
        bot.server.shutdown()
        bot.server.server_close()
    assert check["state"] == "failed"
    assert "NUL" in json.dumps(check), check
    clean(client, f"/api/bots/{bot_id}/check")
    clean(client, f"/bots/{bot_id}", headers={"Authorization": f"Bearer {ADMIN}"})
