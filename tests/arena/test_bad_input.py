"""Malformed requests of every kind get a 4xx with a JSON error, and store nothing."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from arena.core.models import Base
from arena.core.storage import get_db

from .conftest import ADMIN, both_backends, register


def row_counts(app: Flask) -> dict[str, int]:
    with get_db(app).begin() as s:
        return {
            t.name: int(s.scalar(select(func.count()).select_from(t)) or 0)
            for t in Base.metadata.sorted_tables
        }


def assert_json_error(r: Any, status: int, code: str | None = None) -> None:
    assert r.status_code == status, (r.status_code, r.data[:300])
    assert r.mimetype == "application/json", r.data[:300]
    err = r.get_json()["error"]
    assert isinstance(err["message"], str) and err["message"]
    if code is not None:
        assert err["code"] == code, err


ADMIN_H = {"Authorization": f"Bearer {ADMIN}"}
JSON_H = {"Content-Type": "application/json"}

BAD_BODIES: list[tuple[str, str, bytes, dict[str, str], int, str]] = [
    # (method, path, body, headers, status, code)
    ("POST", "/api/bots", b"{", JSON_H, 400, "malformed_json"),
    ("POST", "/api/bots", b"", JSON_H, 400, "malformed_json"),
    ("POST", "/api/bots", b"\xff\xfe", JSON_H, 400, "malformed_json"),
    ("POST", "/api/bots", b'{"name": NaN, "url": "x"}', JSON_H, 400, "malformed_json"),
    ("POST", "/api/bots", b"[1, 2]", JSON_H, 400, "bad_request"),
    ("POST", "/api/bots", b'"text"', JSON_H, 400, "bad_request"),
    ("POST", "/api/bots", b"null", JSON_H, 400, "bad_request"),
    ("POST", "/api/bots", b'{"name": "a", "url": "http://x"}', {"Content-Type": "text/plain"},
     415, "unsupported_media_type"),
    ("POST", "/api/bots", b'{"name": "a", "url": "http://x"}', {}, 415,
     "unsupported_media_type"),
    ("POST", "/api/bots", b'{"name": "a"}', JSON_H, 400, "missing_field"),
    ("POST", "/api/bots", b'{"url": "http://127.0.0.1:1"}', JSON_H, 400, "missing_field"),
    ("POST", "/api/bots", b'{"name": "a", "url": "http://x", "admin": true}', JSON_H, 400,
     "unknown_field"),
    ("POST", "/api/bots", b'{"name": 5, "url": "http://x"}', JSON_H, 400, "wrong_type"),
    ("POST", "/api/bots", b'{"name": "a", "url": ["http://x"]}', JSON_H, 400, "wrong_type"),
    ("POST", "/api/bots", b'{"name": "", "url": "http://x"}', JSON_H, 400, "bad_name"),
    ("POST", "/api/bots", b'{"name": "a b", "url": "http://x"}', JSON_H, 400, "bad_name"),
    ("POST", "/api/bots", b'{"name": "' + b"x" * 41 + b'", "url": "http://x"}', JSON_H, 400,
     "bad_name"),
    ("POST", "/api/bots", b'{"name": "a", "url": "not a url"}', JSON_H, 422, "url_refused"),
    ("POST", "/api/bots", b'{"name": "a", "url": ""}', JSON_H, 422, "url_refused"),
    ("POST", "/api/bots", b'{"name": "a", "url": "http://' + b"a" * 3000 + b'"}', JSON_H, 422,
     "url_refused"),
    ("POST", "/api/matches", b'{"bots": "1,2,3,4"}', {**JSON_H, **ADMIN_H}, 400, "wrong_type"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3]}', {**JSON_H, **ADMIN_H}, 400,
     "wrong_seat_count"),
    ("POST", "/api/matches", b'{"bots": [1, 1, 2, 3]}', {**JSON_H, **ADMIN_H}, 400,
     "duplicate_bot"),
    ("POST", "/api/matches", b'{"bots": [true, 2, 3, 4]}', {**JSON_H, **ADMIN_H}, 400,
     "wrong_type"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 99]}', {**JSON_H, **ADMIN_H}, 404,
     "not_found"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 99999999999999999999999]}',
     {**JSON_H, **ADMIN_H}, 400, "out_of_range"),  # beyond 64 bits: refused by the parser
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 9223372036854775807]}',
     {**JSON_H, **ADMIN_H}, 404, "not_found"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4], "ruleset": "chess"}',
     {**JSON_H, **ADMIN_H}, 400, "unknown_ruleset"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4], "deals": 0}', {**JSON_H, **ADMIN_H},
     400, "out_of_range"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4], "deals": 1.5}', {**JSON_H, **ADMIN_H},
     400, "wrong_type"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4], "seed": -1}', {**JSON_H, **ADMIN_H},
     400, "out_of_range"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4], "rated": "yes"}', {**JSON_H, **ADMIN_H},
     400, "wrong_type"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4], "limits": []}', {**JSON_H, **ADMIN_H},
     400, "wrong_type"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4], "limits": {"deadline_ms": 1}}',
     {**JSON_H, **ADMIN_H}, 400, "out_of_range"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4], "limits": {"speed": 1}}',
     {**JSON_H, **ADMIN_H}, 400, "unknown_field"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4]}', JSON_H, 401, "unauthorized"),
    ("POST", "/api/matches", b'{"bots": [1, 2, 3, 4]}',
     {**JSON_H, "Authorization": "Bearer nope"}, 403, "forbidden"),
    ("POST", "/api/ladder/rounds", b'{"max_matches": "3"}', {**JSON_H, **ADMIN_H}, 400,
     "wrong_type"),
    ("POST", "/api/ladder/rounds", b"{}", JSON_H, 401, "unauthorized"),
    ("PATCH", "/api/bots/1", b"{}", {**JSON_H, **ADMIN_H}, 400, "missing_field"),
    ("PATCH", "/api/bots/1", b'{"paused": "no"}', {**JSON_H, **ADMIN_H}, 400, "wrong_type"),
    ("PATCH", "/api/bots/1", b'{"paused": 0}', {**JSON_H, **ADMIN_H}, 400, "wrong_type"),
    ("PATCH", "/api/bots/1", b'{"name": "new"}', {**JSON_H, **ADMIN_H}, 400, "unknown_field"),
    ("PATCH", "/api/bots/1", b"[]", {**JSON_H, **ADMIN_H}, 400, "bad_request"),
    ("PATCH", "/api/bots/1", b'{"url": "http://169.254.169.254/"}', {**JSON_H, **ADMIN_H},
     422, "url_refused"),
]


@both_backends
def test_bad_bodies(app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    for i, n in enumerate(["random", "greedy", "planner", "random-2"]):
        register(client, f"b{i}", sample_bots[n])
    before = row_counts(app)
    for method, path, body, headers, status, code in BAD_BODIES:
        r = client.open(path, method=method, data=body, headers=headers)
        try:
            assert_json_error(r, status, code)
        except AssertionError as exc:
            raise AssertionError(f"{method} {path} {body[:80]!r}: {exc}") from None
    assert row_counts(app) == before


def test_huge_bodies_get_a_json_413(app: Flask, client: FlaskClient) -> None:
    limit = app.config["MAX_CONTENT_LENGTH"]
    big = b'{"name": "a", "url": "' + b"x" * (limit + 10) + b'"}'
    for path, method in [("/api/bots", "POST"), ("/api/matches", "POST"),
                         ("/api/bots/1", "PATCH")]:
        r = client.open(path, method=method, data=big,
                        headers={**JSON_H, **ADMIN_H})
        assert_json_error(r, 413, "body_too_large")
    assert sum(row_counts(app).values()) == 0


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/bots/1", 404),
        ("GET", "/api/bots/0", 404),
        ("GET", "/api/bots/-1", 404),
        ("GET", "/api/bots/abc", 404),
        ("GET", "/api/bots/99999999999999999999999999", 404),
        ("GET", "/api/bots/1/versions", 404),
        ("GET", "/api/bots/1/ratings", 404),
        ("GET", "/api/bots/1/matches", 404),
        ("GET", "/api/bots/1/health", 404),
        ("PATCH", "/api/bots/5", 404),
        ("DELETE", "/api/bots/5", 404),
        ("GET", "/api/matches/1", 404),
        ("GET", "/api/matches/1/log", 404),
        ("GET", "/api/nothing-here", 404),
        ("GET", "/nothing-here", 404),
        ("PUT", "/api/bots", 405),
        ("DELETE", "/api/matches", 405),
        ("POST", "/api/ratings", 405),
        ("GET", "/api/ladder/rounds", 405),
        ("GET", "/api/bots?page=0", 400),
        ("GET", "/api/bots?page=abc", 400),
        ("GET", "/api/bots?limit=-5", 400),
        ("GET", "/api/bots?limit=1e3", 400),
        ("GET", "/api/bots?page=99999999999999999999", 400),
        ("GET", "/api/bots?status=dead", 400),
        ("GET", "/api/matches?state=sleeping", 400),
        ("GET", "/api/matches?bot=x", 400),
        ("GET", "/api/ratings?limit=0", 400),
        ("GET", "/api/matches?cursor=", 400),
        ("GET", "/api/matches?cursor=not-a-cursor", 400),
        ("GET", "/api/matches?cursor=" + "A" * 500, 400),
        ("GET", "/api/matches?cursor=%E2%98%83", 400),
        ("GET", "/api/matches?cursor=eyJrIjoicmF0aW5ncyIsInYiOjV9", 400),  # another list's
        ("GET", "/api/matches?cursor=eyJrIjoibWF0Y2hlcyIsInYiOi0xfQ", 400),  # negative key
        ("GET", "/api/matches?cursor=eyJrIjoibWF0Y2hlcyIsInYiOnRydWV9", 400),  # not an int
        ("GET", "/api/matches?cursor=WzFd", 400),  # JSON, not an object
        ("GET", "/api/matches?page=2", 400),  # keyset list: page is refused
        ("GET", "/api/matches?limit=201", 400),
        ("GET", "/api/matches?limit=0", 400),
    ],
)
def test_unknown_ids_routes_methods_and_queries(
    client: FlaskClient, method: str, path: str, status: int
) -> None:
    r = client.open(path, method=method, headers=ADMIN_H)
    assert_json_error(r, status)


def test_log_of_an_unfinished_match_is_a_conflict(
    app: Flask, client: FlaskClient, four_bots: list[int]
) -> None:
    app.config["REDIS_URL"] = "redis://127.0.0.1:1/0"  # queue down: the match stays queued
    r = client.post("/api/matches", json={"bots": four_bots}, headers=ADMIN_H)
    assert r.status_code == 202
    match_id = r.get_json()["id"]
    assert_json_error(client.get(f"/api/matches/{match_id}/log"), 409, "not_finished")
    assert_json_error(client.get(f"/api/matches/{match_id}/log?format=xml"), 400, "bad_query")
