"""The API's documentation: the OpenAPI 3.1 document at ``/api/openapi.json``."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from ..openapi import openapi_document

bp = Blueprint("docs", __name__)


@bp.get("/api/openapi.json")
def openapi() -> Response:
    return jsonify(openapi_document())
