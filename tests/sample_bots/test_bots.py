"""Every sample bot, as a real HTTP server on loopback, answers only listed legal move ids.

Requests come from real deals (``referee.Deal`` + ``referee.wire.protocol.move_request``) under
several presets; the deal is played on with each answer, so the bots see every kind of turn
(opening, following, leading after a trick, last cards, strict passes, duties).  The bots
themselves never import the referee; only this test does, to make requests.
"""

from __future__ import annotations

import importlib
import random
from typing import Any

import pytest

from referee import Deal, DealContext, find_ruleset
from referee.game.cards import move_id
from referee.wire.protocol import move_request

BOTS = ["random_bot", "greedy_bot", "planner_bot"]
PRESETS = ["standard", "hong-kong", "pusoy-dos", "indonesia", "house-003", "singapore", "lukang"]
DEALS_PER_PRESET = 3


def choose_of(module: str) -> Any:
    return importlib.import_module(f"sample_bots.{module}").choose


@pytest.mark.parametrize("bot", BOTS)
def test_describe_names_the_bot(serve: Any, bot: str) -> None:
    mod = importlib.import_module(f"sample_bots.{bot}")
    _, client = serve(mod.choose, name=mod.NAME)
    status, _, data = client.request("GET", "/")
    assert status == 200 and data["protocol"] == 1 and data["name"] == mod.NAME


@pytest.mark.parametrize("bot", BOTS)
@pytest.mark.parametrize("preset", PRESETS)
def test_every_answer_is_a_listed_legal_move(serve: Any, bot: str, preset: str) -> None:
    _, client = serve(choose_of(bot), name=bot)
    rules = find_ruleset(preset)
    rng = random.Random(f"{bot}/{preset}")
    asked = 0
    for index in range(DEALS_PER_PRESET):
        deal = Deal.new(rules, rng.getrandbits(32), DealContext(index=index, previous_winner=0))
        assert client.post("/start", {"protocol": 1, "match_id": "t", "seat": 0})[0] == 200
        turn = 0
        while not deal.over:
            legal = deal.legal_moves()
            req = move_request(
                deal,
                deal.to_move,
                match_id="t",
                turn=turn,
                scores=[0] * rules.players,
                deadline_ms=1000,
                time_bank_ms=5000,
                last_latency_ms=None,
                legal=legal,
            )
            ids = {move_id(m): m for m in legal}
            status, _, answer = client.post("/move", req)
            assert status == 200, answer
            assert answer["move"] in ids, (answer, sorted(ids))
            assert answer.get("turn") == turn
            assert "say" not in answer, answer  # no fallback was needed
            deal.push(ids[answer["move"]])
            turn += 1
            asked += 1
    assert asked > 20 * DEALS_PER_PRESET


@pytest.mark.parametrize(
    "overrides",
    [
        {"players": 3},
        {"players": 2},
        {"four_card": "quads-and-two-pairs", "dragon_play": True},
        {"five_card_order": ["straight", "flush", "full-house", "two-pair", "straight-flush"]},
        {"five_card_compare": "highest-card", "suits_break_ties": False},
        {"straights": "wraparound", "flush_compare": "poker"},
        {"last_card_duty": "highest-single", "pass_rule": "ends-trick"},
        {"last_card_duty": "highest-hand", "players": 3},
    ],
)
def test_planner_is_legal_under_unusual_options(overrides: dict[str, Any]) -> None:
    """In process (no HTTP) for speed: the same ``choose`` the server calls."""
    from sample_bots import planner_bot

    rules = find_ruleset("standard", **overrides)
    for seed in range(4):
        deal = Deal.new(rules, seed)
        turn = 0
        while not deal.over:
            legal = deal.legal_moves()
            req = move_request(
                deal,
                deal.to_move,
                match_id="u",
                turn=turn,
                scores=[0] * rules.players,
                deadline_ms=1000,
                time_bank_ms=5000,
                last_latency_ms=None,
                legal=legal,
            )
            ids = {move_id(m): m for m in legal}
            # How fast it thinks is a figure of bench/bot_ladder.py, not a test's assertion.
            got = planner_bot.choose(req)
            assert got in ids
            deal.push(ids[got])
            turn += 1


def test_bots_import_neither_referee_nor_arena() -> None:
    """The sample bots speak only the wire protocol: importing them (in a fresh interpreter)
    loads no module of the referee or the arena."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys\n"
        "import sample_bots.sdk, sample_bots.random_bot, sample_bots.greedy_bot\n"
        "import sample_bots.planner_bot\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('referee', 'arena')]\n"
        "print(bad)\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
