"""The OpenAPI 3.1 document of the service (served at ``/api/openapi.json``), derived.

Each view says what it is with :func:`operation` (a summary, its body and query shapes, its
answers); the shapes themselves are pydantic classes (:mod:`arena.web.shapes`) that also validate
the requests, so a bound or a field is written once.  :func:`openapi_document` walks the app's
routes and adds what the other decorators already say: ``@limited`` routes answer 429 with
``Retry-After``, ``@idempotent`` ones take an ``Idempotency-Key`` header, owner and operator
routes take a bearer token and answer 401/403, a body means 400/413/415.  Bounds that are
settings (page sizes, deals, entrants, name lengths) are read from the app the document is
made for.  Why pydantic and not spectree or APIFlask: see :mod:`arena.web.shapes.base`.

A route without :func:`operation` is left out of the document, which
``tests/arena/test_openapi.py`` reports (every route documented, every documented route real).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from flask import current_app
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from arena.core.models import MAX_ID

from .idempotency import IDEMPOTENT_MARK
from .limits import MARK as LIMITED_MARK
from .shapes import Answer, Error, RequestSchema, Shape

VERSION = "1.1.0"
F = TypeVar("F", bound=Callable[..., Any])
OP_MARK = "_arena_operation"
Auth = Literal["owner", "admin", "optional"] | None
Answers = dict[int, "tuple[type[BaseModel] | str | None, str]"]
"""Status -> (answer shape, or a media type for a non-JSON body, or None for no body;
description)."""

HTML = "text/html"
PAGES = "web pages"


@dataclass(frozen=True)
class Operation:
    summary: str
    answers: Answers
    body: type[Shape] | None = None
    body_required: bool = True
    query: type[Shape] | None = None
    auth: Auth = None
    errors: dict[int, str] = field(default_factory=dict)
    tag: str = "api"
    description: str = ""


def operation(summary: str, answers: Answers, *, body: type[Shape] | None = None,
              body_required: bool = True, query: type[Shape] | None = None,
              auth: Auth = None, errors: dict[int, str] | None = None,
              description: str = "") -> Callable[[F], F]:
    """Document a JSON endpoint: ``answers`` are its successful answers, ``errors`` the
    errors particular to it (the usual ones follow from the rest)."""
    op = Operation(summary, answers, body, body_required, query, auth, errors or {},
                   description=description)

    def mark(view: F) -> F:
        view.__dict__[OP_MARK] = op
        return view

    return mark


def page(summary: str, *, errors: dict[int, str] | None = None,
         answers: Answers | None = None) -> Callable[[F], F]:
    """Document an HTML page (200 HTML, 404 when what it shows does not exist)."""
    op = Operation(summary, answers or {200: (HTML, "the page")},
                   errors=errors or {}, tag=PAGES)

    def mark(view: F) -> F:
        view.__dict__[OP_MARK] = op
        return view

    return mark


def _mark(view: Any, name: str) -> Any:
    """A decorator's mark on a view, through the wrappers of later decorators."""
    while view is not None:
        if name in getattr(view, "__dict__", {}):
            return view.__dict__[name]
        view = getattr(view, "__wrapped__", None)
    return None


# --- schemas ---------------------------------------------------------------------------------


class Components:
    """The document's ``components/schemas``, filled as operations name shapes."""

    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}

    def ref(self, model: type[BaseModel]) -> dict[str, Any]:
        generator: type[GenerateJsonSchema] = (RequestSchema if issubclass(model, Shape)
                                               else GenerateJsonSchema)
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}",
                                         schema_generator=generator)
        self.schemas.update(schema.pop("$defs", {}))
        name = _name(model)
        self.schemas[name] = schema
        return {"$ref": f"#/components/schemas/{name}"}


def _name(model: type[BaseModel]) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", model.__name__)


def _content(kind: type[BaseModel] | str | None, description: str,
             components: Components) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description}
    if isinstance(kind, str):
        out["content"] = {kind: {}} if kind == HTML else {kind: {"schema": {
            "type": "string", "format": "binary"}} if kind == "application/zip" else {}}
    elif kind is not None:
        out["content"] = {"application/json": {"schema": components.ref(kind)}}
    return out


def _parameters(query: type[Shape], components: Components) -> list[dict[str, Any]]:
    schema = query.model_json_schema(schema_generator=RequestSchema)
    out = []
    for name, prop in schema.get("properties", {}).items():
        description = prop.pop("description", None)
        prop.pop("title", None)
        param: dict[str, Any] = {"name": name, "in": "query", "schema": prop}
        if description:
            param["description"] = description
        out.append(param)
    return out


