"""OpenAPI paths and schemas of the tournament API and of the web pages.

:func:`extend` adds them to the service's document (:func:`arena.openapi.openapi_document`),
so ``tests/arena/test_openapi.py`` sees every route documented.
"""

from __future__ import annotations

from typing import Any

from ..openapi import ruleset_schema
from .models import FORMATS


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return {"$ref": "#/components/responses/Error", "description": description}


def _html(summary: str, *, params: list[dict[str, Any]] | None = None,
          extra: dict[str, Any] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "tags": ["web pages"],
                          "responses": {"200": {"description": "HTML",
                                                "content": {"text/html": {}}},
                                        "404": {"description": "no such thing (HTML)"}}}
    if params:
        op["parameters"] = params
    if extra:
        op["responses"].update(extra)
    return op


def _id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True,
            "schema": {"type": "integer", "minimum": 1}}


BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
E400 = _error("malformed request (bad JSON, unknown or missing field, wrong type, a "
              "tournament that cannot be made: too few entrants, bad advance count...)")
E401 = _error("no token")
E403 = _error("wrong token")
E404 = _error("no such tournament (or bot)")
E409 = _error("the tournament is not in a state that allows this")
PAGING = [
    {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1, "default": 1}},
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}},
]

SCHEMAS: dict[str, Any] = {
    "NewTournament": {
        "type": "object",
        "required": ["format", "bots"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "maxLength": 80},
            "format": {"enum": list(FORMATS)},
            "ruleset": {**ruleset_schema(), "default": "standard",
                        "description": "a preset or alias, optionally with '+key=value,...' "
                        "option changes (docs/rules.md); a 2-player rule set makes a "
                        "heads-up bracket"},
            "bots": {"type": "array", "items": {"type": "integer"},
                     "description": "entrants (bot ids)"},
            "deals": {"type": "integer", "minimum": 1, "description": "deals per match"},
            "limits": {"type": "object", "description": "time limits, as for a match",
                       "properties": {"deadline_ms": {"type": "integer"},
                                      "time_bank_ms": {"type": "integer"},
                                      "max_strikes": {"type": "integer"},
                                      "call_deadline_ms": {"type": "integer"}}},
            "duplicate": {"type": "boolean", "default": False,
                          "description": "replay every table's deals once per rotation of "
                                         "the seats and score against the same cards"},
            "advance": {"type": "integer", "minimum": 1,
                        "description": "knockout: players per table who go through "
                                       "(default: half the seats, 2 of 4, 1 heads-up)"},
            "rounds": {"type": "integer", "minimum": 1,
                       "description": "Swiss: rounds (default ceil(log_seats n) + 1); round "
                                      "robin: a fixed number instead of 'until all met'"},
            "cycles": {"type": "integer", "minimum": 1, "default": 1,
                       "description": "round robin: times every pair meets"},
            "rated": {"type": "boolean", "default": True},
            "seed": {"type": "integer", "minimum": 0},
            "start": {"type": "boolean", "default": False,
                      "description": "start at once (seeding, first round)"},
        },
    },
    "Tournament": {
        "type": "object",
        "required": ["id", "name", "format", "state", "entrants"],
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "format": {"enum": list(FORMATS)},
            "state": {"enum": ["created", "running", "finished", "cancelled"]},
            "ruleset": {"type": "string"},
            "family": {"type": "string"},
            "seats": {"type": "integer"},
            "deals": {"type": "integer"},
            "duplicate": {"type": "boolean"},
            "advance": {"type": ["integer", "null"]},
            "rounds": {"type": ["integer", "null"]},
            "cycles": {"type": ["integer", "null"]},
            "rated": {"type": "boolean"},
            "seed": {"type": "integer"},
            "limits": {"type": "object"},
            "current_round": {"type": "integer"},
            "version": {"type": "integer"},
            "progress": {"type": "object", "properties": {
                k: {"type": "integer"} for k in ("queued", "running", "finished", "failed")}},
            "entrants": {"type": "array", "items": {"type": "object", "properties": {
                "bot": {"type": "object"}, "seed": {"type": ["integer", "null"]},
                "rating": {"type": ["number", "null"]}}}},
            "report": {"type": "object", "description": "what an operator step did"},
        },
    },
    "TournamentStandings": {
        "type": "object",
        "properties": {
            "tournament": {"type": "integer"},
            "final": {"type": "boolean"},
            "order": {"type": "array", "items": {"type": "string"},
                      "description": "the sort keys, tie-breaks in order"},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "rank": {"type": "integer"}, "bot": {"type": "object"},
                "seed": {"type": "integer"}, "points": {"type": "number"},
                "score": {"type": "number"}, "buchholz": {"type": "number"},
                "wins": {"type": "integer"}, "strikes": {"type": "integer"},
                "tables": {"type": "integer"}, "byes": {"type": "integer"},
                "firsts": {"type": "integer"}}}},
        },
    },
    "Bracket": {
        "type": "object",
        "properties": {
            "tournament": {"type": "integer"},
            "current_round": {"type": "integer"},
            "rounds_planned": {"type": ["integer", "null"]},
            "round_sizes": {"type": ["array", "null"], "items": {"type": "integer"}},
            "rounds": {"type": "array", "items": {"type": "object", "properties": {
                "number": {"type": "integer"},
                "state": {"enum": ["pending", "playing", "done"]},
                "byes": {"type": "array"}, "target": {"type": ["integer", "null"]},
                "advanced": {"type": ["array", "null"]},
                "tables": {"type": "array", "items": {"type": "object", "properties": {
                    "number": {"type": "integer"}, "state": {"type": "string"},
                    "seats": {"type": "array"}, "matches": {"type": "array"},
                    "result": {"type": ["array", "null"]}}}}}}},
        },
    },
}


