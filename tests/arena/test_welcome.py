"""Reloading the welcome page after a web submission (issue 19 §4).

The form's POST once answered the welcome page itself, so a reload posted the form again and
read like a failure ("a bot called ... exists already").  Now the POST redirects (303) to
``/bots/<id>/welcome``; the owner token and the signing secret are shown there exactly once
(kept in Redis for one read, :mod:`arena.web.welcome`), never in a URL or the cookie, and a
reload shows the same welcome without them.
"""

from __future__ import annotations

import base64
import re

from flask.testing import FlaskClient

from .conftest import ADMIN

URL_TOKEN = re.compile(r"[A-Za-z0-9_-]{40,}")


def form_post(client: FlaskClient, name: str, url: str) -> object:
    with client.session_transaction() as sess:
        sess["csrf"] = "t"
    return client.post("/bots/new", data={"name": name, "url": url, "csrf_token": "t"})


def cookie_text(client: FlaskClient) -> str:
    cookie = client.get_cookie("session")
    if cookie is None:
        return ""
    payload = cookie.value.lstrip(".").split(".")[0]
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    if cookie.value.startswith("."):
        import zlib

        raw = zlib.decompress(raw)
    return raw.decode("utf-8", "replace")


def test_the_form_redirects_and_the_token_is_shown_once(
        client: FlaskClient, sample_bots: dict[str, str]) -> None:
    r = form_post(client, "welcome-bot", sample_bots["greedy"])
    assert r.status_code == 303  # type: ignore[attr-defined]
    location = r.headers["Location"]  # type: ignore[attr-defined]
    found = re.fullmatch(r".*/bots/(\d+)/welcome", location)
    assert found, location
    bot_id = int(found.group(1))
    first = client.get(location)
    assert first.status_code == 200 and first.headers["Cache-Control"] == "no-store"
    page = first.get_data(as_text=True)
    token = re.search(r'<code id="owner-token">([^<]+)</code>', page)
    secret = re.search(r'<code id="signing-secret">([^<]+)</code>', page)
    assert token and secret and 'id="check-progress"' in page
    # It is the owner token, and it never travelled in a URL or the cookie.
    r = client.get(f"/api/bots/{bot_id}", headers={"Authorization": f"Bearer {token.group(1)}"})
    assert r.get_json()["url"] == sample_bots["greedy"]
    assert token.group(1) not in location and token.group(1) not in cookie_text(client)
    # A reload: the same welcome, no secret, no failure, nothing posted again.
    again = client.get(location)
    assert again.status_code == 200
    page = again.get_data(as_text=True)
    assert "Welcome to the arena, welcome-bot" in page and 'data-test="shown-once"' in page
    assert token.group(1) not in page and secret.group(1) not in page
    assert "exists already" not in page
    bots = client.get("/api/bots", headers={"Authorization": f"Bearer {ADMIN}"}).get_json()
    assert [b["name"] for b in bots["items"]].count("welcome-bot") == 1
    # Another browser opening the URL sees no secret either.
    other = client.application.test_client().get(location).get_data(as_text=True)
    assert 'id="owner-token"' not in other and 'data-test="shown-once"' in other


def test_a_second_submission_does_not_reveal_the_first_token(
        client: FlaskClient, sample_bots: dict[str, str]) -> None:
    first = form_post(client, "one", sample_bots["greedy"])
    second = form_post(client, "two", sample_bots["random"])
    one = first.headers["Location"]  # type: ignore[attr-defined]
    two = second.headers["Location"]  # type: ignore[attr-defined]
    assert 'id="owner-token"' in client.get(two).get_data(as_text=True)
    # The first welcome's token was replaced by the second's on this browser: never shown.
    assert 'id="owner-token"' not in client.get(one).get_data(as_text=True)
