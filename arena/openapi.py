"""The OpenAPI 3.1 document of the service (served at ``/api/openapi.json``).

Written by hand next to the routes; ``tests/arena/test_openapi.py`` checks that every route
of the app is documented here with its methods, and that nothing here is missing from the app.
"""

from __future__ import annotations

from typing import Any

from referee import preset_names

VERSION = "1.0.0"



def ruleset_schema() -> dict[str, object]:
    """A rule-set name: a preset or alias, optionally with option changes
    (``standard+players=3,penalty.assist_penalty=true``, docs/rules.md)."""
    return {
        "type": "string",
        "maxLength": 64,
        "description": "a preset or alias, optionally followed by '+key=value,...' option "
        "changes (docs/rules.md, 'Naming a rule set in one string')",
        "examples": [*preset_names(), "standard+players=3,penalty.assist_penalty=true"],
    }

def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return {"$ref": "#/components/responses/Error", "description": description}


def _page_of(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["items", "page", "limit", "total", "next_page"],
        "properties": {
            "items": {"type": "array", "items": _ref(name)},
            "page": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "minimum": 1},
            "total": {"type": "integer", "minimum": 0},
            "next_page": {"type": ["integer", "null"]},
        },
    }


def _cursor_page_of(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["items", "limit", "next_cursor"],
        "properties": {
            "items": {"type": "array", "items": _ref(name)},
            "limit": {"type": "integer", "minimum": 1},
            "next_cursor": {"type": ["string", "null"],
                            "description": "pass back as ?cursor= for the next page; null "
                                           "on the last page"},
        },
    }


CURSOR_PAGING = [
    {"name": "cursor", "in": "query", "description": "opaque next_cursor of the previous "
     "page (keyset pagination: stable while rows are added)", "schema": {"type": "string"}},
    {"name": "limit", "in": "query", "description": "page size (at most API_MAX_PAGE_LIMIT)",
     "schema": {"type": "integer", "minimum": 1, "default": 50}},
]

PAGING = [
    {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1, "default": 1}},
    {"name": "limit", "in": "query", "description": "page size (at most API_MAX_PAGE_LIMIT)",
     "schema": {"type": "integer", "minimum": 1, "default": 50}},
]


def _id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True,
            "schema": {"type": "integer", "minimum": 1}}


BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
E400 = _error("malformed request (bad JSON, unknown or missing field, wrong type)")
E401 = _error("no token")
E403 = _error("wrong token")
E404 = _error("no such resource")
E413 = _error("body larger than MAX_CONTENT_LENGTH")
E415 = _error("body is not application/json")
E422 = _error("URL refused by the SSRF guard, or the bot failed its health check")


