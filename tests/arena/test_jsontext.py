"""arena.core.jsontext: indented JSON for people, the standard library's text, written fast;
compact JSON for the worker's events, logs and kept calls, the same values written fast."""

from __future__ import annotations

import enum
import json
import math
import random
from typing import Any

from arena.core.jsontext import compact_json, indented_json
from referee import find_ruleset
from referee.runner.match import run_match
from referee.wire.players import LocalPlayer

from .json_values import random_value


def test_indented_json_writes_jsons_own_text() -> None:
    """The calls page's requests and the archive's documents are ``json.dumps(indent=2,
    ensure_ascii=False)``'s text, written by a faster encoder (orjson): every kind of value,
    nesting and escape, and a real request, give the same text; floats the same value
    (orjson writes ``1e300`` where json writes ``1e+300``); a NaN or an infinity is null, as
    the API writes it; what orjson refuses (an integer past 64 bits, a lone surrogate, a
    key that is not a string) is json's own text."""
    class Option(enum.StrEnum):
        A = "anticlockwise"

    class Count(enum.IntEnum):
        FOUR = 4

    leaves = [None, True, False, 0, -3, 2**70, 1.5, -0.0, 1e300, float("nan"), float("-inf"),
              "", 'é"\\\n<script>', "\u2028\ud800\x00", Option.A, Count.FOUR]
    rng = random.Random(7)

    def floats(v: object) -> bool:
        if isinstance(v, dict):
            return any(floats(x) for x in v.values())
        if isinstance(v, list | tuple):
            return any(floats(x) for x in v)
        return isinstance(v, float)

    def finite(v: object) -> object:
        """``v`` with each NaN or infinity as None: what the API writes."""
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [finite(x) for x in v]
        return None if isinstance(v, float) and not math.isfinite(v) else v

    def refused(v: object) -> bool:
        """Whether ``v`` holds what orjson refuses: an integer past 64 bits, a lone
        surrogate."""
        if isinstance(v, dict):
            return any(refused(x) for x in v.values())
        if isinstance(v, list | tuple):
            return any(refused(x) for x in v)
        return v == 2**70 or (isinstance(v, str) and "\ud800" in v)

    for _ in range(3000):
        v = random_value(rng, leaves, tuples=True)
        text = indented_json(v)
        theirs = json.dumps(v if refused(v) else finite(v), indent=2, ensure_ascii=False)
        if floats(v):  # the same values, each written as json writes it when parsed back
            assert json.dumps(json.loads(text)) == json.dumps(json.loads(theirs)), v
            assert text.splitlines()[0] == theirs.splitlines()[0]
        else:
            assert text == theirs, v
    assert indented_json({"a": [float("nan"), float("inf"), 1.5]}) == (
        '{\n  "a": [\n    null,\n    null,\n    1.5\n  ]\n}')
    for odd in ({1: [2]}, {"x": [2**70]}, ["\ud800"], ["\ud800", float("nan")]):
        assert indented_json(odd) == json.dumps(odd, indent=2, ensure_ascii=False), odd
    requests: list[dict[str, Any]] = []

    def keep(request: dict[str, Any]) -> dict[str, Any]:
        requests.append(request)
        return {"move": request["legal_moves"][0]["id"]}

    run_match(find_ruleset("standard"), [LocalPlayer(keep) for _ in range(4)], seed=3, deals=1)
    assert requests and all(indented_json(r) == json.dumps(r, indent=2, ensure_ascii=False)
                            for r in requests)


def test_compact_json_reads_back_as_the_same_value() -> None:
    """What a worker writes at every turn (live events, the log, the kept calls) parses back
    to the value it was given, as json's own text does: every kind of value, nesting and
    escape; a NaN or an infinity as null (JSON has neither); what orjson refuses (an integer
    past 64 bits, a key that is not a string, a lone surrogate) is json's ASCII text, so
    the bytes are always UTF-8; and no raw newline is left in it (the relay sends an event
    on one ``data:`` line)."""
    class Option(enum.StrEnum):
        A = "anticlockwise"

    leaves = [None, True, False, 0, -3, 2**63 - 1, 1.5, -0.0, 1e300, 0.1, "",
              'é"\\\n\r<script>', "\u2028\x00\x1f", Option.A]
    rng = random.Random(11)
    for _ in range(3000):
        v = random_value(rng, leaves)
        text = compact_json(v)
        assert isinstance(text, bytes) and b"\n" not in text and b"\r" not in text
        assert json.loads(text) == json.loads(json.dumps(v)), v
    assert compact_json({"a": [float("nan"), float("inf")]}) == b'{"a":[null,null]}'
    for odd in ({1: [2]}, {"x": [2**70]}, ["\ud800"]):
        assert compact_json(odd) == json.dumps(odd, separators=(",", ":")).encode("ascii"), odd
        json.loads(compact_json(odd).decode("utf-8"))


def test_compact_json_writes_the_wires_bytes_for_every_request_of_a_match() -> None:
    """The worker's bots are sent bodies written by compact_json (arena.jobs.bodies): byte
    for byte what the referee's own encoder writes (referee.game.view.wire_bytes), for
    every request of whole matches (start, every move, end), in several rule sets."""
    from referee.game.view import wire_bytes

    class Keeper(LocalPlayer):
        def start(self, info: dict[str, Any], deadline_s: float) -> Any:
            sent.append(info)
            return super().start(info, deadline_s)

        def end(self, info: dict[str, Any], deadline_s: float) -> Any:
            sent.append(info)
            return super().end(info, deadline_s)

    sent: list[dict[str, Any]] = []

    def move(request: dict[str, Any]) -> dict[str, Any]:
        sent.append(request)
        return {"move": request["legal_moves"][-1]["id"], "say": "é\u2028"}

    for name, seed in (("standard", 1), ("taiwan", 2), ("three-player-stock", 3)):
        rules = find_ruleset(name)
        run_match(rules, [Keeper(move) for _ in range(rules.players)], seed=seed, deals=2)
    kinds = {r.get("type") for r in sent}
    assert {"start", "move", "end"} <= kinds, kinds
    assert all(compact_json(r) == wire_bytes(r) for r in sent)
