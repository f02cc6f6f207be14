"""Owner accounts (issue 21 §1): signing up, in and out; "my bots"; adopting a bot; API tokens
and their scopes; the per-client sign-in delay; the operator's reset; and every authorization
rule: an account never sees or changes another account's bots, on any owner-only endpoint
(found in the app's URL map, so a new one is covered without editing this file)."""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event, select

from arena.accounts import service as accounts
from arena.core.models import Account, AccountToken, Bot, MatchSeat, SignInDelay, utcnow
from arena.core.storage import get_db
from arena.web.openapi import OP_MARK, _mark

from .conftest import admin_headers, both_backends

PASSWORD = "correct horse battery"


@pytest.fixture(autouse=True)
def cheap_hashes(settings: dict[str, Any]) -> None:
    """argon2id with small parameters: the tests hash many passwords on a shared machine
    (the parameters are stored in each hash, so nothing else differs)."""
    settings.update(ARGON2_TIME_COST=1, ARGON2_MEMORY_KIB=1024, ARGON2_PARALLELISM=1)


# --- helpers ---------------------------------------------------------------------------------


def csrf(client: FlaskClient, path: str = "/account/sign-in") -> str:
    page = client.get(path).get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page[:500]
    return found.group(1)


def sign_up(client: FlaskClient, username: str, password: str = PASSWORD) -> None:
    r = client.post("/account/sign-up", data={
        "username": username, "password": password, "password2": password,
        "csrf_token": csrf(client, "/account/sign-up")})
    assert r.status_code == 303, r.get_data(as_text=True)[:2000]


def sign_in(client: FlaskClient, username: str, password: str = PASSWORD,
            addr: str = "127.0.0.1") -> Any:
    token = csrf(client)
    return client.post("/account/sign-in", data={
        "username": username, "password": password, "csrf_token": token},
        environ_base={"REMOTE_ADDR": addr})


def make_token(client: FlaskClient, name: str, scopes: list[str]) -> str:
    r = client.post("/account/tokens", data={"name": name, "scope": scopes,
                                             "csrf_token": csrf(client, "/account")})
    assert r.status_code == 200, r.get_data(as_text=True)[:2000]
    assert r.headers["Cache-Control"] == "no-store"
    found = re.search(r'<code id="new-token">([^<]+)</code>', r.get_data(as_text=True))
    assert found
    return found.group(1)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


PORTS = iter(range(20000, 30000))


def new_bot(client: FlaskClient, name: str, token: str | None = None) -> tuple[int, str]:
    """``POST /api/bots`` (with an account token: under its account); the owner token."""
    r = client.post("/api/bots", json={"name": name,
                                       "url": f"http://127.0.0.1:{next(PORTS)}/"},
                    headers=bearer(token) if token else {})
    assert r.status_code == 202, r.get_json()
    return r.get_json()["bot"]["id"], r.get_json()["token"]


def account_of(app: Flask, bot_id: int) -> int | None:
    with get_db(app).begin() as s:
        bot = s.get(Bot, bot_id)
        assert bot is not None
        return bot.account_id


@pytest.fixture
def alice(app: Flask) -> Iterator[FlaskClient]:
    c = app.test_client()
    sign_up(c, "alice")
    yield c


@pytest.fixture
def mallory(app: Flask) -> Iterator[FlaskClient]:
    c = app.test_client()
    sign_up(c, "mallory")
    yield c


# --- signing up, in and out ------------------------------------------------------------------