def openapi_document() -> dict[str, Any]:
    schemas: dict[str, Any] = {
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                               "health": _ref("Health")},
            }},
        },
        "Health": {
            "type": "object",
            "properties": {
                "ok": {"type": "boolean"}, "reason": {"type": "string"},
                "info": {"type": ["object", "null"]},
                "describe_ms": {"type": ["number", "null"]},
                "move_ms": {"type": ["number", "null"]},
            },
        },
        "Rating": {
            "type": "object",
            "properties": {"family": {"type": "string"}, "rating": {"type": "number"},
                           "games": {"type": "integer"}, "provisional": {"type": "boolean"}},
        },
        "Bot": {
            "type": "object",
            "required": ["id", "name", "version", "status"],
            "properties": {
                "id": {"type": "integer"},
                "name": {"type": "string"},
                "url": {"type": "string", "description": "only for the owner or the operator"},
                "version": {"type": "integer"},
                "status": {"enum": ["pending", "rejected", "active", "paused", "unhealthy",
                                    "deleted"]},
                "created_at": {"type": "string", "format": "date-time"},
                "updated_at": {"type": "string", "format": "date-time"},
                "info": {"type": "object"},
                "health": {"type": "object",
                           "description": "failures, last check, and pause_reason when the "
                                          "bot is unhealthy"},
                "check": {"oneOf": [_ref("Check"), {"type": "null"}],
                          "description": "the newest submission / URL-change / re-check "
                                         "check, with the URL to poll"},
                "pending_url": {"type": ["string", "null"],
                                "description": "a new URL being checked (owner only)"},
                "ratings": {"type": "array", "items": _ref("Rating")},
            },
        },
        "BotCreated": {
            "type": "object",
            "required": ["bot", "token", "signing_secret", "check_url"],
            "properties": {"bot": _ref("Bot"), "token": {"type": "string"},
                           "token_note": {"type": "string"},
                           "signing_secret": {"type": "string", "description":
                                              "the bot's request-signing secret, shown once"},
                           "signing_generation": {"type": "integer"},
                           "signing_note": {"type": "string"},
                           "check_url": {"type": "string"}},
        },
        "SigningSecret": {
            "type": "object",
            "required": ["bot_id", "signing_secret", "signing_generation"],
            "properties": {"bot_id": {"type": "integer"},
                           "signing_secret": {"type": "string", "description":
                                              "the new secret, shown only in this answer"},
                           "signing_generation": {"type": "integer"},
                           "signing_note": {"type": "string"}},
        },
        "BotChecking": {
            "type": "object",
            "required": ["bot", "check_url"],
            "properties": {"bot": _ref("Bot"), "check_url": {"type": "string"}},
        },
        "Check": {
            "type": "object",
            "required": ["id", "purpose", "state", "done"],
            "properties": {
                "id": {"type": "integer"},
                "purpose": {"enum": ["submit", "url_change", "recheck"]},
                "state": {"enum": ["queued", "running", "passed", "failed"]},
                "done": {"type": "boolean"},
                "reason": {"type": "string"},
                "describe_ms": {"type": ["number", "null"]},
                "move_ms": {"type": ["number", "null"]},
                "queued_at": {"type": "string"},
                "finished_at": {"type": ["string", "null"]},
                "bot_status": {"type": "string"},
                "pause_reason": {"type": "string"},
            },
        },
        "BotVersion": {
            "type": "object",
            "properties": {"version": {"type": "integer"}, "url": {"type": "string"},
                           "created_at": {"type": "string"}, "info": {"type": "object"}},
        },
        "HealthCheck": {
            "type": "object",
            "properties": {"at": {"type": "string"}, "ok": {"type": ["boolean", "null"]},
                           "state": {"enum": ["queued", "running", "passed", "failed"]},
                           "purpose": {"enum": ["submit", "url_change", "recheck", "sweep"]},
                           "reason": {"type": "string"},
                           "describe_ms": {"type": ["number", "null"]},
                           "move_ms": {"type": ["number", "null"]}},
        },
        "RatingEvent": {
            "type": "object",
            "properties": {
                "match_id": {"type": "integer"}, "family": {"type": "string"},
                "before": {"type": "number"}, "after": {"type": "number"},
                "delta": {"type": "number"}, "games": {"type": "integer"},
                "provisional": {"type": "boolean"}, "at": {"type": "string"},
            },
        },
        "LeaderboardEntry": {
            "type": "object",
            "properties": {"rank": {"type": "integer"}, "bot": {"type": "object"},
                           "family": {"type": "string"}, "rating": {"type": "number"},
                           "games": {"type": "integer"}, "provisional": {"type": "boolean"}},
        },
        "Seat": {
            "type": "object",
            "properties": {
                "seat": {"type": "integer"}, "bot": {"type": "object"},
                "bot_version": {"type": "integer"},
                "rank": {"type": ["integer", "null"]}, "score": {"type": ["integer", "null"]},
                "wins": {"type": ["integer", "null"]},
                "strikes": {"type": ["integer", "null"]},
                "forfeited": {"type": ["boolean", "null"]},
                "latency": {"type": "object", "properties": {
                    "calls": {"type": ["integer", "null"]},
                    "p50_ms": {"type": ["number", "null"]},
                    "p95_ms": {"type": ["number", "null"]},
                    "max_ms": {"type": ["number", "null"]}}},
            },
        },
        "Match": {
            "type": "object",
            "required": ["id", "state", "ruleset", "seats"],
            "properties": {
                "id": {"type": "integer"},
                "kind": {"enum": ["ladder", "admin", "tournament"]},
                "state": {"enum": ["queued", "running", "finished", "failed"]},
                "ruleset": ruleset_schema(),
                "family": {"type": "string"},
                "deals": {"type": "integer"},
                "rated": {"type": "boolean"},
                "seed": {"type": "integer"},
                "limits": {"type": "object"},
                "attempts": {"type": "integer"},
                "error": {"type": "string"},
                "seats": {"type": "array", "items": _ref("Seat")},
                "standings": {"type": "array", "items": _ref("Seat")},
                "strikes": {"type": "array", "items": {"type": "object"}},
                "forfeits": {"type": "array", "items": {"type": "object"}},
                "rating_changes": {"type": "array", "items": {"type": "object"}},
                "log_url": {"type": "string"},
            },
        },
        "NewMatch": {
            "type": "object",
            "required": ["bots"],
            "additionalProperties": False,
            "properties": {
                "bots": {"type": "array", "items": {"type": "integer"},
                         "description": "one bot id per seat, in seat order"},
                "ruleset": {**ruleset_schema(), "default": "standard"},
                "deals": {"type": "integer", "minimum": 1},
                "seed": {"type": "integer", "minimum": 0},
                "rated": {"type": "boolean", "default": True},
                "limits": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"deadline_ms": {"type": "integer"},
                                   "time_bank_ms": {"type": "integer"},
                                   "max_strikes": {"type": "integer"},
                                   "call_deadline_ms": {"type": "integer"}},
                },
            },
        },
    }
    paths: dict[str, Any] = {
        "/api/bots": {
            "post": {
                "summary": "Submit a bot: 202 at once with the owner token (shown once); a "
                           "worker runs the health check (poll check_url)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["name", "url"],
                    "additionalProperties": False,
                    "properties": {"name": {"type": "string", "maxLength": 40},
                                   "url": {"type": "string", "format": "uri"}}}}}},
                "responses": {"202": _json(_ref("BotCreated"), "stored, check queued"),
                              "400": E400,
                              "409": _error("name taken, or the URL's endpoint belongs to "
                                            "another live bot"),
                              "413": E413, "415": E415, "422": E422},
            },
            "get": {
                "summary": "List bots",
                "parameters": [*PAGING, {"name": "status", "in": "query", "schema": {
                    "enum": ["active", "paused", "pending", "rejected", "unhealthy"]}}],
                "responses": {"200": _json(_page_of("Bot"), "a page of bots"), "400": E400},
            },
        },
        "/api/bots/{bot_id}": {
            "parameters": [_id("bot_id")],
            "get": {"summary": "One bot (with its URL for the owner)", "security": [{}, *BEARER],
                    "responses": {"200": _json(_ref("Bot"), "the bot"), "404": E404}},
            "patch": {
                "summary": "Change the URL (checked by a job: 202; the bot plays on its old "
                           "URL until the new one passes) or pause/resume",
                "security": BEARER,
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "additionalProperties": False, "minProperties": 1,
                    "properties": {"url": {"type": "string"}, "paused": {"type": "boolean"}}}}}},
                "responses": {"200": _json(_ref("Bot"), "the changed bot"),
                              "202": _json(_ref("BotChecking"), "new URL reserved, check "
                                                                "queued"),
                              "400": E400, "401": E401, "403": E403, "404": E404,
                              "409": _error("the URL's endpoint belongs to another live bot"),
                              "413": E413, "415": E415, "422": E422},
            },
            "delete": {"summary": "Delete the bot (its matches and ratings history stay)",
                       "security": BEARER,
                       "responses": {"204": {"description": "deleted"}, "401": E401,
                                     "403": E403, "404": E404}},
        },
        "/api/bots/{bot_id}/signing-secret": {
            "parameters": [_id("bot_id")],
            "post": {"summary": "Rotate the bot's request-signing secret (shown once; matches "
                                "that start from now on use it)",
                     "security": BEARER,
                     "responses": {"200": _json(_ref("SigningSecret"), "the new secret"),
                                   "400": E400, "401": E401, "403": E403, "404": E404}},
        },
        "/api/bots/{bot_id}/versions": {
            "parameters": [_id("bot_id")],
            "get": {"summary": "Every URL the bot has had (URLs for the owner only)",
                    "parameters": PAGING,
                    "responses": {"200": _json(_page_of("BotVersion"), "versions"),
                                  "400": E400, "404": E404}},
        },
        "/api/bots/{bot_id}/check": {
            "parameters": [_id("bot_id")],
            "get": {"summary": "The bot's newest submission / URL-change / re-check check: "
                               "poll until done",
                    "responses": {"200": _json(_ref("Check"), "the check"), "404": E404}},
            "post": {"summary": "Ask for a health check now (owner): 202, poll check_url",
                     "security": BEARER,
                     "responses": {"202": _json(_ref("BotChecking"), "check queued"),
                                   "401": E401, "403": E403, "404": E404}},
        },
        "/api/bots/{bot_id}/health": {
            "parameters": [_id("bot_id")],
            "get": {"summary": "Health checks of the bot, newest first",
                    "parameters": CURSOR_PAGING,
                    "responses": {"200": _json(_cursor_page_of("HealthCheck"), "checks"),
                                  "400": E400, "404": E404}},
        },
        "/api/bots/{bot_id}/ratings": {
            "parameters": [_id("bot_id")],
            "get": {"summary": "Rating history of the bot, oldest first",
                    "parameters": [*CURSOR_PAGING, {"name": "family", "in": "query",
                                                    "schema": {"type": "string"}}],
                    "responses": {"200": _json(_cursor_page_of("RatingEvent"),
                                               "rating changes"),
                                  "400": E400, "404": E404}},
        },
        "/api/bots/{bot_id}/matches": {
            "parameters": [_id("bot_id")],
            "get": {"summary": "Matches the bot sat in, newest first",
                    "parameters": CURSOR_PAGING,
                    "responses": {"200": _json(_cursor_page_of("Match"), "matches"),
                                  "400": E400,
                                  "404": E404}},
        },
        "/api/families": {
            "get": {"summary": "Rating families and the presets in each",
                    "responses": {"200": _json({"type": "object"}, "families")}},
        },
        "/api/ratings": {
            "get": {
                "summary": "Leaderboard of one rating family",
                "parameters": [*PAGING, {"name": "family", "in": "query",
                                         "schema": {"type": "string", "default": "classic"}}],
                "responses": {"200": _json(_page_of("LeaderboardEntry"), "leaderboard"),
                              "400": E400},
            },
        },
        "/api/matches": {
            "get": {
                "summary": "List matches, newest first",
                "parameters": [*CURSOR_PAGING,
                               {"name": "state", "in": "query", "schema": {
                                   "enum": ["queued", "running", "finished", "failed"]}},
                               {"name": "bot", "in": "query", "schema": {"type": "integer"}}],
                "responses": {"200": _json(_cursor_page_of("Match"), "matches"),
                              "400": E400},
            },
            "post": {
                "summary": "Create a match (operator); it is queued and played by a worker",
                "security": BEARER,
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": _ref("NewMatch")}}},
                "responses": {"202": _json(_ref("Match"), "queued"), "400": E400, "401": E401,
                              "403": E403, "404": E404, "413": E413, "415": E415},
            },
        },
        "/api/matches/{match_id}": {
            "parameters": [_id("match_id")],
            "get": {"summary": "A match: state, standings, per-seat latency and strikes",
                    "responses": {"200": _json(_ref("Match"), "the match"), "404": E404}},
        },
        "/api/matches/{match_id}/log": {
            "parameters": [_id("match_id")],
            "get": {
                "summary": "Download the match log (v2: seats named by bot id, no URLs), "
                           "JSON or JSON Lines",
                "parameters": [{"name": "format", "in": "query",
                                "schema": {"enum": ["json", "jsonl"], "default": "json"}}],
                "responses": {
                    "200": {"description": "the log", "content": {
                        "application/json": {"schema": {"type": "object"}},
                        "application/x-ndjson": {"schema": {"type": "string"}}}},
                    "400": E400, "404": E404, "409": _error("the match has not finished"),
                },
            },
        },
        "/api/ladder/rounds": {
            "post": {
                "summary": "Run one matchmaking round now (operator)",
                "security": BEARER,
                "requestBody": {"required": False, "content": {"application/json": {"schema": {
                    "type": "object", "additionalProperties": False,
                    "properties": {"max_matches": {"type": "integer", "minimum": 1}}}}}},
                "responses": {"202": _json({"type": "object", "properties": {
                    "matches": {"type": "array", "items": {"type": "integer"}}}},
                    "matches created"), "400": E400, "401": E401, "403": E403},
            },
        },
        "/api/openapi.json": {
            "get": {"summary": "This document",
                    "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1")}},
        },
        "/healthz": {
            "get": {"summary": "Liveness: the process answers",
                    "responses": {"200": _json({"type": "object"}, "alive")}},
        },
        "/readyz": {
            "get": {"summary": "Readiness: the database and Redis are reachable",
                    "responses": {"200": _json({"type": "object"}, "ready"),
                                  "503": _json({"type": "object"}, "not ready")}},
        },
        "/": {
            "get": {"summary": "Home page (HTML)",
                    "responses": {"200": {"description": "HTML",
                                          "content": {"text/html": {}}}}},
        },
    }
    from .tournaments.openapi import extend

    extend(paths, schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Big Two Arena", "version": VERSION,
                 "description": "Submit Big Two bots and watch them play rated matches. "
                 "Errors are {\"error\": {\"code\", \"message\"}}."},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": {"Error": _json(_ref("Error"), "an error")},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "bot owner token or ADMIN_TOKEN"}},
        },
    }
