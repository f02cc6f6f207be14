"""The OpenAPI document matches the app's routes, both ways."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient

IGNORED = {"static"}


def app_routes(app: Flask) -> dict[str, set[str]]:
    routes: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        if rule.endpoint in IGNORED:
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        methods = {m.lower() for m in rule.methods or ()} - {"head", "options"}
        routes.setdefault(path, set()).update(methods)
    return routes


def test_every_route_is_documented_and_every_documented_route_exists(
    app: Flask, client: FlaskClient
) -> None:
    doc = client.get("/api/openapi.json").get_json()
    assert doc["openapi"].startswith("3.1")
    documented = {
        path: {m for m in ops if m in {"get", "post", "put", "patch", "delete"}}
        for path, ops in doc["paths"].items()
    }
    assert app_routes(app) == documented


def test_every_operation_documents_its_responses_and_path_parameters(
    client: FlaskClient,
) -> None:
    doc = client.get("/api/openapi.json").get_json()
    for path, ops in doc["paths"].items():
        params = {p["name"] for p in ops.get("parameters", []) if p["in"] == "path"}
        assert params == set(re.findall(r"{(\w+)}", path)), path
        for method, op in ops.items():
            if method == "parameters":
                continue
            assert op["summary"] and op["responses"], (path, method)


def test_refs_resolve(client: FlaskClient) -> None:
    doc = client.get("/api/openapi.json").get_json()
    text = str(doc)
    for ref in set(re.findall(r"#/components/(\w+)/(\w+)", text)):
        assert ref[1] in doc["components"][ref[0]], ref


def test_health_endpoints(client: FlaskClient) -> None:
    assert client.get("/healthz").get_json() == {"status": "ok"}
    r = client.get("/readyz")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["checks"] == {"database": "ok", "redis": "ok"}
    assert b"Big Two Arena" in client.get("/").data


def test_readyz_reports_a_dead_redis(app: Flask, client: FlaskClient) -> None:
    app.config["REDIS_URL"] = "redis://127.0.0.1:1/0"
    r = client.get("/readyz")
    assert r.status_code == 503
    body = r.get_json()
    assert body["checks"]["database"] == "ok" and body["checks"]["redis"] != "ok"