@both_backends
def test_sign_up_in_and_out(app: Flask, client: FlaskClient) -> None:
    sign_up(client, "Alice")
    page = client.get("/account")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert "My bots (Alice)" in page.get_data(as_text=True)
    with get_db(app).begin() as s:
        account = s.scalar(select(Account))
        assert account is not None and account.username_key == "alice"
        assert account.password_hash.startswith("$argon2id$")
        assert PASSWORD not in account.password_hash
    r = client.post("/account/sign-out", data={"csrf_token": csrf(client, "/account")})
    assert r.status_code == 303
    assert client.get("/account").status_code == 303  # to the sign-in
    assert sign_in(client, "alice", "wrong password!").status_code == 403
    assert client.get("/account").status_code == 303
    assert sign_in(client, "ALICE").status_code == 303  # usernames: any case
    assert client.get("/account").status_code == 200
    # One account per name whatever the case; the form says what is wrong.
    other = app.test_client()
    r = other.post("/account/sign-up", data={
        "username": "aLiCe", "password": PASSWORD, "password2": PASSWORD,
        "csrf_token": csrf(other, "/account/sign-up")})
    assert r.status_code == 400 and "is taken" in r.get_data(as_text=True)


@pytest.mark.parametrize("username,password,password2,email,says", [
    ("ab", PASSWORD, PASSWORD, "", "Username: 3 to 32"),
    ("-alice", PASSWORD, PASSWORD, "", "Username: 3 to 32"),
    ("alice", "short", "short", "", "Password: at least 10"),
    ("alice", "x" * 257, "x" * 257, "", "Password: at most 256"),
    ("alicealice", "alicealice", "alicealice", "", "Password: not your username"),
    ("alice", PASSWORD, PASSWORD + "!", "", "the two passwords differ"),
    ("alice", PASSWORD, PASSWORD, "not an address", "E-mail:"),
])
def test_sign_up_refuses_bad_forms(app: Flask, client: FlaskClient, username: str,
                                   password: str, password2: str, email: str,
                                   says: str) -> None:
    r = client.post("/account/sign-up", data={
        "username": username, "password": password, "password2": password2, "email": email,
        "csrf_token": csrf(client, "/account/sign-up")})
    assert r.status_code == 400 and says in html.unescape(r.get_data(as_text=True))
    with get_db(app).begin() as s:
        assert s.scalar(select(Account)) is None


def test_every_account_form_checks_csrf(app: Flask, alice: FlaskClient) -> None:
    """Each POST page of the accounts blueprint (from the URL map: a new form is covered),
    sent by a signed-in browser without the CSRF token or with another one, changes nothing
    and says so."""
    with get_db(app).begin() as s:
        before = (s.scalar(select(Account.password_hash)),
                  len(s.scalars(select(AccountToken)).all()))
    forms = [r for r in app.url_map.iter_rules()
             if r.endpoint.startswith("accounts.") and "POST" in (r.methods or ())
             and not r.rule.startswith("/api/")]
    assert len(forms) >= 6
    for rule in forms:
        url = re.sub(r"<[^>]+>", "1", rule.rule)
        for sent in ({}, {"csrf_token": "forged"}):
            data = {"username": "alice", "password": PASSWORD, "password2": PASSWORD,
                    "name": "t", "scope": "bots:read", "bot": "1", "owner_token": "x",
                    "token": "x", **sent}
            r = alice.post(url, data=data)
            assert r.status_code in (400, 403), (rule.rule, r.status_code)
    with get_db(app).begin() as s:
        assert (s.scalar(select(Account.password_hash)),
                len(s.scalars(select(AccountToken)).all())) == before
        assert s.scalar(select(Account.id).where(Account.username_key == "alice"))
    assert alice.get("/account").status_code == 200  # sign-out without the token: still in


def test_pages_escape_what_people_type(app: Flask, alice: FlaskClient) -> None:
    evil = "<script>alert(1)</script>"
    make_token(alice, evil, ["bots:read"])
    page = alice.get("/account").get_data(as_text=True)
    assert evil not in page and html.escape(evil) in page
    other = app.test_client()
    r = other.post("/account/sign-up", data={
        "username": evil, "password": PASSWORD, "password2": PASSWORD,
        "email": f"a{evil}@x", "csrf_token": csrf(other, "/account/sign-up")})
    assert r.status_code == 400
    assert evil not in r.get_data(as_text=True)