def extend(paths: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Add the tournament API and the web pages to an OpenAPI document in the making."""
    schemas.update(SCHEMAS)
    tid = [_id("tournament_id")]
    step = {"security": BEARER,
            "responses": {"200": _json(_ref("Tournament"), "the tournament, with a report"),
                          "400": E400, "401": E401, "403": E403, "404": E404,
                          "409": E409}}
    paths.update({
        "/api/tournaments": {
            "post": {
                "summary": "Create a tournament (operator): format, rule set, deals per "
                           "match, limits, entrants; optionally start it",
                "security": BEARER,
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": _ref("NewTournament")}}},
                "responses": {"201": _json(_ref("Tournament"), "created"), "400": E400,
                              "401": E401, "403": E403, "404": E404,
                              "413": _error("body too large"),
                              "415": _error("not JSON")},
            },
            "get": {
                "summary": "List tournaments, newest first",
                "parameters": [*PAGING, {"name": "state", "in": "query", "schema": {
                    "enum": ["created", "running", "finished", "cancelled"]}}],
                "responses": {"200": _json({"type": "object"}, "a page of tournaments"),
                              "400": E400},
            },
        },
        "/api/tournaments/{tournament_id}": {
            "parameters": tid,
            "get": {"summary": "A tournament: settings, entrants and seeds, progress",
                    "responses": {"200": _json(_ref("Tournament"), "the tournament"),
                                  "404": E404}},
        },
        "/api/tournaments/{tournament_id}/start": {
            "parameters": tid,
            "post": {"summary": "Start (operator): seed by Elo, schedule, open round 1",
                     **step},
        },
        "/api/tournaments/{tournament_id}/advance": {
            "parameters": tid,
            "post": {"summary": "Run the idempotent advance step now (operator; the "
                                "workers and the clock run it anyway)", **step},
        },
        "/api/tournaments/{tournament_id}/cancel": {
            "parameters": tid,
            "post": {"summary": "Cancel (operator); matches already queued still play",
                     **step},
        },
        "/api/tournaments/{tournament_id}/standings": {
            "parameters": tid,
            "get": {"summary": "Standings with every tie-break key",
                    "responses": {"200": _json(_ref("TournamentStandings"), "standings"),
                                  "404": E404}},
        },
        "/api/tournaments/{tournament_id}/bracket": {
            "parameters": tid,
            "get": {"summary": "Rounds, tables, seats, matches, results and advancers",
                    "responses": {"200": _json(_ref("Bracket"), "the bracket"),
                                  "404": E404}},
        },
        "/api/tournaments/{tournament_id}/archive": {
            "parameters": tid,
            "get": {"summary": "Every match log of the tournament in one zip, with the "
                               "standings as CSV and JSON and the bracket",
                    "responses": {"200": {"description": "zip", "content": {
                        "application/zip": {"schema": {"type": "string",
                                                       "format": "binary"}}}},
                        "404": E404}},
        },
        # --- web pages (HTML) ----------------------------------------------------------
        "/bots/new": {
            "get": _html("Form to submit a bot"),
            "post": _html("Submit a bot (form, CSRF token): shows the owner token once and "
                          "follows the health check a worker runs",
                          extra={"400": {"description": "the form again, with the errors"}}),
        },
        "/bots/{bot_id}": {
            "parameters": [_id("bot_id")],
            "get": _html("A bot: rating history chart, recent matches, latency, strikes"),
        },
        "/bots/{bot_id}/signing-secret": {
            "parameters": [_id("bot_id")],
            "post": _html("Rotate the bot's signing secret (form: owner token, CSRF token): "
                          "shows the new secret once",
                          extra={"403": {"description": "the bot page, with the error"}}),
        },
        "/leaderboard": {
            "get": _html("Leaderboard with a rating-history chart",
                         params=[{"name": "family", "in": "query",
                                  "schema": {"type": "string", "default": "classic"}}]),
        },
        "/matches/{match_id}": {
            "parameters": [_id("match_id")],
            "get": _html("A match: results and a turn-by-turn replay viewer"),
        },
        "/matches/{match_id}/replay.json": {
            "parameters": [_id("match_id")],
            "get": {"summary": "The replay frames of a finished match (hands, plays, "
                               "latency, faults, scores after every turn)",
                    "tags": ["web pages"],
                    "responses": {"200": _json({"type": "object"}, "replay"),
                                  "404": E404, "409": _error("not finished yet")}},
        },
        "/tournaments": {
            "get": _html("Tournaments"),
        },
        "/tournaments/new": {
            "get": _html("Form to create and start a tournament (operator token)"),
            "post": _html("Create a tournament (form, CSRF token, operator token)",
                          extra={"302": {"description": "to the new tournament"},
                                 "400": {"description": "the form again, with the errors"}}),
        },
        "/tournaments/{tournament_id}": {
            "parameters": tid,
            "get": _html("A tournament: bracket picture or standings, updating live"),
        },
        "/tournaments/{tournament_id}/live": {
            "parameters": tid,
            "get": _html("The live part of the tournament page (HTML fragment; ETag, "
                         "answers 304 while nothing changed)",
                         extra={"304": {"description": "unchanged"}}),
        },
    })
