"""Bot URLs, owner tokens and signing secrets never reach a public surface.

Bots are registered under URLs with a secret path segment and a key in the query
(``/s3cr3t-path?key=hunter2``).  Two of them play well (SDK bots served under that path), one
fails every call with a TLS error (an https URL whose certificate nobody trusts) and one with a
connection error (a closed port), so strikes, notes and health records carry the texts that
the HTTP libraries build, which do name host, path and query.  They play a ladder-style match
and a tournament through the real job bodies, get health-checked by the real job, and then
every public GET route of the app (walked from ``app.url_map``, every parameter filled in with
real ids, every query variant that changes the body) is fetched anonymously; no body, header
or archive member may contain any part of a URL, any owner token or any signing secret.
"""

from __future__ import annotations

import gzip
import importlib
import io
import json
import re
import ssl
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from arena.bots import service as bot_service
from arena.core.models import Bot, HealthCheck, Match, MatchResult
from arena.core.privacy import redactor, scrub_log, scrub_totals
from arena.core.security import hash_token, new_token
from arena.core.signing import bot_secret
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from referee.runner import log as referee_log
from referee.runner.faults import plain_fault
from referee.runner.health import HealthResult
from sample_bots import greedy_bot, random_bot
from sample_bots.sdk import BotServer, serve_in_thread

from ..ports import closed_port_url
from ..referee import badbots as bb
from .conftest import admin_headers, both_backends, wait_check

SECRET_PATH = "/s3cr3t-path"
QUERY = "key=hunter2"
URL_SECRETS = ("s3cr3t-path", "hunter2", "s3cr3t%2Dpath")


@dataclass
class World:
    bot_ids: list[int]
    tokens: list[str]
    signing_secrets: list[str]
    ports: list[int]
    match_ids: list[int] = field(default_factory=list)
    tournament_id: int = 0

    def forbidden(self) -> list[str]:
        return [*URL_SECRETS, *self.tokens, *self.signing_secrets,
                *(f"127.0.0.1:{p}" for p in self.ports), *(f":{p}/" for p in self.ports)]


@pytest.fixture(scope="module")
def untrusted_tls() -> ssl.SSLContext:
    trustme = pytest.importorskip("trustme")
    cert = trustme.CA().issue_cert("127.0.0.1")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)
    return ctx


@pytest.fixture
def sdk_bots() -> Iterator[list[BotServer]]:
    servers = [serve_in_thread(m.choose, name=n, path_prefix=SECRET_PATH)
               for n, m in (("greedy", greedy_bot), ("random", random_bot),
                            ("greedy-2", greedy_bot), ("random-2", random_bot))]
    yield servers
    for s in servers:
        s.shutdown()
        s.server_close()


def port_of(url: str) -> int:
    m = re.search(r":(\d+)(/|$)", url.split("//", 1)[1])
    assert m is not None
    return int(m.group(1))


def insert_bot(app: Flask, name: str, url: str) -> tuple[int, str]:
    """A bot row for a URL that can never pass a check (its failures are the point),
    admitted as if its first check had passed."""
    token = new_token()
    info = {"protocol": 1, "name": name, "author": "", "version": "1"}
    with app.app_context(), get_db(app).begin() as s:
        bot, check = bot_service.submit(s, name=name, url=url, token_hash=hash_token(token))
        bot_service.apply_check(app, s, bot, check,
                                HealthResult(True, "", info, 1.0, 1.0))
        return bot.id, token


def play_all_queued(app: Flask) -> list[int]:
    played = []
    for _ in range(20):
        with get_db(app).begin() as s:
            queued = list(s.scalars(select(Match.id).where(Match.state == "queued")))
        if not queued:
            break
        with app.app_context():
            for mid in queued:
                jobs.play_match(mid)
                played.append(mid)
    return played


