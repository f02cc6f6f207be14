"""Errors: every error the service answers is ``{"error": {"code", "message"}}`` for API
clients, and the same status and message as an HTML page for a browser asking for a page
(``Accept`` preferring HTML, outside ``/api/``; :mod:`arena.web.error_pages`).

Views raise :class:`ApiError` for what the client got wrong; Werkzeug's HTTP errors (404 for
an unknown route, 405, 413 for a body over ``MAX_CONTENT_LENGTH``) are converted to the same
shape, and anything unexpected becomes a 500 (logged) without a traceback in the answer.
A database that cannot be reached (an outage, a failover) is not unexpected: 503 with
``Retry-After`` (:func:`database_unavailable`; which errors count is
:func:`arena.core.storage.is_connection_error`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from typing import Any

from flask import Flask, Response, current_app, g, jsonify, request
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import HTTPException

from arena.core import metrics
from arena.core.storage import is_connection_error
from referee.wire.text import text_problem

from .observe import route_label

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def error_response(status: int, code: str, message: str, *, page_message: str | None = None,
                   **extra: Any) -> Response:
    """The one answer for every error: JSON for API clients, the same status and message
    (or ``page_message``, worded for people) as an HTML page for a browser asking for a
    page (:mod:`arena.web.error_pages`)."""
    from .error_pages import error_page, wants_html

    if wants_html():
        page = error_page(status, code, page_message or message)
        if page is not None:
            return page
    body: dict[str, Any] = {"code": code, "message": message}
    body.update(extra)
    resp = jsonify({"error": body})
    resp.status_code = status
    return resp


def _code_for(e: HTTPException) -> str:
    name = (e.name or "error").lower().replace(" ", "_").replace("'", "")
    return {"request_entity_too_large": "body_too_large"}.get(name, name)


def init_app(app: Flask) -> None:
    @app.before_request
    def _refuse_huge_bodies() -> Response | None:
        # Refuse by Content-Length before any view runs (a chunked body without one is cut
        # off by Werkzeug at MAX_CONTENT_LENGTH when it is read).
        limit = app.config["MAX_CONTENT_LENGTH"]
        if limit is not None and (request.content_length or 0) > limit:
            return error_response(413, "body_too_large",
                                  f"request body larger than {limit} bytes")
        return None

    @app.before_request
    def _refuse_nul_in_text() -> Response | None:
        # Query parameters and form fields reach SQL as text, and PostgreSQL cannot store or
        # compare NUL: refuse it here, for every route, rather than fail with a 500 later.
        # (Werkzeug decodes both with errors="replace", so no lone surrogate gets through.)
        fields = list(request.args.items(multi=True))
        if not request.path.startswith("/api/") and request.mimetype in (
                "application/x-www-form-urlencoded", "multipart/form-data"):  # web forms
            fields += list(request.form.items(multi=True))
        for key, value in fields:
            if "\x00" in key or "\x00" in value:
                return error_response(400, "bad_string",
                                      "query parameters and form fields may not contain NUL")
        return None

    @app.errorhandler(ApiError)
    def _api_error(e: ApiError) -> Response:
        resp = error_response(e.status, e.code, e.message, **e.extra)
        if "retry_after" in e.extra:
            resp.headers["Retry-After"] = str(e.extra["retry_after"])
        return resp

    @app.errorhandler(HTTPException)
    def _http_error(e: HTTPException) -> Response:
        status = e.code or 500
        message = e.description or e.name
        if status == 413:
            message = f"request body larger than {app.config['MAX_CONTENT_LENGTH']} bytes"
        page_message = None
        if status == 404:
            message = f"no such resource: {request.path}"
            page_message = f"there is no page at {request.path}"
        elif status == 405:
            message = f"{request.method} is not allowed on {request.path}"
        resp = error_response(status, _code_for(e), message, page_message=page_message)
        if status == 405 and e.get_response().headers.get("Allow"):
            resp.headers["Allow"] = e.get_response().headers["Allow"]
        return resp

    @app.errorhandler(Exception)
    def _unexpected(e: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(500, "internal_error", "internal server error",
                              page_message="this page could not be shown because of an "
                              "error in the arena itself, not in anything you did")

    @app.errorhandler(SQLAlchemyError)
    def _database_error(e: SQLAlchemyError) -> Response:
        if not is_connection_error(e):
            return _unexpected(e)
        return database_unavailable(e)


DATABASE_RETRY_AFTER_S = 5
"""``Retry-After`` of a 503 for a database that cannot be reached: a failover's promotion
takes a few seconds (docs/operations.md, "PostgreSQL failover"), and a request after it
succeeds at once (the pool replaces its dead connections by itself)."""


def database_unavailable(e: Exception) -> Response:
    """503 with ``Retry-After`` for a request that found the database unreachable (an outage,
    a failover): nothing is wrong with the request or with the arena's code, so not a 500.
    The request's transaction is rolled back (its connection, if it still has one, goes back
    to the pool clean) and the refusal is counted (``arena_db_unavailable_total``)."""
    s = g.pop("db_session", None)
    if s is not None:
        with contextlib.suppress(Exception):  # the connection may be dead: close drops it
            s.rollback()
        with contextlib.suppress(Exception):
            s.close()
    route = route_label()
    metrics.DB_UNAVAILABLE.labels(route).inc()
    first_line = (str(e).splitlines() or [""])[0]
    log.warning("database unreachable on %s %s: %s: %s", request.method, route,
                type(e).__name__, first_line)
    resp = error_response(503, "database_unavailable",
                          "the database cannot be reached right now (an outage or a "
                          "failover); try again shortly",
                          page_message="the arena's database cannot be reached right now; "
                          "this page should work again in a few seconds")
    resp.headers["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
    return resp


# --- request bodies --------------------------------------------------------------------------
#
# Every JSON endpoint reads its body through :func:`json_object` (one parser, one set of
# rules), so a malformed body gets the same 4xx JSON error wherever it is sent:
#
# * wrong or missing ``Content-Type`` (or a charset other than UTF-8): 415;
# * empty, not UTF-8, a byte-order mark, not JSON, ``NaN``/``Infinity``: 400 ``malformed_json``;
# * nested deeper than ``MAX_JSON_DEPTH``: 400 ``nested_too_deep``, found by a linear scan
#   *before* parsing (the parser recurses once per level; 20,000 levels used to end in a
#   ``RecursionError`` and a 500);
# * the same key twice in one object: 400 ``duplicate_key`` (which one wins differs between
#   parsers; we refuse to guess);
# * an integer beyond 64 bits or a number that overflows to infinity (``1e400``): 400
#   ``out_of_range`` (checked on the digits, so a 60,000-digit number costs nothing);
# * a string holding NUL or a lone UTF-16 surrogate (``"\ud800"``), which no database column
#   stores: 400 ``bad_string``;
# * a top level other than an object: 400 ``bad_request``.

MAX_INT_DIGITS = 19
"""Digits of the largest integer a body may carry (64-bit signed: 9223372036854775807)."""


class BodyError(ValueError):
    """What is wrong with a request body (raised inside the parser's hooks)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _reject_constant(name: str) -> Any:
    raise BodyError("malformed_json", f"body is not valid JSON: {name} is not a JSON number")


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS or abs(value := int(text)) >= 2**63:
        raise BodyError("out_of_range", "a number in the body does not fit in 64 bits")
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BodyError("out_of_range", f"number {text[:40]} is too large")
    return value


def _check_text(value: str) -> str:
    """The one text rule, the same for what a bot sends (:mod:`referee.wire.text`)."""
    if text_problem(value) is not None:
        if "\x00" in value:
            raise BodyError("bad_string", "strings may not contain NUL characters")
        raise BodyError("bad_string", "strings may not contain lone UTF-16 surrogates")
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BodyError("duplicate_key", f"key {key[:60]!r} appears twice in one object")
        out[_check_text(key)] = value
    return out


def _check_strings(value: Any) -> None:
    """Check every string value (keys were checked by :func:`_object`); the depth is bounded
    by the scan, so this recursion is too."""
    if isinstance(value, str):
        _check_text(value)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            _check_strings(item)


def json_depth_exceeds(text: str, limit: int) -> bool:
    """Whether arrays/objects in ``text`` nest deeper than ``limit`` (one linear pass that
    skips string contents, so brackets inside strings do not count)."""
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def parse_json(raw: bytes, max_depth: int) -> Any:
    """Parse a request body by the rules above; :class:`BodyError` says what is wrong."""
    if not raw:
        raise BodyError("malformed_json", "body is empty; send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyError("malformed_json", f"body is not valid UTF-8: {exc}") from None
    if json_depth_exceeds(text, max_depth):
        raise BodyError("nested_too_deep",
                        f"body nests arrays/objects deeper than {max_depth} levels")
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int,
                          parse_float=_parse_float, object_pairs_hook=_object)
    except BodyError:
        raise
    except RecursionError:  # pragma: no cover - the depth scan comes first
        raise BodyError("nested_too_deep", "body nests too deeply") from None
    except ValueError as exc:
        raise BodyError("malformed_json", f"body is not valid JSON: {exc}") from None
    _check_strings(data)
    return data


def json_object() -> dict[str, Any]:
    """The request body as a JSON object, or an ApiError saying what is wrong with it."""
    if request.mimetype != "application/json":
        raise ApiError(415, "unsupported_media_type",
                       "send a JSON object with Content-Type: application/json")
    charset = request.mimetype_params.get("charset", "utf-8").lower()
    if charset not in ("utf-8", "utf8"):
        raise ApiError(415, "unsupported_media_type",
                       f"JSON bodies are UTF-8; charset={charset[:20]} is not supported")
    raw = request.get_data(cache=True)  # over MAX_CONTENT_LENGTH: Werkzeug raises 413
    try:
        data = parse_json(raw, int(current_app.config["MAX_JSON_DEPTH"]))
    except BodyError as exc:
        raise ApiError(400, exc.code, exc.message) from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_request", "body must be a JSON object")
    return data


def optional_json_object() -> dict[str, Any]:
    """Like :func:`json_object` for endpoints whose body may be left out: no body at all is
    ``{}``; any body, whatever its type, goes through the same parser."""
    if not request.content_length and "Transfer-Encoding" not in request.headers:
        return {}
    return json_object()