def test_the_shared_cache_never_answers_a_signed_in_visitor(
        app: Flask, settings: dict[str, Any]) -> None:
    from arena import create_app

    cached = create_app({**settings, "READ_CACHE_S": 60.0})
    anonymous, alice = cached.test_client(), cached.test_client()
    assert "Sign in" in anonymous.get("/").get_data(as_text=True)
    sign_up(alice, "alice")
    assert "My bots (alice)" in alice.get("/").get_data(as_text=True)
    assert "My bots (alice)" not in anonymous.get("/").get_data(as_text=True)


# --- bots under an account -------------------------------------------------------------------


@both_backends
def test_the_web_form_registers_the_bot_under_the_account(
        app: Flask, alice: FlaskClient, mallory: FlaskClient) -> None:
    r = alice.post("/bots/new", data={"name": "alices-bot", "url": "http://127.0.0.1:9001/",
                                      "csrf_token": csrf(alice, "/bots/new")},
                   follow_redirects=True)  # redirect after POST, to the welcome page
    assert r.status_code == 200
    assert 'id="owner-token"' in r.get_data(as_text=True)  # the bot's own token, as before
    with get_db(app).begin() as s:
        bot = s.scalar(select(Bot).where(Bot.name == "alices-bot"))
        assert bot is not None and bot.account_id is not None
        bot_id = bot.id
    page = alice.get("/account").get_data(as_text=True)
    assert "alices-bot" in page and f'data-bot="{bot_id}"' in page
    assert "alices-bot" not in mallory.get("/account").get_data(as_text=True)
    # The owner's corner of the bot page opens for the account, not for another one.
    assert alice.get(f"/bots/{bot_id}/calls").status_code == 200
    assert mallory.get(f"/bots/{bot_id}/calls").status_code == 403
    # Without an account, the form registers an orphan, as before.
    anon = app.test_client()
    anon.post("/bots/new", data={"name": "orphan", "url": "http://127.0.0.1:9002/",
                                 "csrf_token": csrf(anon, "/bots/new")})
    with get_db(app).begin() as s:
        orphan = s.scalar(select(Bot).where(Bot.name == "orphan"))
        assert orphan is not None and orphan.account_id is None


def test_bot_owner_tokens_keep_working(app: Flask, alice: FlaskClient,
                                       client: FlaskClient) -> None:
    write = make_token(alice, "w", ["bots:write"])
    owned, owned_token = new_bot(client, "owned", write)
    orphan, orphan_token = new_bot(client, "orphan")
    assert account_of(app, owned) is not None and account_of(app, orphan) is None
    for bot_id, token in ((owned, owned_token), (orphan, orphan_token)):
        r = client.patch(f"/api/bots/{bot_id}", json={"paused": True}, headers=bearer(token))
        assert r.status_code == 200 and r.get_json()["status"] == "paused"
    # A bot owner token sent to POST /api/bots is ignored, as it always was.
    _, _ = new_bot(client, "third", orphan_token)


@both_backends
def test_adopting_needs_the_right_owner_token(app: Flask, alice: FlaskClient,
                                              mallory: FlaskClient, client: FlaskClient) -> None:
    bot_id, owner_token = new_bot(client, "stray")
    for who in (alice, mallory):
        r = who.post("/account/adopt", data={"bot": "stray", "owner_token": "wrong",
                                             "csrf_token": csrf(who, "/account")})
        assert r.status_code == 403 and account_of(app, bot_id) is None
    r = alice.post("/account/adopt", data={"bot": str(bot_id), "owner_token": owner_token,
                                           "csrf_token": csrf(alice, "/account")})
    assert r.status_code == 303
    assert "stray" in alice.get("/account").get_data(as_text=True)
    assert "stray" not in mallory.get("/account").get_data(as_text=True)
    # Over the API, with a bots:write token: the wrong token moves nothing.
    m_write = make_token(mallory, "w", ["bots:write"])
    r = client.post(f"/api/account/bots/{bot_id}/adopt", json={"owner_token": "wrong"},
                    headers=bearer(m_write))
    assert r.status_code == 403 and account_of(app, bot_id) != account_of_name(app, "mallory")
    m_read = make_token(mallory, "r", ["bots:read"])
    r = client.post(f"/api/account/bots/{bot_id}/adopt", json={"owner_token": owner_token},
                    headers=bearer(m_read))
    assert r.status_code == 403  # adopting is a write
    r = client.post(f"/api/account/bots/{bot_id}/adopt", json={"owner_token": owner_token},
                    headers=bearer(m_write))
    assert r.status_code == 200 and account_of(app, bot_id) == account_of_name(app, "mallory")