# --- the document ----------------------------------------------------------------------------


RETRY_AFTER = {"Retry-After": {"description": "seconds to wait", "schema": {
    "type": "integer", "minimum": 1}}}
DATABASE_503 = ("the database cannot be reached right now (an outage, a failover): try again "
                "after Retry-After (docs/operations.md, PostgreSQL failover)")
IDEMPOTENCY_KEY = {"name": "Idempotency-Key", "in": "header", "required": False,
                   "description": "1 to 255 visible ASCII characters (a UUID, say): a retry "
                   "with the same key and body gets the first answer again (marked "
                   "Idempotent-Replayed: true) and creates nothing (docs/api.md)",
                   "schema": {"type": "string", "minLength": 1, "maxLength": 255,
                              "pattern": "^[\\x21-\\x7e]+$"}}


def _operation(op: Operation, view: Any, components: Components) -> dict[str, Any]:
    out: dict[str, Any] = {"summary": op.summary, "tags": [op.tag]}
    if op.description:
        out["description"] = op.description
    responses = {str(status): _content(kind, description, components)
                 for status, (kind, description) in op.answers.items()}
    errors: dict[int, str] = {}
    params: list[dict[str, Any]] = []
    if op.query is not None:
        params += _parameters(op.query, components)
        errors[400] = "a query parameter out of its bounds or not one of its values"
    if op.body is not None:
        out["requestBody"] = {"required": op.body_required, "content": {
            "application/json": {"schema": components.ref(op.body)}}}
        errors[400] = ("malformed request: not JSON, an unknown or missing field, a wrong "
                       "type, a value out of its bounds")
        errors[413] = "body larger than MAX_CONTENT_LENGTH"
        errors[415] = "body is not application/json (UTF-8)"
    if op.auth in ("owner", "admin"):
        out["security"] = [{"bearer": []}]
        errors[401] = "no token"
        errors[403] = "wrong token" + (" (or no ADMIN_TOKEN is set)" if op.auth == "admin"
                                       else "")
    elif op.auth == "optional":
        out["security"] = [{}, {"bearer": []}]
    if _mark(view, IDEMPOTENT_MARK):
        params.append(IDEMPOTENCY_KEY)
        errors.setdefault(400, "a malformed Idempotency-Key")
        errors[409] = "this Idempotency-Key's first request is still running (Retry-After)"
        errors[422] = "this Idempotency-Key was used with another body"
    errors.update(op.errors)
    # Every operation reads the database: 503 while it cannot be reached (an outage, a
    # failover; arena.web.errors.database_unavailable), besides a 503 of its own.
    errors[503] = f"{errors[503]}; or {DATABASE_503}" if 503 in errors else DATABASE_503
    error_ref = components.ref(Error)
    html = op.tag == PAGES  # a page's errors are pages too (its 429 is JSON, as every 429)
    for status, description in sorted(errors.items()):
        responses.setdefault(str(status), {"description": description, "content": (
            {HTML: {}} if html else {"application/json": {"schema": error_ref}}),
            **({"headers": RETRY_AFTER} if status == 503 else {})})
    if _mark(view, LIMITED_MARK):
        responses["429"] = {"description": "rate limited (docs/api.md, Rate limits)",
                            "headers": RETRY_AFTER,
                            "content": {"application/json": {"schema": error_ref}}}
    if params:
        out["parameters"] = params
    out["responses"] = dict(sorted(responses.items()))
    return out


def openapi_document() -> dict[str, Any]:
    """The document of the current app, as a dict (served as JSON; the API docs page
    renders it)."""
    app = current_app
    components = Components()
    components.ref(Error)
    paths: dict[str, Any] = {}
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        view = app.view_functions[rule.endpoint]
        op = _mark(view, OP_MARK)
        if op is None:
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        item = paths.setdefault(path, {})
        if rule.arguments:
            item["parameters"] = [{"name": a, "in": "path", "required": True,
                                   # A larger id is a 404: no row can have it.
                                   "schema": {"type": "integer", "minimum": 1,
                                              "maximum": MAX_ID}}
                                  for a in sorted(rule.arguments)]
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            item[method.lower()] = _operation(op, view, components)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Big Two Arena", "version": VERSION,
                 "description": "Submit Big Two bots and watch them play rated matches. "
                 "Errors are {\"error\": {\"code\", \"message\"}} (docs/api.md)."},
        "paths": paths,
        "components": {
            "schemas": dict(sorted(components.schemas.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "bot owner token or ADMIN_TOKEN"}},
        },
    }


__all__ = ["HTML", "Answer", "openapi_document", "operation", "page"]
