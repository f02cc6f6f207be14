"""Every way a request body can be malformed gets a 4xx JSON error on every JSON endpoint.

The routes are taken from the app's URL map (every ``POST``/``PATCH`` under ``/api``), so a
new endpoint is covered the day it is added; each member of the family is one case, sent to
every one of them, and none may store anything.
"""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from arena.web.errors import json_depth_exceeds, parse_json

from .conftest import ADMIN, both_backends, register
from .test_bad_input import assert_json_error, row_counts

JSON = "application/json"

MALFORMED: list[tuple[str, bytes, str, int, str]] = [
    # (member, body, content type, status, code)
    ("nested 20,000 deep (arrays)", b"[" * 20_000 + b"]" * 20_000, JSON, 400,
     "nested_too_deep"),
    ("nested 10,000 deep (objects)", b'{"a":' * 10_000 + b"1" + b"}" * 10_000, JSON, 400,
     "nested_too_deep"),
    ("nested 20,000 deep, unclosed", b"[" * 20_000, JSON, 400, "nested_too_deep"),
    ("nested one level too deep", b'{"x":' + b"[" * 16 + b"]" * 16 + b"}", JSON, 400,
     "nested_too_deep"),
    ("invalid UTF-8", b'{"name": "\xff\xfe"}', JSON, 400, "malformed_json"),
    ("overlong UTF-8", b'{"name": "\xc0\xaf"}', JSON, 400, "malformed_json"),
    ("UTF-16", '{"name": "a"}'.encode("utf-16"), JSON, 400, "malformed_json"),
    ("byte-order mark", b'\xef\xbb\xbf{"name": "a"}', JSON, 400, "malformed_json"),
    ("NaN", b'{"name": NaN}', JSON, 400, "malformed_json"),
    ("Infinity", b'{"name": Infinity}', JSON, 400, "malformed_json"),
    ("-Infinity", b'{"name": -Infinity}', JSON, 400, "malformed_json"),
    ("a float overflowing to infinity", b'{"deals": 1e400}', JSON, 400, "out_of_range"),
    ("an integer beyond 64 bits", b'{"deals": 9223372036854775808}', JSON, 400,
     "out_of_range"),
    ("a 60,000-digit integer", b'{"deals": ' + b"9" * 60_000 + b"}", JSON, 400,
     "out_of_range"),
    ("duplicate keys", b'{"name": "a", "name": "b"}', JSON, 400, "duplicate_key"),
    ("duplicate keys, nested", b'{"limits": {"deadline_ms": 10, "deadline_ms": 20}}', JSON,
     400, "duplicate_key"),
    ("NUL in a string", b'{"name": "a\\u0000b"}', JSON, 400, "bad_string"),
    ("NUL in a key", b'{"na\\u0000me": "a"}', JSON, 400, "bad_string"),
    ("a lone surrogate", b'{"name": "\\ud800"}', JSON, 400, "bad_string"),
    ("a lone surrogate in a list", b'{"bots": ["\\udfff"]}', JSON, 400, "bad_string"),
    ("a top-level array", b"[1, 2]", JSON, 400, "bad_request"),
    ("a top-level string", b'"text"', JSON, 400, "bad_request"),
    ("a top-level number", b"42", JSON, 400, "bad_request"),
    ("a top-level null", b"null", JSON, 400, "bad_request"),
    ("truncated", b'{"name": "a"', JSON, 400, "malformed_json"),
    ("trailing garbage", b'{"name": "a"} x', JSON, 400, "malformed_json"),
    ("whitespace only", b"   ", JSON, 400, "malformed_json"),
    ("text/plain", b'{"name": "a"}', "text/plain", 415, "unsupported_media_type"),
    ("a form body", b"name=a&url=b", "application/x-www-form-urlencoded", 415,
     "unsupported_media_type"),
    ("a form body with deep keys", b"a" + b"[b]" * 5000 + b"=1",
     "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
    ("multipart", b"--x\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--x--\r\n",
     "multipart/form-data; boundary=x", 415, "unsupported_media_type"),
    ("JSON in latin-1", '{"name": "é"}'.encode("latin-1"), "application/json; charset=latin-1",
     415, "unsupported_media_type"),
]


def json_routes(app: Flask) -> list[tuple[str, str]]:
    out = []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/"):
            continue
        for method in sorted((rule.methods or set()) & {"POST", "PATCH", "PUT"}):
            path = rule.rule
            for name in ("bot_id", "tournament_id", "webhook_id", "challenge_id", "token_id"):
                path = path.replace(f"<id:{name}>", "1")
            assert "<" not in path, f"add a value for {path}"
            out.append((method, path))
    return sorted(out)


@both_backends
def test_every_malformed_body_on_every_json_route(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    register(client, "owner-of-one", sample_bots["random"])  # PATCH /api/bots/1 exists
    routes = json_routes(app)
    assert ("POST", "/api/bots") in routes and ("PATCH", "/api/bots/1") in routes
    before = row_counts(app)
    headers = {"Authorization": f"Bearer {ADMIN}"}
    for member, body, ctype, status, code in MALFORMED:
        for method, path in routes:
            r = client.open(path, method=method, data=body,
                            headers={**headers, "Content-Type": ctype})
            try:
                assert_json_error(r, status, code)
            except AssertionError as exc:
                raise AssertionError(f"{member}: {method} {path}: {exc}") from None
    assert row_counts(app) == before


def test_depth_scan_ignores_brackets_inside_strings() -> None:
    text = '{"name": "' + "[" * 100 + '\\"' + "{" * 100 + '"}'
    assert not json_depth_exceeds(text, 2)
    assert parse_json(text.encode(), 2)["name"].startswith("[[[")
    assert json_depth_exceeds("[[[]]]", 2) and not json_depth_exceeds("[[]]", 2)


def test_the_deepest_allowed_body_still_parses() -> None:
    deepest: list[object] = []
    for _ in range(15):
        deepest = [deepest]
    assert parse_json(b"[" * 16 + b"]" * 16, 16) == deepest
    assert parse_json(b'{"n": 9223372036854775807, "m": -9223372036854775807, "f": 1.5e300}',
                      16) == {"n": 2**63 - 1, "m": -(2**63 - 1), "f": 1.5e300}


@both_backends
@pytest.mark.parametrize("path", [
    "/api/ratings?family=%00", "/api/bots?status=a%00", "/leaderboard?family=x%00y",
    "/api/matches?state=%00", "/api/bots?x%00=1",
])
def test_nul_in_a_query_is_a_400_not_a_database_error(client: FlaskClient, path: str) -> None:
    assert_json_error(client.get(path), 400, "bad_string")


@both_backends
def test_form_bodies_with_deep_keys_or_nul_get_a_4xx(app: Flask, client: FlaskClient) -> None:
    before = row_counts(app)
    deep = "a" + "[b]" * 5000
    for path in ("/bots/new", "/tournaments/new"):
        r = client.post(path, data={deep: "1", "name": "x"})
        assert r.status_code == 400, (path, r.status_code)
        r = client.post(path, data={"name": "a\x00b", "url": "http://x"})
        assert_json_error(r, 400, "bad_string")
        many = "&".join(f"f{i}=1" for i in range(5000)).encode()
        r = client.post(path, data=many,
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert 400 <= r.status_code < 500, (path, r.status_code)
    assert row_counts(app) == before