def account_of_name(app: Flask, username: str) -> int:
    with get_db(app).begin() as s:
        account = accounts.find(s, username)
        assert account is not None
        return account.id


@both_backends
def test_my_bots_costs_a_fixed_number_of_statements(app: Flask, alice: FlaskClient) -> None:
    """"My bots" with one bot and with twelve, each in up to twelve matches: the same
    statements (no query per bot or per match), at most RECENT matches per bot."""
    from sqlalchemy import update

    from arena.routes.accounts import RECENT

    from .test_read_path import counting, seed

    data = seed(app, 12)
    alice_id = account_of_name(app, "alice")
    counts = []
    for owned in ([data.busy], data.bots):
        with get_db(app).begin() as s:
            s.execute(update(Bot).where(Bot.id.in_(owned)).values(account_id=alice_id))
        alice.get("/account")  # warm
        with counting(app) as statements:
            page = alice.get("/account").get_data(as_text=True)
        counts.append(len(statements))
        assert page.count("<tr data-bot=") == len(owned)
    assert max(counts) - min(counts) <= 1, counts
    row = page.split(f'data-bot="{data.busy}"', 1)[1].split("</tr>", 1)[0]
    assert row.count('href="/matches/') == RECENT
    with get_db(app).begin() as s:  # its newest ones, newest first
        newest = list(s.scalars(select(MatchSeat.match_id).where(MatchSeat.bot_id == data.busy)
                                .order_by(MatchSeat.match_id.desc()).limit(RECENT)))
    assert [int(m) for m in re.findall(r'href="/matches/(\d+)"', row)] == newest


@both_backends
def test_my_bots_counts_the_strikes_of_the_newest_finished_matches(
        app: Flask, alice: FlaskClient) -> None:
    """The strikes column: the bot's own strikes (its seat's, not its opponents') in its
    RECENT newest matches, counted only where the match finished with a result."""
    from sqlalchemy import update

    from arena.core.models import Match, MatchResult
    from arena.routes.accounts import RECENT

    from .test_read_path import seed

    data = seed(app, 12)

    def strike(seat: int) -> dict[str, Any]:
        return {"seat": seat, "deal": 0, "turn": 1, "reason": "timeout", "detail": "late"}

    with get_db(app).begin() as s:
        s.execute(update(Bot).where(Bot.id == data.busy).values(
            account_id=account_of_name(app, "alice")))
        seats = s.execute(select(MatchSeat.match_id, MatchSeat.seat)
                          .where(MatchSeat.bot_id == data.busy)
                          .order_by(MatchSeat.match_id.desc())).all()
        results = {r.match_id: r for r in s.scalars(
            select(MatchResult).where(MatchResult.match_id.in_([m for m, _ in seats])))}
        # Two of its own and one of another seat's in every result of the bot; the page
        # counts the newest RECENT matches only (the seed's tournaments add newer ones that
        # are not played yet: they count nothing).
        for match_id, seat in seats:
            if match_id in results:
                results[match_id].totals = {**results[match_id].totals, "strikes": [
                    strike(seat), strike(seat), strike((seat + 1) % 4)]}
        finished = [m for m, _ in seats[:RECENT] if m in results]
        assert len(finished) >= 2, seats[:RECENT]
        played_again = finished[0]  # and the newest finished one is running again
        s.execute(update(Match).where(Match.id == played_again).values(state="running"))
    page = alice.get("/account").get_data(as_text=True)
    row = page.split(f'data-bot="{data.busy}"', 1)[1].split("</tr>", 1)[0]
    assert f'data-label="strikes">{2 * (len(finished) - 1)}</td>' in row
    assert f'#{played_again}</a> <span class="muted small">running</span>' in row
    assert row.count(">finished</span>") == len(finished) - 1


