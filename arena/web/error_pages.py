"""Error pages for people: the HTML face of :func:`arena.web.errors.error_response`.

Every error the service answers has one source (``error_response``); whoever asked decides
its form.  A browser asking for a page (``Accept`` prefers ``text/html`` to JSON, as every
browser's navigation does) gets an HTML page with the same status, the same message and the
site's navigation; API clients get the JSON error: anything under ``/api/``, any ``*.json``
path, and every request that does not prefer HTML (``curl``'s ``*/*``, no ``Accept`` at all,
``Accept: application/json``).
"""

from __future__ import annotations

import logging

from flask import Response, render_template, request

log = logging.getLogger(__name__)

HEADINGS = {
    400: "That request did not work",
    403: "Not allowed",
    404: "Nothing here",
    405: "Not like this",
    413: "Too large",
    415: "Not understood",
    429: "Slow down",
    500: "Something broke on our side",
    503: "Back soon",
}
"""The page's heading per status (others: the status's own name)."""

HINTS = {
    404: "The address may be mistyped, or what it pointed to was removed.",
    405: "This address exists, but not for this kind of request.",
    429: "You sent many requests in a short time; wait a little and try again.",
    500: "The error has been logged. Trying again in a moment may work; if it keeps "
         "happening, tell the operator of this arena.",
}
"""A sentence under the message, saying what the reader can do."""


def wants_html() -> bool:
    """Whether the current request should get an HTML error page rather than JSON."""
    path = request.path
    if path.startswith("/api/") or path == "/api" or path.endswith(".json"):
        return False
    accept = request.accept_mimetypes
    return accept["text/html"] > accept["application/json"]


def error_page(status: int, code: str, message: str) -> Response | None:
    """The HTML error page, or None if it cannot be rendered (the caller answers JSON: an
    error page must never fail into a second error)."""
    from werkzeug.http import HTTP_STATUS_CODES

    try:
        html = render_template("error.html", status=status, code=code, message=message,
                               heading=HEADINGS.get(status, HTTP_STATUS_CODES.get(status,
                                                                                  "Error")),
                               hint=HINTS.get(status, ""))
    except Exception:
        log.exception("rendering the %s error page failed", status)
        return None
    return Response(html, status=status, mimetype="text/html")
