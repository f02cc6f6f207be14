"""The API's documentation: the OpenAPI 3.1 document at ``/api/openapi.json``, and the same
document as a page people read at ``/docs/api`` (:mod:`arena.web.apidocs`); and "Write a bot" at
``/docs/starters``: the starter bots, one per language (:mod:`arena.web.starter_bots`)."""

from __future__ import annotations

import threading

from flask import Blueprint, Response, current_app, jsonify, render_template, request

from arena.web.apidocs import page_context
from arena.web.limits import limited
from arena.web.openapi import openapi_document, operation, page
from arena.web.starter_bots import STARTER_BOTS

bp = Blueprint("docs", __name__)

_BUILDING = threading.Lock()
"""Held while a process builds its OpenAPI document: the requests that arrive meanwhile wait
for that one build instead of each building it (16 at once took 0.5 s each)."""


@bp.get("/api/openapi.json")
@operation("This document (OpenAPI 3.1)", {200: ("application/json", "the document")})
def openapi() -> Response:
    """The document is the code's, so it cannot change while a process runs: it is built
    (about 70 ms: every route, every schema) once per process and then served as stored
    bytes."""
    body: bytes | None = current_app.extensions.get("arena.openapi_json")
    if body is None:
        with _BUILDING:
            body = current_app.extensions.get("arena.openapi_json")
            if body is None:
                body = jsonify(openapi_document()).get_data()
                current_app.extensions["arena.openapi_json"] = body
    return Response(body, mimetype="application/json")


@bp.get("/docs/api")
@limited("pages")
@page("This document as a page to read: every endpoint with its parameters, request and "
      "response fields and examples (no JavaScript)")
def api_docs() -> str:
    """The API reference for people, rendered on the server from the OpenAPI document: every
    endpoint, its parameters, request and response schemas and examples; no JavaScript.

    The document is the code's, so it cannot change while a process runs: the page (about
    60 ms to render) is rendered once per process and path prefix, then served as is."""
    cache: dict[str, str] = current_app.extensions.setdefault("arena.api_docs", {})
    key = request.script_root
    if key not in cache:
        cache[key] = render_template("api_docs.html", **page_context(openapi_document()))
    return cache[key]


@bp.get("/docs/starters")
@limited("pages")
@page("Write a bot: the starter bots, one per language (Python, TypeScript, Go, Java), where "
      "each is in the repository, and what to type to run and test it")
def starters() -> str:
    """The starter bots as a page: the web process cannot serve the repository's
    ``starters/`` folder, so the page names each folder and its commands."""
    return render_template("starters.html", starters=STARTER_BOTS)