def _bot_seats_read(plan: dict[str, Any]) -> int:
    """Entries of the bots' seat index (``bot_id, match_id``) the plan read (each node's rows
    times its loops), from ``EXPLAIN (ANALYZE, FORMAT JSON)``."""
    own = plan["Actual Rows"] * plan["Actual Loops"] \
        if plan.get("Index Name") == "ix_match_seats_bot_id_match_id" else 0
    return int(own + sum(_bot_seats_read(p) for p in plan.get("Plans", [])))


@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)
def test_my_bots_reads_only_each_bots_newest_seats(app: Flask, alice: FlaskClient) -> None:
    """The newest matches of each bot are the first RECENT entries of its seats' index: a
    window numbering every seat of the bot read them all (62,500 for the busy bot of the
    1M bench: 0.3-1 s a page)."""
    from sqlalchemy import update

    from arena.routes.accounts import RECENT

    from .test_read_path import seed

    data = seed(app, 40)  # the busy bot sits in all 40 matches
    with get_db(app).begin() as s:
        s.execute(update(Bot).where(Bot.id.in_(data.bots[:3])).values(
            account_id=account_of_name(app, "alice")))
    db = get_db(app)
    sent: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if re.search(r"WHERE match_seats\.bot_id (=|IN)", statement):  # not the matches' seats
            sent.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", keep)
    try:
        assert alice.get("/account").status_code == 200
    finally:
        event.remove(db.engine, "before_cursor_execute", keep)
    assert len(sent) == 1, sent
    with db.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE match_seats")
        for planner in ("seqscan", "bitmapscan"):  # by index, as at volume
            conn.exec_driver_sql(f"SET enable_{planner} = off")
        plan = conn.exec_driver_sql("EXPLAIN (ANALYZE, FORMAT JSON) " + sent[0][0],
                                    sent[0][1]).scalar_one()[0]["Plan"]
        conn.rollback()
    assert 0 < _bot_seats_read(plan) <= 3 * RECENT, plan


# --- API tokens and every owner-only endpoint ------------------------------------------------


BODIES: dict[str, dict[str, Any]] = {
    "bots.update_bot": {"paused": True},
    "accounts.adopt_json": {"owner_token": "not the bot's token"},
}
"""A body for the owner-only endpoints that need one (any other gets ``{}``)."""
LAST = ("bots.delete_bot",)
"""Endpoints that end the bot: tried last."""


def owner_only(app: Flask) -> list[tuple[str, str, str]]:
    """(endpoint, method, rule) of every JSON endpoint documented ``auth="owner"`` that names
    a bot, the deleting ones last."""
    found = []
    for rule in app.url_map.iter_rules():
        op = _mark(app.view_functions[rule.endpoint], OP_MARK)
        if op is None or op.auth != "owner" or "bot_id" not in rule.arguments:
            continue
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            found.append((rule.endpoint, method, rule.rule))
    return sorted(found, key=lambda x: (x[0] in LAST, x[0]))


def call(client: FlaskClient, method: str, rule: str, bot_id: int, endpoint: str,
         token: str | None) -> Any:
    url = rule.replace("<id:bot_id>", str(bot_id))
    body = BODIES.get(endpoint, {}) if method != "GET" else None
    return client.open(url, method=method, json=body, headers=bearer(token) if token else {})


