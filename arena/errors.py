"""Errors as JSON: every error the service answers is ``{"error": {"code", "message"}}``.

Views raise :class:`ApiError` for what the client got wrong; Werkzeug's HTTP errors (404 for
an unknown route, 405, 413 for a body over ``MAX_CONTENT_LENGTH``) are converted to the same
shape, and anything unexpected becomes a JSON 500 (logged) rather than an HTML page.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def error_response(status: int, code: str, message: str, **extra: Any) -> Response:
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

    @app.errorhandler(ApiError)
    def _api_error(e: ApiError) -> Response:
        return error_response(e.status, e.code, e.message, **e.extra)

    @app.errorhandler(HTTPException)
    def _http_error(e: HTTPException) -> Response:
        status = e.code or 500
        message = e.description or e.name
        if status == 413:
            message = f"request body larger than {app.config['MAX_CONTENT_LENGTH']} bytes"
        elif status == 404:
            message = f"no such resource: {request.path}"
        elif status == 405:
            message = f"{request.method} is not allowed on {request.path}"
        resp = error_response(status, _code_for(e), message)
        if status == 405 and e.get_response().headers.get("Allow"):
            resp.headers["Allow"] = e.get_response().headers["Allow"]
        return resp

    @app.errorhandler(Exception)
    def _unexpected(e: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(500, "internal_error", "internal server error")


# --- request bodies --------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_object() -> dict[str, Any]:
    """The request body as a JSON object, or an ApiError saying what is wrong with it."""
    if not request.mimetype or request.mimetype != "application/json":
        raise ApiError(415, "unsupported_media_type",
                       "send a JSON object with Content-Type: application/json")
    raw = request.get_data(cache=True)  # over MAX_CONTENT_LENGTH: Werkzeug raises 413
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, "malformed_json", f"body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_request", "body must be a JSON object")
    return data


def check_fields(data: dict[str, Any], allowed: set[str],
                 required: frozenset[str] | set[str] = frozenset()) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ApiError(400, "unknown_field", f"unknown field(s): {', '.join(unknown)}")
    missing = sorted(required - set(data))
    if missing:
        raise ApiError(400, "missing_field", f"missing field(s): {', '.join(missing)}")


def want_str(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise ApiError(400, "wrong_type", f"{key} must be a string")
    return value


def want_bool(data: dict[str, Any], key: str) -> bool:
    value = data[key]
    if not isinstance(value, bool):
        raise ApiError(400, "wrong_type", f"{key} must be true or false")
    return value


def want_int(data: dict[str, Any], key: str, lo: int, hi: int) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, "wrong_type", f"{key} must be an integer")
    if not lo <= value <= hi:
        raise ApiError(400, "out_of_range", f"{key} must be between {lo} and {hi}")
    return value


def query_int(name: str, default: int, lo: int, hi: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
        raise ApiError(400, "bad_query", f"{name} must be a whole number")
    value = int(raw)
    if not lo <= value <= hi:
        raise ApiError(400, "out_of_range", f"{name} must be between {lo} and {hi}")
    return value