@pytest.fixture
def world(app: Flask, client: FlaskClient, sdk_bots: list[BotServer],
          untrusted_tls: ssl.SSLContext) -> Iterator[World]:
    with bb.serving(bb.good_json(), tls=untrusted_tls) as tls_bot:
        ids, tokens, secrets, ports = [], [], [], []
        for server in sdk_bots[:2]:
            r = client.post("/api/bots", json={"name": server.info["name"],
                                               "url": f"{server.url}?{QUERY}"})
            assert r.status_code == 202, r.get_json()
            body = r.get_json()
            assert SECRET_PATH in body["bot"]["url"]  # the owner sees the URL
            assert wait_check(client, body["bot"]["id"])["state"] == "passed"
            ids.append(body["bot"]["id"])
            tokens.append(body["token"])
            secrets.append(body["signing_secret"])
            ports.append(port_of(server.url))
        tls_url = f"https://127.0.0.1:{tls_bot.port}{SECRET_PATH}?{QUERY}"
        dead_url = f"{closed_port_url()}{SECRET_PATH}?{QUERY}"
        for name, url in (("tls-broken", tls_url), ("gone", dead_url)):
            bot_id, token = insert_bot(app, name, url)
            ids.append(bot_id)
            tokens.append(token)
            ports.append(port_of(url))
            with app.app_context():
                assert jobs.check_bot(bot_id).startswith("failed")
        world = World(ids, tokens, secrets, ports)
        with app.app_context(), get_db(app).begin() as s:
            for b in s.scalars(select(Bot).where(Bot.id.in_(ids[2:]))):
                world.signing_secrets.append(bot_secret(app, b))
        r = client.post("/api/matches", json={"bots": ids, "deals": 1, "seed": 5},
                        headers=admin_headers())
        assert r.status_code == 202, r.get_json()
        r = client.post("/api/tournaments", headers=admin_headers(),
                        json={"format": "round_robin", "bots": ids, "deals": 1,
                              "start": True, "name": "secrecy cup"})
        assert r.status_code == 201, r.get_json()
        world.tournament_id = r.get_json()["id"]
        world.match_ids = play_all_queued(app)
        yield world


def bodies_of(resp: Any) -> list[tuple[str, str]]:
    """The response as texts: the body (every member of a zip), and the headers."""
    data = resp.get_data()
    out = [("headers", "\n".join(f"{k}: {v}" for k, v in resp.headers.items()))]
    if resp.mimetype == "application/zip":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            out += [(n, z.read(n).decode()) for n in z.namelist()]
    else:
        out.append(("body", data.decode("utf-8", "replace")))
    return out


def public_gets(app: Flask, world: World) -> list[str]:
    """Every GET route, each parameter filled with every real id (and a missing one)."""
    values = {"bot_id": [*world.bot_ids, 999_999], "match_id": [*world.match_ids, 999_999],
              "tournament_id": [world.tournament_id, 999_999], "webhook_id": [1, 999_999],
              "challenge_id": [1, 999_999]}
    queries = {"matches.match_log": ["", "?format=json", "?format=jsonl"],
               "bots.list_bots": ["", "?status=active", "?status=unhealthy", "?limit=100"],
               "matches.list_matches": ["", "?state=finished", "?limit=100"],
               "ratings.leaderboard_json": ["", "?family=classic"]}
    urls: list[str] = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or "GET" not in (rule.methods or ()):
            continue
        paths = [rule.rule]
        for arg in rule.arguments:
            paths = [re.sub(rf"<(?:[^:<>]+:)?{arg}>", str(v), p)
                     for p in paths for v in values[arg]]
        for p in paths:
            urls += [p + q for q in queries.get(rule.endpoint, [""])]
    return urls