@both_backends
def test_an_account_never_reaches_another_accounts_bots(
        app: Flask, alice: FlaskClient, mallory: FlaskClient, client: FlaskClient) -> None:
    a_rw = make_token(alice, "rw", ["bots:read", "bots:write"])
    a_r = make_token(alice, "r", ["bots:read"])
    a_w = make_token(alice, "w", ["bots:write"])
    a_revoked = make_token(alice, "gone", ["bots:read", "bots:write"])
    m_rw = make_token(mallory, "rw", ["bots:read", "bots:write"])
    with get_db(app).begin() as s:
        gone_id = s.scalar(select(AccountToken.id).where(AccountToken.name == "gone"))
    r = alice.post(f"/account/tokens/{gone_id}/revoke",
                   data={"csrf_token": csrf(alice, "/account")})
    assert r.status_code == 303
    bot_id, _ = new_bot(client, "alices", a_rw)
    alice_id = account_of(app, bot_id)
    routes = owner_only(app)
    endpoints = {e for e, _, _ in routes}
    assert {"bots.update_bot", "bots.delete_bot", "bots.rotate_signing_secret",
            "bots.bot_recheck", "bots.bot_calls_json", "accounts.adopt_json"} <= endpoints
    for endpoint, method, rule in routes:
        where = f"{method} {rule}"
        scope = "bots:read" if method == "GET" else "bots:write"
        wrong_scope = a_w if scope == "bots:read" else a_r
        assert call(client, method, rule, bot_id, endpoint, None).status_code == 401, where
        assert call(client, method, rule, bot_id, endpoint, a_revoked).status_code == 401, where
        assert call(client, method, rule, bot_id, endpoint, "bta_made-up").status_code == 401, \
            where
        if endpoint != "accounts.adopt_json":  # adopting is for a bot one does not own yet
            assert call(client, method, rule, bot_id, endpoint, m_rw).status_code == 403, where
            assert call(client, method, rule, bot_id, endpoint, wrong_scope).status_code == 403, \
                where
            r = call(client, method, rule, bot_id, endpoint, a_rw)
            assert r.status_code < 400 or r.status_code == 503, (where, r.get_json())
        else:
            r = call(client, method, rule, bot_id, endpoint, m_rw)
            assert r.status_code == 403, where
        assert account_of(app, bot_id) == alice_id, where
    # The endpoints whose answer only the owner sees more of (auth "optional"):
    bot_id, _ = new_bot(client, "alices-2", a_rw)
    for url in (f"/api/bots/{bot_id}", f"/api/bots/{bot_id}/versions"):
        assert "http://127.0.0.1" in client.get(url, headers=bearer(a_r)).get_data(as_text=True)
        for token in (m_rw, a_w, a_revoked):
            text = client.get(url, headers=bearer(token)).get_data(as_text=True)
            assert "http://127.0.0.1" not in text, (url, token[:8])


def test_revoking_a_token_stops_it_at_once(alice: FlaskClient, client: FlaskClient,
                                          app: Flask) -> None:
    token = make_token(alice, "script", ["bots:read", "bots:write"])
    r = client.get("/api/account/bots", headers=bearer(token))
    assert r.status_code == 200 and r.get_json()["account"]["username"] == "alice"
    assert r.get_json()["scopes"] == ["bots:read", "bots:write"]
    bot_id, _ = new_bot(client, "scripted", token)
    assert [b["id"] for b in client.get("/api/account/bots",
                                        headers=bearer(token)).get_json()["items"]] == [bot_id]
    with get_db(app).begin() as s:
        token_id = s.scalar(select(AccountToken.id))
    r = alice.post(f"/account/tokens/{token_id}/revoke",
                   data={"csrf_token": csrf(alice, "/account")})
    assert r.status_code == 303
    assert client.get("/api/account/bots", headers=bearer(token)).status_code == 401
    assert client.patch(f"/api/bots/{bot_id}", json={"paused": True},
                        headers=bearer(token)).status_code == 401
    r = client.post("/api/bots", json={"name": "after", "url": "http://127.0.0.1:9/"},
                    headers=bearer(token))
    assert r.status_code == 401  # never an orphan registered by a dead token


