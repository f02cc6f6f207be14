"""Match logs: both forms round-trip, match the schema, and verify; tampering is caught at the
first bad turn."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from referee import find_ruleset, preset_names
from referee.game.cards import card_text, parse_mask
from referee.runner import log as mlog
from referee.runner.match import Limits, MatchRecord, run_match
from referee.wire.players import LocalPlayer, Player

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "referee" / "schemas"
SCHEMA = json.loads((SCHEMA_DIR / "log-v2.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)
V1_VALIDATOR = Draft202012Validator(json.loads((SCHEMA_DIR / "log-v1.json").read_text()))


def first(request: dict[str, Any]) -> dict[str, Any]:
    return {"move": request["legal_moves"][0]["id"], "say": "hi"}


def randomly(seed: int) -> LocalPlayer:
    rng = random.Random(seed)
    return LocalPlayer(lambda r: {"move": rng.choice(r["legal_moves"])["id"]}, name=f"rnd{seed}")


def faulty(every: int) -> LocalPlayer:
    count = {"n": 0}

    def choose(request: dict[str, Any]) -> dict[str, Any]:
        count["n"] += 1
        if count["n"] % every == 0:
            return {"move": "not-a-move"}
        return first(request)

    return LocalPlayer(choose, name="faulty")


def match(rules_name: str = "standard", seed: int = 1, deals: int = 3,
          players: list[Player] | None = None, **limits: Any) -> MatchRecord:
    rules = find_ruleset(rules_name)
    ps = players or [randomly(i) for i in range(rules.players)]
    return run_match(rules, ps, seed, deals, Limits(**limits))


@pytest.fixture(scope="module")
def record() -> MatchRecord:
    players: list[Player] = [randomly(1), faulty(4), LocalPlayer(first, name="first"),
                             randomly(2)]
    return match(players=players, deals=3, max_strikes=6)


@pytest.fixture
def doc(record: MatchRecord) -> dict[str, Any]:
    return mlog.to_document(record)


# --------------------------------------------------------------------------- forms


def test_record_has_strikes_and_a_forfeit(record: MatchRecord) -> None:
    assert len(record.strikes) == 6 and len(record.forfeits) == 1
    assert all(s.reason == "unknown_move" for s in record.strikes)


def test_document_verifies(doc: dict[str, Any]) -> None:
    verdict = mlog.verify(doc)
    assert verdict.ok, str(verdict)
    assert "3 deals" in verdict.summary and "6 strikes" in verdict.summary


def test_json_and_jsonl_round_trip(doc: dict[str, Any], tmp_path: Path) -> None:
    assert mlog.loads(mlog.dumps(doc)) == doc
    assert mlog.loads(mlog.dumps(doc, lines=True)) == doc
    for name in ("m.json", "m.jsonl"):
        path = tmp_path / name
        mlog.write(doc, path)
        assert mlog.read(path) == doc
        assert mlog.verify(mlog.read(path)).ok
    text = (tmp_path / "m.jsonl").read_text()
    lines = [json.loads(x) for x in text.splitlines()]
    kinds = [x["type"] for x in lines]
    assert kinds[0] == "header" and kinds[-1] == "match_end"
    assert kinds.count("deal") == kinds.count("deal_end") == 3
    assert kinds.count("turn") == sum(len(d["turns"]) for d in doc["deals"])
    assert json.loads((tmp_path / "m.json").read_text()) == doc


def test_schema_accepts_both_forms(doc: dict[str, Any]) -> None:
    VALIDATOR.validate(doc)
    for line in mlog.to_lines(doc):
        VALIDATOR.validate(line)


def test_schema_rejects_a_broken_log(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["deals"][0]["turns"][0]["move"] = "3D 3S"
    assert not VALIDATOR.is_valid(bad)
    del bad["result"]
    assert not VALIDATOR.is_valid(bad)


def test_log_contents(doc: dict[str, Any], record: MatchRecord) -> None:
    assert doc["format"] == "bigtwo-match-log" and doc["version"] == 2
    assert doc["protocol"] == 1 and doc["engine"]
    assert doc["rules"]["options"] == find_ruleset("standard").options()
    assert [s["name"] for s in doc["seats"]] == ["rnd1", "faulty", "first", "rnd2"]
    turn = doc["deals"][0]["turns"][0]
    assert set(turn) == {"deal", "turn", "seat", "legal", "move", "latency_ms", "fault",
                         "detail", "say", "bank_ms"}
    says = {t["say"] for d in doc["deals"] for t in d["turns"] if t["seat"] == 2}
    assert says == {"hi"}
    hands = doc["deals"][0]["hands"]
    assert sorted(c for h in hands for c in h) == sorted(card_text(c) for c in range(52))
    assert doc["result"]["standings"][-1]["forfeited"]


def as_v1(doc: dict[str, Any], urls: list[str | None]) -> dict[str, Any]:
    """The same match as the v1 format wrote it: seats with ``url``, no ``player``."""
    old = copy.deepcopy(doc)
    old["version"] = 1
    old["seats"] = [{"seat": s["seat"], "name": s["name"], "author": s["author"],
                     "version": s["version"], "url": u}
                    for s, u in zip(old["seats"], urls, strict=True)]
    return old


def test_v2_seats_carry_the_player_label_and_no_url() -> None:
    rules = find_ruleset("standard")
    players: list[Player] = [LocalPlayer(first, name=f"p{i}", label=f"bot:{i + 10}")
                             for i in range(rules.players)]
    doc = mlog.to_document(run_match(rules, players, 5, 1))
    assert [s["player"] for s in doc["seats"]] == ["bot:10", "bot:11", "bot:12", "bot:13"]
    assert all(set(s) == {"seat", "player", "name", "author", "version"} for s in doc["seats"])
    VALIDATOR.validate(doc)
    assert not V1_VALIDATOR.is_valid(doc)


def test_v1_logs_still_verify(doc: dict[str, Any], tmp_path: Path) -> None:
    old = as_v1(doc, ["https://bots.example/s3cr3t-path", None, None, "http://x.example/"])
    V1_VALIDATOR.validate(old)
    for line in mlog.to_lines(old):
        V1_VALIDATOR.validate(line)
    assert not VALIDATOR.is_valid(old)
    verdict = mlog.verify(old)
    assert verdict.ok, str(verdict)
    from referee.__main__ import main

    for name in ("old.json", "old.jsonl"):
        mlog.write(old, tmp_path / name)
        assert mlog.verify(mlog.read(tmp_path / name)).ok
        assert main(["verify", str(tmp_path / name)]) == 0  # python -m referee verify
    # A v1 log is still checked as strictly as a v2 one.
    bad = copy.deepcopy(old)
    bad["deals"][0]["turns"][3]["legal"] += 1
    v = mlog.verify(bad)
    assert not v.ok and (v.deal, v.turn) == (0, 3)


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_verifies(name: str) -> None:
    rec = match(name, seed=7, deals=4)
    doc = mlog.loads(mlog.dumps(rec, lines=True))
    verdict = mlog.verify(doc)
    assert verdict.ok, f"{name}: {verdict}"
    VALIDATOR.validate(doc)


# --------------------------------------------------------------------------- tampering


def tampered(doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(doc)


def test_changed_move_to_cards_not_held(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    turn = bad["deals"][1]["turns"][10]
    seat_hand = set(bad["deals"][1]["hands"][turn["seat"]])
    stranger = next(card_text(c) for c in range(52) if card_text(c) not in seat_hand)
    turn["move"] = stranger
    v = mlog.verify(bad)
    assert not v.ok and (v.deal, v.turn) == (1, 10)
    assert "not in seat" in v.problem


def test_changed_move_to_another_legal_move(doc: dict[str, Any]) -> None:
    # Turn 0 of a deal leads the lowest card; another legal lead is a different single.
    bad = tampered(doc)
    d = bad["deals"][2]
    leader = d["turns"][0]["seat"]
    first_move = parse_mask(d["turns"][0]["move"])
    other = next(c for c in d["hands"][leader] if parse_mask(c) != first_move)
    d["turns"][0]["move"] = other
    v = mlog.verify(bad)
    assert not v.ok and v.deal == 2 and v.turn == 0


def test_changed_move_later_legal_substitution(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    turns = bad["deals"][0]["turns"]
    i = next(k for k, t in enumerate(turns) if t["move"] != "pass" and t["fault"] is None
             and k > 4 and t["legal"] > 2)
    turns[i]["move"] = "pass"
    v = mlog.verify(bad)
    assert not v.ok and v.deal == 0 and v.turn is not None and v.turn >= i


def test_changed_score(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    bad["deals"][1]["outcome"]["scores"][0] += 1
    v = mlog.verify(bad)
    assert not v.ok and (v.deal, v.turn) == (1, None)
    assert "scores" in v.problem


def test_changed_total_and_standing(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    bad["result"]["totals"][2] += 5
    v = mlog.verify(bad)
    assert not v.ok and v.deal is None and "totals" in v.problem
    bad = tampered(doc)
    bad["result"]["standings"][0]["score"] += 5
    v = mlog.verify(bad)
    assert not v.ok and "standing 1" in v.problem


def test_changed_hand(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    hands = bad["deals"][1]["hands"]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]
    v = mlog.verify(bad)
    assert not v.ok and (v.deal, v.turn) == (1, None)
    assert "dealt hand of seat 1 differs" in v.problem  # the log's seat 0, as people count


def test_changed_legal_count_and_seat(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    bad["deals"][0]["turns"][7]["legal"] += 1
    v = mlog.verify(bad)
    assert not v.ok and (v.deal, v.turn) == (0, 7) and "legal moves" in v.problem
    bad = tampered(doc)
    t = bad["deals"][0]["turns"][3]
    t["seat"] = (t["seat"] + 1) % 4
    v = mlog.verify(bad)
    assert not v.ok and (v.deal, v.turn) == (0, 3) and "to move" in v.problem


def test_hidden_fault_or_invented_fault(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    turns = [t for d in bad["deals"] for t in d["turns"]]
    struck = next(t for t in turns if t["fault"] not in (None, "forfeited"))
    struck["fault"] = None
    v = mlog.verify(bad)
    # Playing the default move is legal, so the hidden strike shows where the count matters:
    # the forfeit comes a strike late, or the strike list disagrees with the turns.
    assert not v.ok and ("forfeited" in v.problem or "strikes" in v.problem)
    bad = tampered(doc)
    turns = bad["deals"][0]["turns"]
    k = next(i for i, t in enumerate(turns) if t["fault"] is None and t["move"] != "pass"
             and t["legal"] > 1 and i > 0)
    turns[k]["fault"] = "timeout"
    v = mlog.verify(bad)
    assert not v.ok and (v.deal, v.turn) == (0, k) and "default move" in v.problem


def test_changed_seed(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    bad["seed"] += 1
    v = mlog.verify(bad)
    assert not v.ok and v.deal == 0 and "seed" in v.problem


def test_truncated_jsonl(doc: dict[str, Any]) -> None:
    lines = mlog.dumps(doc, lines=True).splitlines()
    # header, deal 0 line, its turns, deal_end, deal 1 line, then 12 turns of deal 1.
    n0 = len(doc["deals"][0]["turns"])
    cut = 1 + 1 + n0 + 1 + 1 + 12
    v = mlog.verify(mlog.loads("\n".join(lines[:cut]) + "\n"))
    assert not v.ok and (v.deal, v.turn) == (1, 12)
    assert "ends before the deal is over" in v.problem
    # Cut in the middle of a line: that line is dropped, the turn before is named.
    partial = "\n".join(lines[:cut]) + "\n" + lines[cut][:25]
    v = mlog.verify(mlog.loads(partial))
    assert (v.deal, v.turn) == (1, 12)
    # Whole deals missing, or no match end.
    v = mlog.verify(mlog.loads("\n".join(lines[: 1 + 1 + n0 + 1])))
    assert not v.ok and v.deal == 1 and "ends after 1 of 3 deals" in v.problem
    v = mlog.verify(mlog.loads("\n".join(lines[:-1])))
    assert not v.ok and "match end" in v.problem


def test_malformed_logs_are_reported_not_raised(doc: dict[str, Any]) -> None:
    bad = tampered(doc)
    del bad["deals"][0]["turns"][2]["legal"]
    v = mlog.verify(bad)
    assert not v.ok and (v.deal, v.turn) == (0, 2) and "malformed" in v.problem
    for version in (3, 0, True, "2", None):
        bad = tampered(doc)
        bad["version"] = version
        assert "version" in mlog.verify(bad).problem
    bad = tampered(doc)
    bad["rules"]["options"]["players"] = 9
    assert not mlog.verify(bad).ok
    with pytest.raises(mlog.LogError):
        mlog.loads("")
    with pytest.raises(mlog.LogError):
        mlog.loads('{"type": "turn"}\n{"type": "turn"}\n')
    with pytest.raises(mlog.LogError):
        mlog.loads('{"type": "header"}\nnot json\n{"type": "turn"}\n')