@pytest.mark.drill
@both_backends
def test_no_public_surface_shows_a_url_token_or_secret(
        app: Flask, client: FlaskClient, world: World) -> None:
    # The failures happened and were recorded (otherwise the walk would prove nothing).
    with get_db(app).begin() as s:
        results = list(s.scalars(select(MatchResult)))
        reasons = [h.reason for h in s.scalars(select(HealthCheck)) if h.reason]
    assert len(results) >= 2
    strikes = [x for r in results for x in r.totals["strikes"]]
    assert {"tls", "connection"} <= {x["reason"] for x in strikes}
    # Stored in words (referee.runner.faults), not as the TLS library's text.
    assert any(x["detail"] == plain_fault("tls") for x in strikes)
    assert len(reasons) >= 2
    forbidden = world.forbidden()
    urls = public_gets(app, world)
    assert len(urls) > 40
    fetched = 0
    for url in urls:
        resp = client.get(url)
        assert resp.status_code < 500, (url, resp.status_code)
        fetched += resp.status_code == 200
        for part, text in bodies_of(resp):
            found = [f for f in forbidden if f.lower() in text.lower()]
            assert not found, f"{url} ({part}) shows {found}"
    assert fetched > 30
    # The owner does see their own bot's URL, and only theirs.
    auth = {"Authorization": f"Bearer {world.tokens[0]}"}
    mine = client.get(f"/api/bots/{world.bot_ids[0]}", headers=auth).get_json()
    assert SECRET_PATH in mine["url"] and QUERY in mine["url"]
    theirs = client.get(f"/api/bots/{world.bot_ids[1]}", headers=auth).get_json()
    assert "url" not in theirs
    versions = client.get(f"/api/bots/{world.bot_ids[0]}/versions", headers=auth).get_json()
    assert SECRET_PATH in versions["items"][0]["url"]
    assert world.signing_secrets[0] not in json.dumps(mine)  # shown once, never again


def test_error_messages_for_other_people_show_no_url(
        app: Flask, client: FlaskClient, world: World) -> None:
    # Someone else trying the same name, a stranger's PATCH, a missing log.
    r = client.post("/api/bots", json={"name": "greedy", "url": "http://127.0.0.1:1/x"})
    assert r.status_code == 409
    r = client.patch(f"/api/bots/{world.bot_ids[0]}", json={"paused": True},
                     headers={"Authorization": f"Bearer {world.tokens[1]}"})
    assert r.status_code == 403
    r2 = client.get("/api/matches/999999/log")
    for resp in (r, r2):
        text = resp.get_data(as_text=True)
        assert not [f for f in world.forbidden() if f in text]