def test_another_account_cannot_revoke_my_token(alice: FlaskClient, mallory: FlaskClient,
                                               client: FlaskClient, app: Flask) -> None:
    token = make_token(alice, "mine", ["bots:read"])
    with get_db(app).begin() as s:
        token_id = s.scalar(select(AccountToken.id))
    r = mallory.post(f"/account/tokens/{token_id}/revoke",
                     data={"csrf_token": csrf(mallory, "/account")})
    assert r.status_code == 404
    assert "mine" not in mallory.get("/account").get_data(as_text=True)
    assert client.get("/api/account/bots", headers=bearer(token)).status_code == 200


def test_token_forms_refuse_bad_names_and_scopes(alice: FlaskClient) -> None:
    for data in ({"name": "", "scope": ["bots:read"]}, {"name": "x" * 65, "scope": ["bots:read"]},
                 {"name": "t", "scope": []}, {"name": "t", "scope": ["admin"]}):
        r = alice.post("/account/tokens", data={**data, "csrf_token": csrf(alice, "/account")})
        assert r.status_code == 400, data
        assert 'id="new-token"' not in r.get_data(as_text=True)


def test_pages_that_need_an_account_send_others_to_sign_in(client: FlaskClient) -> None:
    for method, url in (("GET", "/account"), ("POST", "/account/adopt"),
                        ("POST", "/account/tokens"), ("POST", "/account/tokens/1/revoke")):
        r = client.open(url, method=method, data={"csrf_token": "x"})
        assert r.status_code == 303 and r.headers["Location"].endswith("/account/sign-in")
    assert client.get("/api/account/bots").status_code == 401
    assert client.get("/api/account/bots", headers=admin_headers()).status_code == 401


# --- the sign-in delay -----------------------------------------------------------------------


@both_backends
def test_wrong_passwords_slow_down_that_client_only(app: Flask, client: FlaskClient) -> None:
    app.config["SIGN_IN_FREE_FAILURES"] = 2
    sign_up(app.test_client(), "victim")
    attacker = app.test_client()
    for _ in range(2):
        assert sign_in(attacker, "victim", "guess guess guess", "203.0.113.9").status_code == 403
    r = sign_in(attacker, "victim", "guess guess guess", "203.0.113.9")
    assert r.status_code == 403  # the third failure starts the wait
    r = sign_in(attacker, "victim", PASSWORD, "203.0.113.9")
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1  # even the right one
    assert "try again in" in r.get_data(as_text=True)
    # The owner, from elsewhere, signs in at once: the delay locks nobody out.
    owner = app.test_client()
    assert sign_in(owner, "victim", PASSWORD, "198.51.100.1").status_code == 303
    # The wait doubles with each failure and stops at SIGN_IN_MAX_DELAY_S.
    with get_db(app).begin() as s:
        victim = accounts.find(s, "victim")
        assert victim is not None
        row = s.get(SignInDelay, (victim.id, "client:203.0.113.9"))
        assert row is not None and row.failures == 3
        waits = []
        for failures in (3, 4, 5, 40):
            row.failures = failures - 1
            now = utcnow()
            accounts._count_failure(s, app, victim.id, "client:203.0.113.9", now)
            assert row.until is not None
            waits.append((row.until - now).total_seconds())
        assert waits == [1.0, 2.0, 4.0, float(app.config["SIGN_IN_MAX_DELAY_S"])]
        row.until = utcnow() - dt.timedelta(seconds=1)  # the wait is over
    assert sign_in(attacker, "victim", PASSWORD, "203.0.113.9").status_code == 303
    with get_db(app).begin() as s:
        assert s.scalar(select(SignInDelay)) is None  # a success clears the count


def test_the_delay_counts_clients_by_the_one_rule(app: Flask, client: FlaskClient) -> None:
    """One IPv6 /64 is one client (arena.core.clients): another address of it waits too,
    the next /64 does not."""
    app.config["SIGN_IN_FREE_FAILURES"] = 1
    sign_up(app.test_client(), "victim")
    for _ in range(2):
        assert sign_in(client, "victim", "guess guess guess", "2001:db8::1").status_code == 403
    assert sign_in(client, "victim", PASSWORD, "2001:db8::2").status_code == 429
    assert sign_in(client, "victim", PASSWORD, "2001:db8:0:1::1").status_code == 303


