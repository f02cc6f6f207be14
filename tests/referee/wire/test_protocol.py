"""Protocol v1: every message the referee sends validates against its JSON Schema, the schema
files match their generator, answers are judged as documented, and the docs' example is real."""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from referee import Deal, find_ruleset, preset_names
from referee.game.cards import move_id, parse_mask
from referee.game.view import WIRE_JSON
from referee.runner.match import Limits, run_match
from referee.wire.players import LocalPlayer, Player
from referee.wire.protocol import (
    PROTOCOL_VERSION,
    SAY_DROPPED,
    AnswerFault,
    check_description,
    example_exchange,
    judge_answer,
    move_request,
)

ROOT = Path(__file__).resolve().parents[3]
SCHEMA_DIR = ROOT / "referee" / "schemas"
SCHEMAS = {p.stem: json.loads(p.read_text()) for p in SCHEMA_DIR.glob("*.json")}


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(SCHEMAS[name])


def test_schema_files_are_valid_schemas() -> None:
    assert set(SCHEMAS) == {"describe-answer", "start-request", "move-request", "move-answer",
                            "end-request", "log-v1", "log-v2"}
    for schema in SCHEMAS.values():
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def _without_option_list(schema: Any) -> Any:
    """The schema with the rule-set option list blanked (it follows referee/game/rules.py, which
    gains options independently of the protocol)."""
    s = copy.deepcopy(schema)
    if "$defs" in s and "options" in s["$defs"]:
        s["$defs"]["options"]["properties"] = {}
    return s


def test_schema_files_match_the_generator() -> None:
    path = ROOT / "scripts" / "gen_schemas.py"
    spec = importlib.util.spec_from_file_location("gen_schemas", path)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for name, schema in gen.SCHEMAS.items():
        on_disk = SCHEMAS[name]
        assert _without_option_list(json.loads(gen.render(schema))) == _without_option_list(
            on_disk), f"{name}.json is stale: run python scripts/gen_schemas.py"


