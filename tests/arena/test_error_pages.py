"""Errors answer in the form the client asked for (issue 11): a browser asking for a page gets
an HTML page with the status, the message and the site's navigation; API clients (``/api/``,
``*.json``, ``Accept`` not preferring HTML, no ``Accept`` at all) keep the JSON error."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,"
                     "image/avif,image/webp,*/*;q=0.8"}
"""What Chromium sends when it navigates to a page."""
JSON_CLIENTS: list[dict[str, str]] = [{}, {"Accept": "*/*"}, {"Accept": "application/json"},
                                      {"Accept": "application/json, text/html;q=0.5"}]


@pytest.fixture
def app(app: Flask) -> Flask:
    def boom() -> Any:
        raise RuntimeError("_PinnedHTTPConnection(host=secret.internal) exploded")

    app.add_url_rule("/boom", "boom", boom)
    app.add_url_rule("/api/boom", "api_boom", boom)
    return app


def is_page(resp: Any, status: int) -> str:
    assert resp.status_code == status
    assert resp.mimetype == "text/html", resp.data[:200]
    html: str = resp.get_data(as_text=True)
    assert f'data-status="{status}"' in html
    assert '<nav' in html and "Big Two Arena" in html  # the site's own page, navigation
    assert "Content-Security-Policy" in resp.headers  # the pages' headers apply
    return html


def is_json(resp: Any, status: int, code: str) -> None:
    assert resp.status_code == status
    assert resp.mimetype == "application/json", resp.data[:200]
    assert resp.get_json()["error"]["code"] == code


@pytest.mark.parametrize("path", ["/no-such-page", "/matches/x/y", "/bots/0"])
def test_unknown_pages_are_html_404_pages_for_browsers(client: FlaskClient, path: str) -> None:
    html = is_page(client.get(path, headers=BROWSER), 404)
    assert "Nothing here" in html and f"There is no page at {path}." in html
    for headers in JSON_CLIENTS:
        is_json(client.get(path, headers=headers), 404, "not_found")


@pytest.mark.parametrize(("path", "what"), [
    ("/bots/999", "bot 999"), ("/matches/999", "match 999"),
    ("/tournaments/999", "tournament 999"), ("/tournaments/999/live", "tournament 999")])
def test_pages_of_rows_that_do_not_exist_negotiate_too(client: FlaskClient, path: str,
                                                       what: str) -> None:
    html = is_page(client.get(path, headers=BROWSER), 404)
    assert "Nothing here" in html and f"There is no {what}." in html
    for headers in JSON_CLIENTS:
        resp = client.get(path, headers=headers)
        is_json(resp, 404, "not_found")
        assert resp.get_json()["error"]["message"] == f"no {what}"


@pytest.mark.parametrize("path", ["/api/no-such-thing", "/api/bots/999",
                                  "/matches/999/replay.json"])
def test_api_and_json_paths_keep_json_errors_for_browsers_too(client: FlaskClient,
                                                              path: str) -> None:
    is_json(client.get(path, headers=BROWSER), 404, "not_found")


def test_a_method_not_allowed_is_a_405_page_with_its_allow_header(client: FlaskClient) -> None:
    resp = client.delete("/leaderboard", headers=BROWSER)
    html = is_page(resp, 405)
    assert "DELETE is not allowed on /leaderboard." in html
    assert "GET" in resp.headers["Allow"]
    resp = client.delete("/leaderboard")
    is_json(resp, 405, "method_not_allowed")
    assert "GET" in resp.headers["Allow"]


def test_an_unexpected_error_is_a_500_page_without_internals(client: FlaskClient) -> None:
    html = is_page(client.get("/boom", headers=BROWSER), 500)
    assert "Something broke on our side" in html
    assert "not in anything you did" in html
    assert "_Pinned" not in html and "secret.internal" not in html and "Traceback" not in html
    is_json(client.get("/boom"), 500, "internal_error")
    resp = client.get("/api/boom", headers=BROWSER)
    is_json(resp, 500, "internal_error")
    assert b"secret.internal" not in resp.data


def test_a_bad_query_on_a_page_is_a_400_page(client: FlaskClient) -> None:
    html = is_page(client.get("/leaderboard?q=a%00b", headers=BROWSER), 400)
    assert "may not contain NUL" in html
    is_json(client.get("/leaderboard?q=a%00b"), 400, "bad_string")
