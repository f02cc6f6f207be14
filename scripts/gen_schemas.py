# ruff: noqa: E501 - long description strings read better unbroken
"""Generate the protocol and log JSON Schemas in ``referee/schemas/`` (draft 2020-12).

The rule-set options schema is built from the option metadata in ``referee/game/rules.py``, so a new
option shows up in every schema that carries ``rules``.  ``tests/referee/wire/test_protocol.py``
checks that the committed files equal what this script builds.

Usage: ``python scripts/gen_schemas.py`` (rewrites the files).
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import referee.game.rules as rules_module
from referee.game.rules import option_fields

OUT = Path(__file__).resolve().parent.parent / "referee" / "schemas"
D = "https://json-schema.org/draft/2020-12/schema"
BASE = "https://bigtwo-arena.invalid/schemas/"
CARD = {
    "type": "string",
    "pattern": "^[3-9TJQKA2][DCHS]$",
    "description": 'A card: rank 3 4 5 6 7 8 9 T J Q K A 2, then suit D C H S ("3D", "TS", "2S").',
}
CARDS = {"type": "array", "items": {"$ref": "#/$defs/card"}, "uniqueItems": True}
MOVE_ID = {
    "type": "string",
    "pattern": "^(pass|[3-9TJQKA2][DCHS](-[3-9TJQKA2][DCHS])*)$",
    "description": 'Stable move id: card texts in card order joined by \'-\' ("3D-3S"), or "pass".',
}
SEAT = {"type": "integer", "minimum": 0, "maximum": 3}
NN = {"type": "integer", "minimum": 0}


def enum_of(tp):
    return [m.value for m in tp]


def option_schema():
    props = {}
    for f in option_fields():
        t = f.type if isinstance(f.type, str) else str(f.type)
        doc = f.metadata["doc"]
        d = {"description": doc}
        cls = getattr(rules_module, t.split("[")[0].split(" ")[0], None)
        if t == "int":
            d["type"] = "integer"
        elif t == "int | None":
            d["type"] = ["integer", "null"]
        elif t == "bool":
            d["type"] = "boolean"
        elif t == "str":
            d["type"] = "string"
        elif t == "str | None":
            d["type"] = ["string", "null"]
        elif t.startswith(("tuple[", "frozenset[")):
            inner = t[t.index("[") + 1 : t.index("]")].split(",")[0].strip()
            ic = getattr(rules_module, inner, None)
            d["type"] = "array"
            if ic is not None and isinstance(ic, type) and issubclass(ic, enum.Enum):
                d["items"] = {"enum": enum_of(ic)}
            elif inner == "int":
                d["items"] = {"type": "integer"}
        elif cls is not None and isinstance(cls, type) and issubclass(cls, enum.Enum):
            d["enum"] = enum_of(cls)
        elif t == "PenaltySchedule":
            d["type"] = "object"
        else:
            raise SystemExit(f"unknown type {t} for {f.name}")
        props[f.name] = d
    return {
        "type": "object",
        "required": ["players"],
        "properties": props,
        "description": "Every option of the rule set in force (docs/rules.md explains each). "
        "Open: a new house-rule option is added here without a protocol version change.",
    }


RULES = {
    "type": "object",
    "required": ["name", "options"],
    "additionalProperties": False,
    "properties": {
        "name": {
            "type": "string",
            "description": 'Rule set name, e.g. "standard", "house-003+players=3".',
        },
        "options": {"$ref": "#/$defs/options"},
    },
}
TURN = {
    "anyOf": [
        {
            "type": "object",
            "required": ["seat", "pass"],
            "properties": {"seat": {"$ref": "#/$defs/seat"}, "pass": {"const": True}},
        },
        {
            "type": "object",
            "required": ["seat", "cards"],
            "properties": {
                "seat": {"$ref": "#/$defs/seat"},
                "cards": {"$ref": "#/$defs/cards"},
            },
        },
        {
            "type": "object",
            "required": ["seat", "decision"],
            "properties": {
                "seat": {"$ref": "#/$defs/seat"},
                "decision": {"const": True},
                "cards": {"$ref": "#/$defs/cards"},
            },
            "description": "A decision before play (a card exchange); its cards are shown "
            "only to the seats involved.",
        },
    ],
    "description": "One turn: a pass, the cards played, or a decision before play.",
}
KINDS = ["single", "pair", "triple", "four", "five", "dragon"]
TABLE = {
    "type": ["object", "null"],
    "required": ["cards", "kind", "seat"],
    "additionalProperties": False,
    "properties": {
        "cards": {"$ref": "#/$defs/cards", "minItems": 1},
        "kind": {"type": "string", "description": "Play size name: " + ", ".join(KINDS)
                 + " (house rules may add more, e.g. runs)."},
        "type": {
            "type": "string",
            "description": 'Five-card type ("straight", "full-house", ...) or four-card type.',
        },
        "seat": {"$ref": "#/$defs/seat", "description": "Who made the play."},
    },
    "description": "The play to beat and who made it; null when the table is empty (you lead).",
}
OUTCOME = {
    "type": "object",
    "required": [
        "termination",
        "winner",
        "finish_order",
        "cards_left",
        "penalties",
        "scores",
        "detail",
    ],
    "additionalProperties": False,
    "properties": {
        "termination": {"enum": ["played-out", "instant-win", "instant-loss", "draw", "stalemate"]},
        "winner": {"type": ["integer", "null"]},
        "finish_order": {"type": "array", "items": {"type": "integer"}},
        "cards_left": {"type": "array", "items": {"type": "integer"}},
        "penalties": {"type": "array", "items": {"type": "integer"}},
        "scores": {"type": "array", "items": {"type": "integer"}},
        "detail": {"type": "string"},
    },
}


def defs(*names):
    all_ = {
        "card": CARD,
        "cards": CARDS,
        "move_id": MOVE_ID,
        "seat": SEAT,
        "options": option_schema(),
        "rules": RULES,
        "turn": TURN,
        "outcome": OUTCOME,
    }
    return {n: all_[n] for n in names}


def ints(desc):
    return {"type": "array", "items": {"type": "integer"}, "description": desc}


move_request = {
    "$schema": D,
    "$id": BASE + "move-request.json",
    "title": "POST /move request (protocol v1)",
    "description": "What the referee POSTs to /move on each of the bot's turns. Bots should ignore fields they do not know.",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "protocol": {"const": 1, "description": "Protocol version."},
        "type": {"const": "move"},
        "match_id": {"type": "string"},
        "deal_id": {"type": "string", "description": '"<match_id>/<deal_index>".'},
        "deals": {"type": "integer", "minimum": 1, "description": "Number of deals in the match."},
        "turn": {
            **NN,
            "description": "Index of this turn in the deal (= len(history)); echo it in the answer.",
        },
        "rules": {"$ref": "#/$defs/rules"},
        "scores": ints("Every seat's match total before this deal (higher is better)."),
        "strikes": ints("Every seat's strikes so far."),
        "deadline_ms": {**NN, "description": "Per-move deadline."},
        "time_bank_ms": {
            **NN,
            "description": "Your time bank left: this call may take deadline_ms + time_bank_ms; time beyond deadline_ms is drawn from the bank.",
        },
        "last_latency_ms": {
            "type": ["integer", "null"],
            "description": "How long your previous /move call took, as measured by the referee.",
        },
        "seat": {"$ref": "#/$defs/seat", "description": "Your seat."},
        "players": {"type": "integer", "minimum": 2, "maximum": 4},
        "deal_index": NN,
        "hand": {
            "$ref": "#/$defs/cards",
            "description": "Your cards, low to high in the rule set's order.",
        },
        "card_counts": ints("Cards held by each seat."),
        "to_move": {"type": ["integer", "null"], "description": "The seat to move (you)."},
        "table": TABLE,
        "trick": {
            "type": "array",
            "items": {"$ref": "#/$defs/turn"},
            "description": "Turns of the current trick.",
        },
        "history": {
            "type": "array",
            "items": {"$ref": "#/$defs/turn"},
            "description": "Every turn of this deal.",
        },
        "passed": ints("Seats shut out of the current trick (strict pass rule)."),
        "finished": ints("Seats that have played out, in order."),
        "must_include": {
            "anyOf": [{"$ref": "#/$defs/card"}, {"type": "null"}],
            "description": "A card the play must include (the opening play).",
        },
        "stock_count": NN,
        "draws": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["turn", "seat", "count"],
                "additionalProperties": False,
                "properties": {"turn": NN, "seat": {"$ref": "#/$defs/seat"}, "count": NN},
            },
            "description": "Every draw from the stock (counts only).",
        },
        "own_draws": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["turn", "cards"],
                "additionalProperties": False,
                "properties": {"turn": NN, "cards": {"$ref": "#/$defs/cards"}},
            },
            "description": "The cards you drew.",
        },
        "starter": {
            "type": ["integer", "null"],
            "description": "Who made the first play of the deal.",
        },
        "spare": {
            "type": "object",
            "required": ["cards", "seat"],
            "additionalProperties": False,
            "properties": {"cards": {"$ref": "#/$defs/cards"}, "seat": {"$ref": "#/$defs/seat"}},
            "description": "Spare card(s) and who got them (when face up, or when you got them).",
        },
        "legal_moves": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "cards"],
                "additionalProperties": False,
                "properties": {
                    "id": {"$ref": "#/$defs/move_id"},
                    "cards": {"$ref": "#/$defs/cards"},
                },
            },
            "description": "Every legal move, lowest plays first (fewer cards, then lower top card), pass last when allowed.",
        },
        "outcome": {"$ref": "#/$defs/outcome"},
        "phase": {
            "enum": ["play", "decision", "out-of-turn"],
            "description": "What this turn is: normal play; a decision before play (a card "
            "exchange, see 'decision'); or an offer to play out of turn (a bomb) — pass to "
            "decline.",
        },
        "decision": {
            "type": "object",
            "required": ["kind"],
            "properties": {
                "kind": {"enum": ["give", "trade"]},
                "cards": {"type": "integer", "description": "give: how many cards to give."},
                "to": {"$ref": "#/$defs/seat", "description": "give: who receives them."},
                "card": {"$ref": "#/$defs/cards", "description": "trade: the card offered."},
            },
            "description": "In the decision phase: what to decide (the legal moves are the "
            "allowed choices).",
        },
        "exchanges": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["from", "to", "cards"],
                "properties": {
                    "from": {"$ref": "#/$defs/seat"},
                    "to": {"$ref": "#/$defs/seat"},
                    "cards": {"$ref": "#/$defs/cards"},
                },
            },
            "description": "Card exchanges before play that involved you.",
        },
        "shootouts": {**NN, "description": "Team play: shoot-outs so far in this deal."},
    },
    "$defs": defs("card", "cards", "move_id", "seat", "options", "rules", "turn", "outcome"),
}
OPTIONAL = ("spare", "outcome", "decision", "exchanges", "shootouts")
move_request["required"] = [k for k in move_request["properties"] if k not in OPTIONAL]

move_answer = {
    "$schema": D,
    "$id": BASE + "move-answer.json",
    "title": "POST /move answer (protocol v1)",
    "description": "A JSON object with either 'move' (an id from legal_moves) or 'cards'. Unknown fields are ignored.",
    "type": "object",
    "properties": {
        "move": {"$ref": "#/$defs/move_id", "description": "The id of one of the legal_moves."},
        "cards": {
            "oneOf": [{"$ref": "#/$defs/cards"}, {"type": "string"}],
            "description": 'The cards to play ([] or "pass" to pass).',
        },
        "turn": {
            **NN,
            "description": "Optional echo of the request's turn; an answer for another turn is a fault.",
        },
        "say": {
            "type": "string",
            "description": "Optional table talk, kept in the log (first 140 characters).",
        },
    },
    "oneOf": [{"required": ["move"]}, {"required": ["cards"]}],
    "$defs": defs("card", "cards", "move_id"),
}

describe = {
    "$schema": D,
    "$id": BASE + "describe-answer.json",
    "title": "GET / answer (protocol v1)",
    "description": "The bot describes itself. Unknown fields are ignored.",
    "type": "object",
    "required": ["protocol", "name", "author", "version"],
    "properties": {
        "protocol": {"const": 1, "description": "The protocol version the bot speaks."},
        "name": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "\\S"},
        "author": {"type": "string", "maxLength": 64},
        "version": {"type": "string", "maxLength": 64},
    },
}

identity = {
    "type": "object",
    "required": ["seat", "name", "author", "version"],
    "additionalProperties": False,
    "properties": {
        "seat": {"$ref": "#/$defs/seat"},
        "name": {"type": "string"},
        "author": {"type": "string"},
        "version": {"type": "string"},
    },
}
start = {
    "$schema": D,
    "$id": BASE + "start-request.json",
    "title": "POST /start request (protocol v1)",
    "description": "Sent once per match before the first deal. The answer's body is ignored (any 2xx JSON object is fine).",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "protocol": {"const": 1},
        "type": {"const": "start"},
        "match_id": {"type": "string"},
        "seat": {"$ref": "#/$defs/seat", "description": "Your seat for the whole match."},
        "players": {"type": "integer", "minimum": 2, "maximum": 4},
        "deals": {"type": "integer", "minimum": 1},
        "rules": {"$ref": "#/$defs/rules"},
        "seats": {
            "type": "array",
            "items": identity,
            "description": "Who sits where (as each bot described itself).",
        },
        "deadline_ms": NN,
        "time_bank_ms": NN,
        "max_strikes": {
            "type": ["integer", "null"],
            "description": "Strikes that forfeit a seat (null: never).",
        },
    },
    "$defs": defs("seat", "options", "rules"),
}
start["required"] = list(start["properties"])

end = {
    "$schema": D,
    "$id": BASE + "end-request.json",
    "title": "POST /end request (protocol v1)",
    "description": "Sent once per match after the last deal. The answer's body is ignored.",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "protocol": {"const": 1},
        "type": {"const": "end"},
        "match_id": {"type": "string"},
        "seat": {"$ref": "#/$defs/seat"},
        "scores": ints("Final match totals."),
        "standings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["rank", "seat", "name", "score", "forfeited"],
                "additionalProperties": False,
                "properties": {
                    "rank": {"type": "integer", "minimum": 1},
                    "seat": {"$ref": "#/$defs/seat"},
                    "name": {"type": "string"},
                    "score": {"type": "integer"},
                    "forfeited": {"type": "boolean"},
                },
            },
        },
        "deals": {
            "type": "array",
            "items": {"$ref": "#/$defs/outcome"},
            "description": "Every deal's outcome.",
        },
        "strikes": ints("Every seat's strikes."),
        "forfeited": ints("Seats that forfeited."),
    },
    "$defs": defs("seat", "outcome"),
}
end["required"] = list(end["properties"])

def opened(schema: Any) -> Any:
    """The schema with every ``additionalProperties: false`` removed.

    Request schemas are open: they list (and require) every field the referee sends today, but
    a later version-1 referee may add fields (bots must ignore what they do not know), and the
    engine adds observation fields with new house rules.
    """
    if isinstance(schema, dict):
        return {k: opened(v) for k, v in schema.items() if k != "additionalProperties"}
    if isinstance(schema, list):
        return [opened(v) for v in schema]
    return schema


move_request = opened(move_request)
start = opened(start)
end = opened(end)

SCHEMAS: dict[str, Any] = {
    "move-request": move_request,
    "move-answer": move_answer,
    "describe-answer": describe,
    "start-request": start,
    "end-request": end,
}

NULLNUM = {"type": ["number", "null"]}
turn_rec = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "deal",
        "turn",
        "seat",
        "legal",
        "move",
        "latency_ms",
        "fault",
        "detail",
        "say",
        "bank_ms",
    ],
    "properties": {
        "deal": NN,
        "turn": NN,
        "seat": {"$ref": "#/$defs/seat"},
        "legal": {
            "type": "integer",
            "minimum": 1,
            "description": "Number of legal moves the seat had.",
        },
        "move": {
            "$ref": "#/$defs/move_id",
            "description": "The move played (the default move when fault is set).",
        },
        "latency_ms": {
            **NULLNUM,
            "description": "How long the bot took; null when it was not called (forfeited).",
        },
        "fault": {
            "type": ["string", "null"],
            "description": "Why the bot's answer was not played (a strike), 'forfeited', or null.",
        },
        "detail": {"type": "string"},
        "say": {"type": ["string", "null"], "maxLength": 140},
        "bank_ms": {**NN, "description": "Time bank left after this turn."},
    },
}
hands = {
    "type": "array",
    "items": {"$ref": "#/$defs/cards"},
    "description": "Every seat's hand as dealt.",
}
deal_head = {
    "index": NN,
    "seed": NN,
    "previous_winner": {"type": ["integer", "null"]},
    "previous_loser": {"type": ["integer", "null"]},
    "previous_order": {
        "type": "array",
        "items": {"type": "integer", "minimum": 0},
        "description": "The previous deal's finishing order (empty for the first deal); "
        "absent from logs written before it was recorded, whose deals were dealt without it.",
    },
    "hands": hands,
}
deal_tail = {
    "outcome": {"$ref": "#/$defs/outcome"},
    "loser": {"type": ["integer", "null"]},
    "totals": {
        "type": "array",
        "items": {"type": "integer"},
        "description": "Match totals after this deal.",
    },
}
seat_v1 = {
    "type": "object",
    "required": ["seat", "name", "author", "version", "url"],
    "additionalProperties": False,
    "properties": {
        "seat": {"$ref": "#/$defs/seat"},
        "name": {"type": "string"},
        "author": {"type": "string"},
        "version": {"type": "string"},
        "url": {"type": ["string", "null"]},
    },
}
seat_v2 = {
    "type": "object",
    "required": ["seat", "player", "name", "author", "version"],
    "additionalProperties": False,
    "properties": {
        "seat": {"$ref": "#/$defs/seat"},
        "player": {
            "type": ["string", "null"],
            "description": "The caller's id for the seat's player (the arena writes \"bot:<id>\"); never a URL.",
        },
        "name": {"type": "string", "description": "As the bot described itself on GET /."},
        "author": {"type": "string"},
        "version": {"type": "string"},
    },
}
limits = {
    "type": "object",
    "required": ["deadline_ms", "time_bank_ms", "max_strikes", "call_deadline_ms"],
    "additionalProperties": False,
    "properties": {
        "deadline_ms": NN,
        "time_bank_ms": NN,
        "max_strikes": {"type": ["integer", "null"]},
        "call_deadline_ms": NN,
    },
}
def header_for(version, seat_id):
    return {
        "format": {"const": "bigtwo-match-log"},
        "version": {"const": version},
        "protocol": {"const": 1},
        "engine": {"type": "string", "description": "Version of the engine that wrote the log."},
        "match_id": {"type": "string"},
        "rules": {"$ref": "#/$defs/rules"},
        "seed": {**NN, "description": "Match seed; deal i's seed is derived from it (docs/logs.md)."},
        "deals_planned": {"type": "integer", "minimum": 1},
        "limits": limits,
        "seats": {"type": "array", "items": seat_id},
    }


def obj(props, required=None):
    return {
        "type": "object",
        "required": required or list(props),
        "additionalProperties": False,
        "properties": props,
    }


result = {
    "totals": {"type": "array", "items": {"type": "integer"}},
    "standings": {
        "type": "array",
        "items": obj(
            {
                "rank": {"type": "integer", "minimum": 1},
                "seat": {"$ref": "#/$defs/seat"},
                "name": {"type": "string"},
                "score": {"type": "integer"},
                "wins": NN,
                "strikes": NN,
                "forfeited": {"type": "boolean"},
            }
        ),
    },
    "strikes": {
        "type": "array",
        "items": obj(
            {
                "seat": {"$ref": "#/$defs/seat"},
                "deal": NN,
                "turn": NN,
                "reason": {"type": "string"},
                "detail": {"type": "string"},
            }
        ),
    },
    "forfeits": {
        "type": "array",
        "items": obj({"seat": {"$ref": "#/$defs/seat"}, "deal": NN, "turn": NN}),
    },
    "latency": {
        "type": "array",
        "items": obj(
            {
                "seat": {"$ref": "#/$defs/seat"},
                "calls": NN,
                "p50_ms": NULLNUM,
                "p95_ms": NULLNUM,
                "max_ms": NULLNUM,
            }
        ),
    },
    "notes": {
        "type": "array",
        "items": obj(
            {
                "seat": {"$ref": "#/$defs/seat"},
                "call": {"enum": ["describe", "start", "end"]},
                "fault": {"type": "string"},
                "detail": {"type": "string"},
                "latency_ms": {"type": "number"},
            }
        ),
        "description": "Failed GET /, /start and /end calls (not strikes).",
    },
}
deal_doc = obj(
    {**deal_head, "turns": {"type": "array", "items": {"$ref": "#/$defs/turn_record"}}, **deal_tail}
)


def line(kind, props):
    return obj({"type": {"const": kind}, **props})


def log_schema_for(version, seat_id, note):
    header = header_for(version, seat_id)
    document = obj({**header, "deals": {"type": "array", "items": deal_doc}, "result": obj(result)})
    lines = {
        "oneOf": [
            line("header", header),
            line("deal", deal_head),
            # the turn line is a turn record plus "type" (additionalProperties is closed)
            line("turn", turn_rec["properties"]),
            line("deal_end", {"deal": NN, **deal_tail}),
            line("match_end", result),
        ]
    }
    schema = {
        "$schema": D,
        "$id": BASE + f"log-v{version}.json",
        "title": f"Big Two match log, format v{version}",
        "description": "A match log: the JSON form (one document), or one line of the JSON Lines form (see docs/logs.md). "
        + note,
        "oneOf": [{"$ref": "#/$defs/document"}, {"$ref": "#/$defs/line"}],
        "$defs": {
            "document": document,
            "line": lines,
            "turn_record": turn_rec,
            **defs("card", "cards", "move_id", "seat", "options", "rules", "outcome"),
        },
    }
    schema["$defs"]["outcome"] = opened(schema["$defs"]["outcome"])
    return schema


SCHEMAS["log-v1"] = log_schema_for(
    1, seat_v1, "Superseded by v2 (seats named by player id, never by URL); still read by verify."
)
SCHEMAS["log-v2"] = log_schema_for(2, seat_v2, "Seats are named by the caller's player id, never by URL.")


def render(schema: Any) -> str:
    return json.dumps(schema, indent=2) + "\n"


def main() -> int:
    for name, schema in SCHEMAS.items():
        (OUT / f"{name}.json").write_text(render(schema))
    print(f"wrote {len(SCHEMAS)} schemas to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