def test_sign_in_is_rate_limited_per_client(app: Flask, settings: dict[str, Any]) -> None:
    from arena import create_app

    settings.update(RATE_LIMITS_ENABLED=True, RATE_LIMIT_ACCOUNT_SIGN_IN_PER_CLIENT="3 per minute")
    limited_app = create_app(settings)
    c = limited_app.test_client()
    codes = [sign_in(c, "nobody", "whatever whatever", "192.0.2.44").status_code
             for _ in range(4)]
    assert codes == [403, 403, 403, 429]
    assert sign_in(c, "nobody", "whatever whatever", "192.0.2.45").status_code == 403


def test_unknown_usernames_get_the_same_answer(app: Flask, client: FlaskClient) -> None:
    sign_up(app.test_client(), "known")
    a = sign_in(client, "known", "wrong password!")
    b = sign_in(client, "unknown-one", "wrong password!")
    assert a.status_code == b.status_code == 403
    assert "Username or password: wrong." in a.get_data(as_text=True)
    assert "Username or password: wrong." in b.get_data(as_text=True)


# --- the operator's reset --------------------------------------------------------------------


@both_backends
def test_the_operators_reset_link_works_once_and_signs_everyone_out(
        app: Flask, alice: FlaskClient, env: dict[str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    from arena.ops.cli import main

    assert main(["account", "reset-password", "nobody"]) != 0
    assert main(["account", "reset-password", "alice"]) == 0
    link = capsys.readouterr().out.strip().splitlines()[-1]
    token = link.split("token=", 1)[1]
    assert link.startswith("/account/reset?token=")
    with get_db(app).begin() as s:
        account = accounts.find(s, "alice")
        assert account is not None and account.reset_hash not in (None, token)
    owner = app.test_client()
    page = owner.get(f"/account/reset?token={token}")
    assert page.status_code == 200 and "alice" in page.get_data(as_text=True)
    form_token = re.search(r'name="csrf_token" value="([^"]+)"',
                           page.get_data(as_text=True))
    assert form_token
    new = "a brand new password"
    r = owner.post("/account/reset", data={"token": token, "password": new, "password2": new,
                                           "csrf_token": form_token.group(1)})
    assert r.status_code == 303 and owner.get("/account").status_code == 200
    assert alice.get("/account").status_code == 303  # the old session died with the password
    assert sign_in(app.test_client(), "alice").status_code == 403
    assert sign_in(app.test_client(), "alice", new).status_code == 303
    again = app.test_client()
    assert again.get(f"/account/reset?token={token}").status_code == 403  # used
    assert again.get("/account/reset?token=made-up").status_code == 403


def test_reset_links_expire(app: Flask, alice: FlaskClient) -> None:
    with app.app_context(), get_db(app).begin() as s:
        account = accounts.find(s, "alice")
        assert account is not None
        token = accounts.start_reset(s, app, account)
        account.reset_expires_at = utcnow() - dt.timedelta(seconds=1)
    assert alice.get(f"/account/reset?token={token}").status_code == 403


def test_set_password_from_the_command_line(app: Flask, alice: FlaskClient,
                                            env: dict[str, str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from arena.ops.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["account", "set-password", "alice", "--stdin"]) != 0
    monkeypatch.setattr("sys.stdin", io.StringIO("set by the operator\n"))
    assert main(["account", "set-password", "alice", "--stdin"]) == 0
    assert alice.get("/account").status_code == 303
    assert sign_in(app.test_client(), "alice", "set by the operator").status_code == 303
    assert main(["account", "show", "alice"]) == 0


@pytest.fixture
def env(app: Flask, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    from .conftest import worker_env

    values = worker_env(app)
    for key in ("DATABASE_URL", "REDIS_URL", "QUEUE_NAME", "SECRET_KEY", "ADMIN_TOKEN",
                "ARENA_INSTANCE_PATH", "ALLOW_PRIVATE_BOT_URLS"):
        monkeypatch.setenv(key, values[key])
    return values
