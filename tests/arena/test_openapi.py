"""The OpenAPI document matches the app: its routes both ways, its request schemas are what
the real endpoints refuse, and real answers validate against its response schemas."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from jsonschema import Draft202012Validator
from sqlalchemy import select

from arena.core.models import Match
from arena.core.storage import get_db
from arena.jobs import bodies as jobs

from .conftest import admin_headers, both_backends, submit

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


# --- the request schemas are the endpoints' -------------------------------------------------


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        _, _, kind, name = schema["$ref"].split("/")
        schema = doc["components"][kind][name]
    return schema


def sample(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A valid value of a property (the smallest allowed), for the required fields."""
    schema = resolve(doc, schema)
    if "enum" in schema:
        return schema["enum"][0]
    return {"integer": schema.get("minimum", 1), "boolean": True, "array": [],
            "object": {}, "string": "x" * max(1, schema.get("minLength", 1))}[schema["type"]]


WRONG = {"integer": "1", "boolean": "yes", "string": 5, "array": "1,2", "object": []}
"""A value of another JSON type, for each type."""


def invalid_bodies(doc: dict[str, Any], schema: dict[str, Any]) -> list[tuple[str, Any]]:
    """(what, body) pairs the schema refuses: an unknown field, a missing required one, each
    property of the wrong type, each bound overstepped."""
    schema = resolve(doc, schema)
    assert schema.get("additionalProperties") is False, schema.get("title")
    props: dict[str, Any] = schema.get("properties", {})
    valid = {k: sample(doc, props[k]) for k in schema.get("required", [])}
    out: list[tuple[str, Any]] = [("an unknown field", {**valid, "not_a_field": 1})]
    for key in schema.get("required", []):
        out.append((f"no {key}", {k: v for k, v in valid.items() if k != key}))
    for key, prop in props.items():
        prop = resolve(doc, prop)
        out.append((f"{key} of the wrong type", {**valid, key: WRONG[prop["type"]]}))
        if "maximum" in prop:
            out.append((f"{key} over its maximum", {**valid, key: prop["maximum"] + 1}))
        if "minimum" in prop:
            out.append((f"{key} under its minimum", {**valid, key: prop["minimum"] - 1}))
        if "maxLength" in prop:
            out.append((f"{key} too long", {**valid, key: "x" * (prop["maxLength"] + 1)}))
        if "enum" in prop:
            out.append((f"{key} not one of its values", {**valid, key: "not-a-value"}))
        if prop["type"] == "object" and prop.get("additionalProperties") is False:
            out.append((f"{key} with an unknown field", {**valid, key: {"not_a_field": 1}}))
    return out