@pytest.mark.drill
def test_public_logs_verify_with_the_cli(client: FlaskClient, world: World,
                                         tmp_path: Path) -> None:
    files = []
    for mid in world.match_ids[:2]:
        for fmt in ("json", "jsonl"):
            path = tmp_path / f"m{mid}.{fmt}"
            path.write_bytes(client.get(f"/api/matches/{mid}/log?format={fmt}").get_data())
            files.append(path)
    archive = client.get(f"/api/tournaments/{world.tournament_id}/archive").get_data()
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        for name in z.namelist():
            if "/logs/" in name:
                path = tmp_path / Path(name).name
                path.write_bytes(z.read(name))
                files.append(path)
    assert len(files) >= 5
    for path in files:
        doc = referee_log.read(path)
        assert doc["version"] == 2
        assert all(s["player"].startswith("bot:") and "url" not in s for s in doc["seats"])
        out = subprocess.run([sys.executable, "-m", "referee", "verify", str(path)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "valid" in out.stdout


# --------------------------------------------------------------------------- stored before


def test_migration_scrub_removes_urls_from_v1_records() -> None:
    url = "https://bots.example:8443/s3cr3t-path?key=hunter2"
    detail = ("TLS failure: HTTPSConnectionPool(host='bots.example', port=8443): Max retries "
              "exceeded with url: /s3cr3t-path/move?key=hunter2")
    doc = {"format": "bigtwo-match-log", "version": 1,
           "seats": [{"seat": 0, "name": "b", "author": "", "version": "", "url": url}],
           "deals": [{"turns": [{"fault": "tls", "detail": detail}]}],
           "result": {"strikes": [{"reason": "tls", "detail": detail}],
                      "notes": [{"call": "describe", "detail": detail}]}}
    totals = {"seats": doc["seats"], "strikes": doc["result"]["strikes"],
              "notes": doc["result"]["notes"]}
    scrub = redactor([url])
    clean_doc, clean_totals = scrub_log(doc, scrub), scrub_totals(totals, scrub)
    for cleaned in (clean_doc, clean_totals):
        text = json.dumps(cleaned)
        assert "hunter2" not in text and "s3cr3t" not in text and "bots.example" not in text
    assert clean_doc["seats"][0]["url"] is None and clean_doc["version"] == 1
    assert clean_doc["result"]["strikes"][0]["detail"].startswith("TLS failure")
    assert "s3cr3t" in json.dumps(doc)  # the input is not changed in place


@both_backends
def test_migration_0005_scrubs_what_was_stored(app: Flask, client: FlaskClient,
                                               sdk_bots: list[BotServer]) -> None:
    """Data written the old way (a v1 log with seat URLs, URL-bearing texts) is clean after
    a real downgrade to the revision before 0005 and an upgrade through it."""
    from alembic import command

    from arena.core.storage import alembic_config, upgrade

    mig = importlib.import_module("arena.migrations.versions.0005_private_urls_signing")
    server = sdk_bots[0]
    url = f"{server.url}?{QUERY}"
    r = client.post("/api/bots", json={"name": "old-timer", "url": url})
    bot_id = r.get_json()["bot"]["id"]
    others = [client.post("/api/bots", json={"name": f"o{i}", "url": sdk_bots[i + 1].url})
              .get_json()["bot"]["id"] for i in range(3)]
    r = client.post("/api/matches", json={"bots": [bot_id, *others], "deals": 1},
                    headers=admin_headers())
    (mid,) = play_all_queued(app)
    leak = f"TLS failure: host='127.0.0.1' url: {SECRET_PATH}/move?{QUERY}"
    with get_db(app).begin() as s:
        result = s.scalar(select(MatchResult).where(MatchResult.match_id == mid))
        assert result is not None
        doc = json.loads(gzip.decompress(result.log_gz))
        doc["version"] = 1
        doc["seats"] = [{k: v for k, v in x.items() if k != "player"} | {"url": url}
                        for x in doc["seats"]]
        doc["result"]["strikes"] = [{"seat": 0, "deal": 0, "turn": 0, "reason": "tls",
                                     "detail": leak}]
        result.log_gz = gzip.compress(json.dumps(doc).encode())
        result.totals = {**result.totals, "seats": doc["seats"],
                         "strikes": doc["result"]["strikes"]}
        s.add(HealthCheck(bot_id=bot_id, url=url, ok=False, reason=f"GET /: tls: {leak}"))
        bot = s.get(Bot, bot_id)
        assert bot is not None
        bot.last_health_reason = f"GET /: tls: {leak}"
    db = get_db(app)
    db.engine.dispose()
    command.downgrade(alembic_config(db), mig.down_revision)
    upgrade(db)
    db.engine.dispose()
    for path in (f"/api/matches/{mid}", f"/api/matches/{mid}/log", f"/api/bots/{bot_id}",
                 f"/api/bots/{bot_id}/health", f"/bots/{bot_id}", f"/matches/{mid}"):
        text = client.get(path).get_data(as_text=True)
        assert "hunter2" not in text and "s3cr3t" not in text, path
    with get_db(app).begin() as s:
        result = s.scalar(select(MatchResult).where(MatchResult.match_id == mid))
        assert result is not None
        stored = json.loads(gzip.decompress(result.log_gz))["result"]["strikes"][0]["detail"]
    assert stored.startswith("TLS failure")  # scrubbed, the rest of the text kept
    log = client.get(f"/api/matches/{mid}/log").get_json()
    assert log["version"] == 1 and log["seats"][0]["url"] is None
    # What was stored as the library's text is shown in words (referee.runner.faults).
    assert log["result"]["strikes"][0]["detail"] == plain_fault("tls")
    # A v1 log scrubbed this way still names its problem exactly when verified (the strike
    # we invented has no turn behind it), i.e. verify reads it as v1.
    assert "strikes differ" in referee_log.verify(log).problem

