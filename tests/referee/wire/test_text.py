"""The text rule and its printable form (referee/wire/text.py): what every reader encodes."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.runner.log import dumps
from referee.wire.text import (
    encodable_json,
    printable,
    printable_bytes,
    printable_tree,
    stored_json,
    stored_json_bytes,
    text_problem,
)

BAD = ["\x00", "\ud800", "a\udfffb", "\udc80\x00"]


@pytest.mark.parametrize("value", BAD)
def test_bad_texts_break_the_rule_and_their_printable_form_keeps_it(value: str) -> None:
    assert text_problem(value) is not None
    shown = printable(value)
    assert text_problem(shown) is None
    shown.encode("utf-8")


def test_valid_texts_pass_unchanged() -> None:
    for value in ("", "plain", "café ☕ \U0001F600", "back\\slash"):
        assert text_problem(value) is None and printable(value) is value


def test_printable_writes_escapes() -> None:
    assert printable("a\x00\ud800") == "a\\x00\\ud800"
    assert printable_bytes(b"ok \xff\x00 \xe2\x82") == "ok \\xff\\x00 \\xe2\\x82"
    assert printable_bytes("é".encode()) == "é"


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(st.text() | st.integers() | st.none(),
                    lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(), kids, max_size=4), max_leaves=12))
def test_a_stored_document_reads_back_valid(doc: object) -> None:
    raw = json.dumps(doc).encode()  # as every document is stored: ensure_ascii
    back = stored_json(raw)
    json.dumps(back, ensure_ascii=False).encode("utf-8")  # nothing left that cannot encode
    if not any(text_problem(s) for s in _strings(doc)):
        assert back == doc  # a valid document is read back as it was


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    return []


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text()))
def test_encodable_json_is_the_same_value_and_encodes(values: list[str]) -> None:
    text = encodable_json(json.dumps(values, ensure_ascii=False))
    text.encode("utf-8")
    assert json.loads(text) == values


def test_printable_tree_repairs_keys_too() -> None:
    assert printable_tree({"\ud800": ["\x00", 1]}) == {"\\ud800": ["\\x00", 1]}


def test_a_log_with_a_lone_surrogate_dumps_to_utf8() -> None:
    text = dumps({"format": "x", "say": "\ud800", "seats": []})
    text.encode("utf-8")
    assert json.loads(text)["say"] == "\ud800"  # the same value, written as its escape


def test_stored_bytes_come_out_as_stored_unless_they_need_the_repair() -> None:
    plain = json.dumps({"a": "\U0001F600", "b": [1, 2.5, None]}, separators=(",", ":")).encode()
    assert stored_json_bytes(plain) == plain  # a valid pair only looks suspect
    old = json.dumps({"say": "\ud800", "d": "\x00"}, separators=(",", ":")).encode()
    assert json.loads(stored_json_bytes(old)) == {"say": "\\ud800", "d": "\\x00"}