def validator(doc: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` whose ``#/components/...`` references resolve in ``doc``."""
    return Draft202012Validator({**schema, "components": doc["components"]})


@both_backends
def test_every_documented_request_schema_is_what_its_endpoint_refuses(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    bot_id, _ = submit(client, "schema-probe", sample_bots["random"])
    doc = client.get("/api/openapi.json").get_json()
    ids = {"bot_id": bot_id, "match_id": 1, "tournament_id": 1, "token_id": 1, "webhook_id": 1,
           "challenge_id": 1}
    checked = 0
    for path, ops in doc["paths"].items():
        url = re.sub(r"{(\w+)}", lambda m: str(ids[m.group(1)]), path)
        for method, op in ops.items():
            if method == "parameters" or "requestBody" not in op:
                continue
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            for what, body in invalid_bodies(doc, schema):
                r = client.open(url, method=method.upper(), json=body, headers=admin_headers())
                where = f"{method.upper()} {path} with {what}: {r.status_code} {r.get_json()}"
                assert 400 <= r.status_code < 500, where
                assert str(r.status_code) in op["responses"], where
                error = resolve(doc, op["responses"][str(r.status_code)]["content"][
                    "application/json"]["schema"])
                validator(doc, error).validate(r.get_json())
                checked += 1
    assert checked > 60


@both_backends
def test_every_documented_query_parameter_is_what_its_endpoint_takes(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    """Each bound of a query parameter, just inside it (taken) and just outside (a 400),
    and each enum's values (taken) and another value (a 400)."""
    bot_id, _ = submit(client, "query-probe", sample_bots["random"])
    doc = client.get("/api/openapi.json").get_json()
    ids = {"bot_id": bot_id, "match_id": 1, "tournament_id": 1, "token_id": 1, "webhook_id": 1,
           "challenge_id": 1}
    checked = 0
    for path, ops in doc["paths"].items():
        url = re.sub(r"{(\w+)}", lambda m: str(ids[m.group(1)]), path)
        op = ops.get("get")
        if op is None or "/api/" not in path:
            continue
        for param in op.get("parameters", []):
            if param["in"] != "query":
                continue
            schema, name = param["schema"], param["name"]
            good = [schema[k] for k in ("minimum", "maximum", "default") if k in schema]
            good += schema.get("enum", [])
            bad: list[Any] = [schema["minimum"] - 1] if "minimum" in schema else []
            bad += [schema["maximum"] + 1] if "maximum" in schema else []
            bad += ["not-a-value"] if "enum" in schema else []
            bad += ["abc"] if schema.get("type") == "integer" else []
            for value, taken in [(v, True) for v in good] + [(v, False) for v in bad]:
                r = client.get(f"{url}?{name}={value}")
                where = f"GET {path}?{name}={value}: {r.status_code} {r.get_json()}"
                assert (r.status_code != 400) if taken else (r.status_code == 400), where
                checked += 1
    assert checked > 40


def test_bounds_in_the_document_are_the_apps_settings(app: Flask, client: FlaskClient) -> None:
    app.config["MATCH_MAX_DEALS"] = 7
    app.config["API_MAX_PAGE_LIMIT"] = 33
    doc = client.get("/api/openapi.json").get_json()
    assert doc["components"]["schemas"]["NewMatch"]["properties"]["deals"]["maximum"] == 7
    limit = [p for p in doc["paths"]["/api/bots"]["get"]["parameters"] if p["name"] == "limit"]
    assert limit[0]["schema"]["maximum"] == 33
    assert limit[0]["schema"]["default"] == app.config["API_PAGE_LIMIT"]
    r = client.post("/api/matches", json={"bots": [1, 2, 3, 4], "deals": 8},
                    headers=admin_headers())
    assert r.status_code == 400 and r.get_json()["error"] == {
        "code": "out_of_range", "message": "deals must be between 1 and 7"}
    assert client.get("/api/bots?limit=34").status_code == 400


def test_rate_limits_idempotency_and_accepted_checks_are_documented(
        client: FlaskClient) -> None:
    doc = client.get("/api/openapi.json").get_json()
    submit_bot = doc["paths"]["/api/bots"]["post"]
    assert "Retry-After" in submit_bot["responses"]["429"]["headers"]
    assert "Idempotency-Key" in [p["name"] for p in submit_bot["parameters"]]
    created = resolve(doc, submit_bot["responses"]["202"]["content"]["application/json"][
        "schema"])
    assert "check_url" in created["required"]
    # Every rate-limited route says so, and only those.
    limited = {("get", "/api/ratings"), ("post", "/api/matches"), ("get", "/leaderboard"),
               ("patch", "/api/bots/{bot_id}"), ("post", "/api/tournaments")}
    for method, path in limited:
        assert "429" in doc["paths"][path][method]["responses"], (method, path)
    assert "429" not in doc["paths"]["/api/matches/{match_id}"]["get"]["responses"]
    assert "Idempotency-Key" not in str(doc["paths"]["/api/bots"]["get"])


def test_every_operation_documents_the_503_of_a_database_outage(client: FlaskClient) -> None:
    doc = client.get("/api/openapi.json").get_json()
    operations = [(path, method, op) for path, item in doc["paths"].items()
                  for method, op in item.items() if method != "parameters"]
    assert len(operations) > 40
    for path, method, op in operations:
        answer = op["responses"].get("503")
        assert answer is not None, (method, path)
        if path not in ("/readyz",):  # its 503 is its own answer: a Readiness body
            assert "Retry-After" in answer["headers"], (method, path)


# --- real answers fit their documented schemas ----------------------------------------------


def check_answer(doc: dict[str, Any], client: FlaskClient, method: str, path: str,
                 url: str, status: int, **kw: Any) -> Any:
    r = client.open(url, method=method.upper(), **kw)
    assert r.status_code == status, (method, url, r.get_json())
    answer = doc["paths"][path][method]["responses"][str(status)]
    schema = answer["content"]["application/json"]["schema"]
    errors = sorted(validator(doc, schema).iter_errors(r.get_json()), key=str)
    assert not errors, (method, url, [f"{list(e.absolute_path)}: {e.message}" for e in errors])
    return r.get_json()


def test_answers_validate_against_their_documented_schemas(
    app: Flask, client: FlaskClient, four_bots: list[int], sample_bots: dict[str, str]
) -> None:
    doc = client.get("/api/openapi.json").get_json()
    admin = {"headers": admin_headers()}
    b = four_bots[0]

    def check(method: str, path: str, status: int = 200, **kw: Any) -> Any:
        url = path.format(bot_id=b, match_id=match_id, tournament_id=tid)
        return check_answer(doc, client, method, path, url, status, **kw)

    match_id = tid = 0
    check("post", "/api/bots", 202, json={"name": "fits", "url": sample_bots["greedy"] + "/fits"})
    match_id = check("post", "/api/matches", 202, json={"bots": four_bots, "deals": 1,
                                                        "seed": 5}, **admin)["id"]
    with app.app_context():
        jobs.play_match(match_id)
    with get_db(app).begin() as s:
        assert s.scalar(select(Match.state).where(Match.id == match_id)) == "finished"
    finished = check("get", "/api/matches/{match_id}")
    assert finished["standings"] and "rating_changes" in finished
    for path in ("/api/bots", "/api/bots/{bot_id}", "/api/bots/{bot_id}/versions",
                 "/api/bots/{bot_id}/health", "/api/bots/{bot_id}/check",
                 "/api/bots/{bot_id}/ratings", "/api/bots/{bot_id}/matches",
                 "/api/families", "/api/ratings", "/api/matches",
                 "/matches/{match_id}/replay.json", "/healthz", "/readyz"):
        check("get", path)
    check("get", "/api/bots/{bot_id}", **admin)  # with the private fields
    check("patch", "/api/bots/{bot_id}", json={"paused": True}, **admin)
    check("patch", "/api/bots/{bot_id}", json={"paused": False}, **admin)
    check("post", "/api/bots/{bot_id}/signing-secret", **admin)
    check("post", "/api/bots/{bot_id}/check", 202, **admin)
    check("post", "/api/ladder/rounds", 202, json={"max_matches": 1}, **admin)
    tid = check("post", "/api/tournaments", 201, json={
        "format": "round_robin", "bots": four_bots, "deals": 1, "start": True}, **admin)["id"]
    for path in ("/api/tournaments", "/api/tournaments/{tournament_id}",
                 "/api/tournaments/{tournament_id}/standings",
                 "/api/tournaments/{tournament_id}/bracket"):
        check("get", path)
    assert check("post", "/api/tournaments/{tournament_id}/advance", **admin)["report"]
    check("post", "/api/tournaments/{tournament_id}/cancel", **admin)
    # Errors too: the documented error answers are the Error schema.
    check_answer(doc, client, "get", "/api/bots/{bot_id}", "/api/bots/999999", 404)
    check("post", "/api/matches", 400, json={"bots": "all"}, **admin)


def test_the_document_is_built_once_per_process(client: FlaskClient,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Building it walks every route and schema (about 70 ms at every request before); the
    code cannot change while the process runs, so later requests get the stored bytes."""
    from arena.routes import docs

    first = client.get("/api/openapi.json")
    built: list[int] = []
    real = docs.openapi_document
    monkeypatch.setattr(docs, "openapi_document", lambda: built.append(1) or real())
    second = client.get("/api/openapi.json")
    assert built == []
    assert second.status_code == 200 and second.mimetype == "application/json"
    assert second.get_data() == first.get_data()
    assert second.get_json()["openapi"] == "3.1.0"


def test_requests_that_arrive_during_the_first_build_wait_for_it(
        app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sixteen first requests at once (a process just started) build the document once."""
    import threading

    from arena.routes import docs

    built: list[int] = []
    real = docs.openapi_document

    def slow_build() -> dict[str, Any]:
        built.append(1)
        doc = real()
        threading.Event().wait(0.2)  # a slow build: the others arrive meanwhile
        return doc

    monkeypatch.setattr(docs, "openapi_document", slow_build)
    bodies: list[bytes] = []

    def fetch() -> None:
        bodies.append(app.test_client().get("/api/openapi.json").get_data())

    threads = [threading.Thread(target=fetch) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(bodies) == 16 and len(set(bodies)) == 1
    assert built == [1]