class Recorder:
    """Four players that record every message they receive and play randomly."""

    def __init__(self, n: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.moves: list[dict[str, Any]] = []
        self.starts: list[dict[str, Any]] = []
        self.ends: list[dict[str, Any]] = []
        self.players: list[Player] = [
            LocalPlayer(self.choose, on_start=self.starts.append, on_end=self.ends.append)
            for _ in range(n)
        ]

    def choose(self, request: dict[str, Any]) -> dict[str, Any]:
        self.moves.append(request)
        return {"move": self.rng.choice(request["legal_moves"])["id"]}


@pytest.mark.parametrize("name", preset_names())
def test_every_message_validates_for_every_preset(name: str) -> None:
    rules = find_ruleset(name)
    rec = Recorder(rules.players, seed=len(name))
    run_match(rules, rec.players, seed=3, deals=2, limits=Limits(max_strikes=None))
    move_v, start_v, end_v = validator("move-request"), validator("start-request"), validator(
        "end-request")
    assert rec.moves and len(rec.starts) == len(rec.ends) == rules.players
    # Every fourth request (schema validation is slow; the turns vary enough).
    for body in rec.moves[::4] + rec.moves[-1:]:
        move_v.validate(body)
    for body in rec.starts:
        start_v.validate(body)
    for body in rec.ends:
        end_v.validate(body)
    for body in rec.moves + rec.starts + rec.ends:
        assert body["protocol"] == PROTOCOL_VERSION
    assert all(r["rules"]["options"] == rules.options() for r in rec.moves)


def test_move_request_contents() -> None:
    deal = Deal.new(find_ruleset("standard"), 5)
    deal.push(deal.legal_moves()[0])
    seat = deal.to_move
    req = move_request(deal, seat, match_id="m", turn=1, scores=[1, 2, 3, -6], deadline_ms=900,
                       time_bank_ms=4000, last_latency_ms=12, deals=4, strikes=[0, 1, 0, 0])
    validator("move-request").validate(req)
    assert req["deal_id"] == "m/0" and req["turn"] == len(req["history"]) == 1
    assert req["scores"] == [1, 2, 3, -6] and req["strikes"] == [0, 1, 0, 0]
    assert req["table"]["seat"] == deal.table_seat
    assert req["hand"] and parse_mask(req["hand"]) == deal.hands[seat]
    assert req["card_counts"] == deal.cards_left()
    ids = [m["id"] for m in req["legal_moves"]]
    assert sorted(ids) == sorted(move_id(m) for m in deal.legal_moves())
    assert ids[-1] == "pass"
    assert all(move_id(parse_mask(m["cards"])) == m["id"] for m in req["legal_moves"])


def test_docs_example_is_what_the_code_builds() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text()
    blocks = re.findall(r"```json\n(.*?)\n```", text, re.S)
    request, answer = example_exchange()
    shown = [json.loads(b) for b in blocks[-2:]]
    shown_request = copy.deepcopy(shown[0])
    built_request = copy.deepcopy(request)
    # Rule-set options follow referee/game/rules.py, and fields added within protocol v1 may be
    # missing from the docs; every field the docs show must be exactly what the code builds.
    shown_request["rules"]["options"] = built_request["rules"]["options"] = {}
    stale = {k for k, v in shown_request.items() if built_request.get(k, object()) != v}
    assert not stale, f"docs/protocol.md example differs in {sorted(stale)}: regenerate it " \
        "with python -m referee protocol-example"
    assert shown[1] == answer
    validator("move-request").validate(request)
    validator("move-answer").validate(answer)
    deal_legal = [parse_mask(m["cards"]) for m in request["legal_moves"]]
    judged = judge_answer(answer, request["turn"], deal_legal, parse_mask(request["hand"]))
    assert judged.fault is None and judged.say == "low and steady"


# --------------------------------------------------------------------------- answers


LEGAL = [parse_mask("4D"), parse_mask("5D 5S"), 0]
HAND = parse_mask("4D 5D 5S 9H")


@pytest.mark.parametrize(("answer", "fault"), [
    ({"move": "4D"}, None),
    ({"move": "5D-5S", "turn": 7, "say": "pair"}, None),
    ({"move": "pass"}, None),
    ({"cards": ["5S", "5D"]}, None),
    ({"cards": []}, None),
    ({"cards": "4D"}, None),
    (["4D"], AnswerFault.NOT_AN_OBJECT),
    ({}, AnswerFault.NO_MOVE),
    ({"move": 4}, AnswerFault.NO_MOVE),
    ({"cards": [4]}, AnswerFault.NO_MOVE),
    ({"move": "9H"}, AnswerFault.UNKNOWN_MOVE),
    ({"move": "4D", "turn": 8}, AnswerFault.WRONG_TURN),
    ({"cards": ["XX"]}, AnswerFault.MALFORMED_CARDS),
    ({"cards": ["2S"]}, AnswerFault.NOT_IN_HAND),
    ({"cards": ["9H"]}, AnswerFault.ILLEGAL),
    ({"cards": ["4D", "9H"]}, AnswerFault.ILLEGAL),
])
def test_judge_answer(answer: Any, fault: AnswerFault | None) -> None:
    judged = judge_answer(answer, 7, LEGAL, HAND)
    assert judged.fault == fault
    assert (judged.move is None) == (fault is not None)
    if fault is None:
        assert validator("move-answer").is_valid(answer)


def test_move_answer_schema_rejects_what_the_referee_rejects() -> None:
    v = validator("move-answer")
    for bad in ({}, {"move": 4}, {"move": "3D 3S"}, {"cards": [4]}, {"say": "hi"}, ["3D"]):
        assert not v.is_valid(bad), bad


def test_say_is_cut() -> None:
    judged = judge_answer({"move": "4D", "say": "x" * 500}, 0, LEGAL, HAND)
    assert judged.say == "x" * 140


@pytest.mark.parametrize(("say", "why"), [
    ("\ud800", "holds a lone UTF-16 surrogate"), ("a\x00b", "holds a NUL character"),
    ("ok \udfff" + "x" * 200, "holds a lone UTF-16 surrogate")])
def test_a_say_breaking_the_text_rule_is_dropped_and_the_move_stands(say: str,
                                                                     why: str) -> None:
    judged = judge_answer({"move": "4D", "say": say}, 0, LEGAL, HAND)
    assert judged.fault is None and judged.move is not None
    assert judged.say is None and judged.detail == SAY_DROPPED + why
    refused = judge_answer({"move": "no-such", "say": say}, 0, LEGAL, HAND)
    assert refused.fault is AnswerFault.UNKNOWN_MOVE and refused.say is None


def test_a_valid_surrogate_pair_is_one_character_and_kept() -> None:
    judged = judge_answer(json.loads('{"move": "4D", "say": "\\ud83d\\ude00"}'), 0, LEGAL, HAND)
    assert judged.say == "\U0001F600" and judged.detail == ""


@pytest.mark.parametrize("key", ["name", "author", "version"])
@pytest.mark.parametrize("bad", ["\x00", "x\ud800"])
def test_a_description_breaking_the_text_rule_is_invalid(key: str, bad: str) -> None:
    info = {"protocol": 1, "name": "b", "author": "a", "version": "1", key: bad}
    problem = check_description(info)
    assert problem is not None and problem.startswith(repr(key))


@pytest.mark.parametrize(("info", "ok"), [
    ({"protocol": 1, "name": "b", "author": "a", "version": "1"}, True),
    ({"protocol": 1, "name": "b", "author": "", "version": "", "extra": [1]}, True),
    ({"protocol": 2, "name": "b", "author": "a", "version": "1"}, False),
    ({"protocol": True, "name": "b", "author": "a", "version": "1"}, False),
    ({"protocol": 1, "name": " ", "author": "a", "version": "1"}, False),
    ({"protocol": 1, "name": "b", "author": "a"}, False),
    ({"protocol": 1, "name": "b" * 65, "author": "a", "version": "1"}, False),
    ({"protocol": 1, "name": 5, "author": "a", "version": "1"}, False),
    ([1], False),
])
def test_description_check_agrees_with_schema(info: Any, ok: bool) -> None:
    assert (check_description(info) is None) == ok
    assert validator("describe-answer").is_valid(info) == ok


EXAMPLE_BODY_SHA256 = "11e0c355cd54f7694df54612ffcbc3513c0d2c25926007c1de4ae3639de4736e"
"""The example ``/move`` request's body (``docs/protocol.md``), as sent since protocol 1: the
splicing of kept texts (``MoveRequest.encoded``) must never change a byte of it."""


def test_the_example_requests_bytes_are_pinned() -> None:
    request, _ = example_exchange()
    body = request.encoded()
    assert body == WIRE_JSON.encode(dict(request)).encode("utf-8")
    assert (len(body), hashlib.sha256(body).hexdigest()) == (2305, EXAMPLE_BODY_SHA256)


@pytest.mark.parametrize("match_id", ["\x00rules", "\x00history", "m\x00"])
def test_a_match_id_holding_a_nul_is_still_encoded_exactly(match_id: str) -> None:
    """The kept texts are spliced in where marks holding a NUL stand; a NUL anywhere else
    (a match id given to the command line) must not be taken for a mark."""
    deal = Deal.new(find_ruleset("standard"), 7)
    for _ in range(5):
        deal.push(deal.legal_moves()[0])
    request = move_request(deal, deal.to_move, match_id=match_id, turn=len(deal.log),
                           scores=[0, 0, 0, 0], deadline_ms=1000, time_bank_ms=0,
                           last_latency_ms=None)
    assert request.encoded() == WIRE_JSON.encode(dict(request)).encode("utf-8")


@pytest.mark.parametrize("name", ["standard", "taiwan", "pusoy-dos", "president"])
def test_an_id_is_accepted_exactly_when_it_is_a_legal_moves_id(name: str) -> None:
    """Answers by id are judged by parsing the id (not by naming every legal move): the same
    verdicts as looking it up among the request's ids, variants of an id included."""
    rules = find_ruleset(name)
    chooser = random.Random(name)
    for seed in range(3):
        deal = Deal.new(rules, seed)
        while deal.outcome is None:
            legal = deal.legal_moves()
            ids = {move_id(m): m for m in legal}
            hand = deal.hands[deal.to_move]
            for mid in ids:
                variants = {mid.lower(), mid.replace("-", " "), "-".join(mid.split("-")[::-1]),
                            f" {mid}", mid.upper(), "PASS" if mid == "pass" else mid + "-"}
                for raw in {mid} | variants:
                    judged = judge_answer({"move": raw}, 0, legal, hand)
                    assert judged.move == ids.get(raw), (raw, judged)
                    assert (judged.fault is None) == (raw in ids)
            deal.push(chooser.choice(legal))
