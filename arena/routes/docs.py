"""The API's documentation: the OpenAPI 3.1 document at ``/api/openapi.json``."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from ..openapi import openapi_document, operation

bp = Blueprint("docs", __name__)


@bp.get("/api/openapi.json")
@operation("This document (OpenAPI 3.1)", {200: ("application/json", "the document")})
def openapi() -> Response:
    return jsonify(openapi_document())
