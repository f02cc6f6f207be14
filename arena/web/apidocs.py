"""The API's reference as a web page (``/docs/api``), rendered on the server from the OpenAPI
document (:func:`arena.web.openapi.openapi_document`): one source for the machine-readable JSON
and the page people read, so they cannot disagree.  No JavaScript and nothing from a CDN: a
table of contents, then every endpoint with its parameters, request body, responses (each
schema as a table of fields, with an example built from the schema), then every named schema.

The functions here only reshape the document's dicts into rows for the template
(``templates/api_docs.html``); Jinja escapes every text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")
MAX_DEPTH = 4
"""How deep nested objects are unfolded into field rows and examples (deeper: by name)."""

TEXT_EXAMPLES = {"url": "https://bot.example/", "pending_url": "https://bot.example/v2",
                 "name": "my-bot", "ruleset": "standard", "family": "classic",
                 "token": "<owner token>", "signing_secret": "<secret>",
                 "reason": "POST /move: the answer names no move", "message": "what to change",
                 "code": "bad_request"}
"""Examples for text fields the schemas leave without one, by field name."""

GROUPS = [
    ("Bots", ("/api/bots",)),
    ("Matches", ("/api/matches",)),
    ("Ratings", ("/api/ratings", "/api/families")),
    ("Tournaments", ("/api/tournaments",)),
    ("Operator", ("/api/ladder",)),
    ("Service", ("/api/openapi.json", "/healthz", "/readyz")),
]
"""Sections of the page by path prefix, in order; every other path is a web page."""


@dataclass
class FieldRow:
    name: str
    depth: int
    type: str
    required: bool
    description: str
    ref: str | None = None


@dataclass
class Body:
    media: str
    type: str
    ref: str | None
    fields: list[FieldRow]
    example: str | None


@dataclass
class Response:
    status: str
    description: str
    bodies: list[Body]


@dataclass
class Param:
    name: str
    where: str
    required: bool
    type: str
    description: str


@dataclass
class Operation:
    method: str
    path: str
    anchor: str
    summary: str
    auth: str
    params: list[Param]
    request: list[Body]
    responses: list[Response]


@dataclass
class Group:
    title: str
    anchor: str
    operations: list[Operation] = field(default_factory=list)


class Reader:
    """Reads one OpenAPI document: resolves ``$ref``s, names types, builds examples."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.components = doc.get("components", {})

    # --- references ------------------------------------------------------------------------

    def resolve(self, node: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The node a ``$ref`` points to (and the schema's name), or the node itself; the
        referring node's own ``description`` wins over the target's."""
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return node, None
        _, _, kind, name = ref.split("/", 3)
        target = self.components.get(kind, {}).get(name, {})
        if "description" in node:
            target = {**target, "description": node["description"]}
        return target, name if kind == "schemas" else None

    # --- types -----------------------------------------------------------------------------

    def type_text(self, schema: dict[str, Any]) -> tuple[str, str | None]:
        """A short type for people (``integer ≥ 1``, ``array of Bot``, ``one of: a, b``,
        ``string or null``) and the named schema it refers to, if any."""
        if "$ref" in schema:
            _, name = self.resolve(schema)
            return (name or "object"), name
        if "enum" in schema:
            return "one of: " + ", ".join(json.dumps(v) for v in schema["enum"]), None
        for key in ("oneOf", "anyOf"):
            if key in schema:
                parts = [self.type_text(s) for s in schema[key]]
                ref = next((r for _, r in parts if r), None)
                return " or ".join(t for t, _ in parts), ref
        kind = schema.get("type", "any")
        if isinstance(kind, list):
            text = " or ".join(str(k) for k in kind)
        elif kind == "array":
            inner, ref = self.type_text(schema.get("items", {}))
            return f"array of {inner}", ref
        else:
            text = str(kind)
        if "format" in schema:
            text += f" ({schema['format']})"
        bounds = [f"≥ {schema['minimum']}" if "minimum" in schema else "",
                  f"≤ {schema['maximum']}" if "maximum" in schema else "",
                  f"at most {schema['maxLength']} characters" if "maxLength" in schema
                  else ""]
        extra = ", ".join(b for b in bounds if b)
        if "default" in schema:
            extra = (extra + ", " if extra else "") + f"default {json.dumps(schema['default'])}"
        return (f"{text}, {extra}" if extra else text), None

    # --- fields ----------------------------------------------------------------------------

    def fields(self, schema: dict[str, Any], depth: int = 0, prefix: str = "",
               seen: frozenset[str] = frozenset()) -> list[FieldRow]:
        """The rows of an object schema's fields, nested objects unfolded (``a.b``, array
        items as ``a[].b``) down to :data:`MAX_DEPTH`; a named schema is unfolded once per
        branch (a schema that contains itself stops at its name)."""
        schema, name = self.resolve(schema)
        if name in seen:
            return []
        seen = seen | {name} if name else seen
        if schema.get("type") == "array" or "items" in schema:
            return self.fields(schema.get("items", {}), depth, prefix + "[]", seen)
        props = schema.get("properties")
        if not isinstance(props, dict) or depth >= MAX_DEPTH:
            return []
        required = set(schema.get("required", []))
        rows: list[FieldRow] = []
        for key, sub in props.items():
            target, sub_name = self.resolve(sub)
            kind, ref = self.type_text(sub)
            rows.append(FieldRow(prefix + key, depth, kind, key in required,
                                 str(target.get("description", "")), ref))
            if sub_name is None:  # named schemas have their own table (linked by ref)
                rows += self.fields(target, depth + 1, prefix + key + ".", seen)
        return rows

    # --- examples --------------------------------------------------------------------------

    def example(self, schema: dict[str, Any], depth: int = 0,
                seen: frozenset[str] = frozenset(), key: str = "") -> Any:
        """A value the schema accepts, from its own ``example``/``examples``/``default``/
        ``enum`` where it has them, else a placeholder of its type (for a text field named
        in :data:`TEXT_EXAMPLES`, a value that reads like the real thing)."""
        schema, name = self.resolve(schema)
        if name in seen or depth > MAX_DEPTH + 2:
            return {}
        seen = seen | {name} if name else seen
        for given in ("example", "default"):
            if given in schema:
                return schema[given]
        if schema.get("examples"):
            return schema["examples"][0]
        if schema.get("enum"):
            return schema["enum"][0]
        for union in ("oneOf", "anyOf"):
            if schema.get(union):
                options = [o for o in schema[union] if o.get("type") != "null"] or \
                    schema[union]
                return self.example(options[0], depth + 1, seen, key)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            return {k: self.example(v, depth + 1, seen, k) for k, v in props.items()}
        if kind == "array":
            return [self.example(schema.get("items", {}), depth + 1, seen)]
        if kind == "integer":
            return int(schema.get("minimum", 1))
        if kind == "number":
            return 1.5
        if kind == "boolean":
            return True
        if kind == "string":
            return {"date-time": "2026-12-01T12:00:00Z", "uri": "https://bot.example/",
                    "binary": "<binary>"}.get(str(schema.get("format")),
                                              TEXT_EXAMPLES.get(key, "text"))
        if kind == "null":
            return None
        return {}

    # --- operations ------------------------------------------------------------------------

    def bodies(self, content: dict[str, Any]) -> list[Body]:
        out = []
        for media, spec in content.items():
            schema = spec.get("schema") if isinstance(spec, dict) else None
            if not schema:
                out.append(Body(media, "", None, [], None))
                continue
            kind, ref = self.type_text(schema)
            example = None
            if media.endswith("json"):
                example = json.dumps(self.example(schema), indent=2, ensure_ascii=False)
            out.append(Body(media, kind, ref, self.fields(schema), example))
        return out

    def operation(self, path: str, method: str, op: dict[str, Any],
                  shared: list[dict[str, Any]]) -> Operation:
        params = []
        for p in [*shared, *op.get("parameters", [])]:
            p, _ = self.resolve(p)
            kind, _ = self.type_text(p.get("schema", {}))
            params.append(Param(str(p["name"]), str(p["in"]), bool(p.get("required")), kind,
                                str(p.get("description", ""))))
        request = []
        if "requestBody" in op:
            body, _ = self.resolve(op["requestBody"])
            request = self.bodies(body.get("content", {}))
        responses = []
        for status, resp in op.get("responses", {}).items():
            target, _ = self.resolve(resp)
            responses.append(Response(str(status), str(target.get("description", "")),
                                      self.bodies(target.get("content", {}))))
        security = op.get("security")
        if security is None:
            auth = ""
        elif {} in security:
            auth = "optional: Authorization: Bearer <owner token or ADMIN_TOKEN>"
        else:
            auth = "Authorization: Bearer <owner token or ADMIN_TOKEN>"
        anchor = f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", "")
        return Operation(method.upper(), path, anchor.replace("--", "-").strip("-"),
                         str(op.get("summary", "")), auth, params, request, responses)

    def groups(self) -> list[Group]:
        groups = [Group(title, "g-" + title.lower()) for title, _ in GROUPS]
        pages = Group("Web pages", "g-web-pages")
        for path, item in self.doc.get("paths", {}).items():
            shared = item.get("parameters", [])
            for method in METHODS:
                if method not in item:
                    continue
                op = self.operation(path, method, item[method], shared)
                for g, (_, prefixes) in zip(groups, GROUPS, strict=True):
                    if path.startswith(prefixes):
                        g.operations.append(op)
                        break
                else:
                    pages.operations.append(op)
        return [g for g in [*groups, pages] if g.operations]

    def schemas(self) -> list[tuple[str, str, list[FieldRow], str]]:
        """Every named schema: name, description, field rows, example."""
        out = []
        for name, schema in self.components.get("schemas", {}).items():
            rows = self.fields({"$ref": f"#/components/schemas/{name}"})
            example = json.dumps(self.example(schema), indent=2, ensure_ascii=False)
            out.append((name, str(schema.get("description", "")), rows, example))
        return out


def page_context(doc: dict[str, Any]) -> dict[str, Any]:
    """What ``api_docs.html`` draws from the document."""
    reader = Reader(doc)
    info = doc.get("info", {})
    return {"info": info, "version": doc.get("openapi", ""), "groups": reader.groups(),
            "schemas": reader.schemas(),
            "security": doc.get("components", {}).get("securitySchemes", {})}
