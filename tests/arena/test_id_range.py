"""Ids no row can have are "not found", never a 500 (issue 17 §2).

Every table's id is an ``INTEGER`` column (32-bit on PostgreSQL); the URL pattern took 18
digits, so ``/api/bots/2147483648`` reached PostgreSQL, which refused the number, and every
route with an id answered 500.  Every rule of the app with an ``id`` converter is sent each of
its methods with ids just past the column and far past it, on both databases: 404.  Ids in a
query, a cursor, a JSON body or a form are a 4xx with a JSON message.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from arena.core.models import MAX_ID

from .conftest import admin_headers, both_backends

TOO_LARGE = (MAX_ID + 1, 99999999999999999, 10**30)


def id_rules(app: Flask) -> list[tuple[str, str]]:
    """(method, URL pattern with ``{}`` for every id) of each rule with an id converter."""
    out = []
    for rule in app.url_map.iter_rules():
        ids = re.findall(r"<id:[^>]+>", rule.rule)
        if not ids or re.search(r"<(?!id:)[^>]+>", rule.rule):
            continue
        pattern = re.sub(r"<id:[^>]+>", "{}", rule.rule)
        out += [(m, pattern) for m in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})]
    return out


def test_the_routes_with_ids_are_all_found(app: Flask) -> None:
    rules = id_rules(app)
    patterns = {p for _, p in rules}
    for needed in ("/api/bots/{}", "/matches/{}", "/api/tournaments/{}/archive",
                   "/tournaments/{}", "/api/matches/{}/log"):
        assert needed in patterns
    assert {"GET", "POST", "DELETE", "PATCH"} <= {m for m, _ in rules}


@both_backends
@pytest.mark.parametrize("number", TOO_LARGE)
def test_an_id_past_the_columns_is_404_on_every_route(client: FlaskClient, app: Flask,
                                                       number: int) -> None:
    wrong = []
    for method, pattern in id_rules(app):
        url = pattern.format(*[number] * pattern.count("{}"))
        r = client.open(url, method=method, headers=admin_headers(), json={})
        if r.status_code != 404:
            wrong.append((method, url, r.status_code))
    assert not wrong


@both_backends
def test_the_largest_id_is_simply_not_found(client: FlaskClient) -> None:
    for url in (f"/api/bots/{MAX_ID}", f"/matches/{MAX_ID}", f"/api/tournaments/{MAX_ID}"):
        r = client.get(url)
        assert r.status_code == 404, url


def _cursor(kind: str, key: int) -> str:
    raw = json.dumps({"k": kind, "v": key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@both_backends
def test_ids_in_queries_bodies_and_forms_are_4xx_with_a_message(client: FlaskClient) -> None:
    big = MAX_ID + 1
    answers = [
        client.get(f"/api/matches?bot={big}"),
        client.get(f"/api/matches?cursor={_cursor('matches', big)}"),
        client.get(f"/matches?cursor={_cursor('match-list', big)}"),
        client.post("/api/matches", headers=admin_headers(), json={"bots": [big, 1, 2, 3]}),
        client.post("/api/tournaments", headers=admin_headers(),
                    json={"format": "round_robin", "bots": [1, 2, 3, big]}),
    ]
    for r in answers:
        assert 400 <= r.status_code < 500, (r.request.url, r.status_code)
        if r.mimetype == "application/json":
            assert r.get_json()["error"]["message"]


@both_backends
def test_a_form_naming_a_huge_bot_is_refused_not_a_500(client: FlaskClient) -> None:
    page = client.get("/tournaments/new").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    r = client.post("/tournaments/new", data={
        "csrf_token": token.group(1), "admin_token": admin_headers()["Authorization"][7:],
        "format": "round_robin", "bots": [str(MAX_ID + 1), "99999999999", "²", "1"]})
    assert 400 <= r.status_code < 500 or r.status_code == 200, r.status_code
