"""Keyset pagination for the lists that grow without bound (matches, rating histories).

An ``OFFSET`` page makes the database walk every row before it, and a row inserted while a
client pages shifts every later page by one (a row is shown twice, or never).  A keyset page
asks for the rows *after the last one seen* in the list's order (``WHERE id < :last ORDER BY
id DESC LIMIT n``): each page costs one index range scan, however deep, and inserts never
shift it.

The position is handed to clients as an opaque ``cursor`` token (URL-safe base64 of a small
JSON document naming the list and its key).  Clients pass it back unchanged as ``?cursor=``;
anything else is a 400 ``bad_cursor``.  The token is not secret and not signed: a forged one
can only name another position of a public list.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from flask import current_app

from arena.core.models import MAX_ID

from .errors import ApiError

MAX_CURSOR_CHARS = 200
"""Longest cursor token accepted (a real one is about 30 characters)."""


def encode_cursor(kind: str, key: int | str) -> str:
    raw = json.dumps({"k": kind, "v": key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _bad_cursor() -> ApiError:
    return ApiError(400, "bad_cursor", "cursor must be the next_cursor of a previous page "
                    "of this list, passed back unchanged")


def _cursor_value(token: str, kind: str, max_chars: int = MAX_CURSOR_CHARS) -> Any:
    if not token or len(token) > max_chars or not token.isascii():
        raise _bad_cursor()
    try:
        doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _bad_cursor() from None
    if not isinstance(doc, dict) or doc.get("k") != kind:
        raise _bad_cursor()
    return doc.get("v")


def decode_cursor(token: str, kind: str) -> int:
    """The key a cursor of list ``kind`` carries; 400 ``bad_cursor`` for anything else."""
    value = _cursor_value(token, kind)
    # Every keyset list is keyed by an id: a larger key would reach an INTEGER column.
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_ID:
        raise _bad_cursor()
    return value


def decode_text_cursor(token: str, kind: str, max_len: int) -> str:
    """The text key (e.g. the last bot name seen) a cursor of list ``kind`` carries, at most
    ``max_len`` characters; 400 ``bad_cursor`` for anything else."""
    value = _cursor_value(token, kind, max_chars=MAX_CURSOR_CHARS + 8 * max_len)
    if not isinstance(value, str) or not value or len(value) > max_len or "\x00" in value:
        raise _bad_cursor()
    try:
        value.encode("utf-8")  # no lone surrogate reaches the database
    except UnicodeEncodeError:
        raise _bad_cursor() from None
    return value


def keyset_args(kind: str, limit: int | None) -> tuple[int | None, int]:
    """The (cursor key or None for the first page, limit) of a keyset list request
    (``limit``: the query's, validated; None for ``API_PAGE_LIMIT``).  The ``page``
    parameter of offset lists is refused with a pointer to ``cursor``."""
    from flask import request

    if "page" in request.args:
        raise ApiError(400, "bad_query", "this list is paginated by cursor: follow "
                       "next_cursor (?cursor=...) instead of page")
    token = request.args.get("cursor")
    key = None if token is None else decode_cursor(token, kind)
    return key, limit or int(current_app.config["API_PAGE_LIMIT"])


def keyset_page(kind: str, items: list[Any], rows: list[Any], limit: int,
                key_of: Any) -> dict[str, Any]:
    """The JSON of one page: ``rows`` were fetched with ``LIMIT limit + 1`` (one more than
    shown, to know whether another page exists without counting)."""
    more = len(rows) > limit
    return {"items": items[:limit], "limit": limit,
            "next_cursor": encode_cursor(kind, key_of(rows[limit - 1])) if more else None}
