"""Strike and fault details in words (:mod:`referee.runner.faults`): what a real match records
against bots that reset, answer 500 or answer garbage; every fault code; logs stored before."""

from __future__ import annotations

import copy
import json
import re

from referee import find_ruleset
from referee.runner.faults import ANSWER_TEXTS, plain_fault, plain_log
from referee.runner.log import to_document, verify
from referee.runner.match import Limits, run_match
from referee.wire.httpbot import Fault
from referee.wire.netguard import NetPolicy
from referee.wire.players import EXCEPTION, HttpPlayer, Player
from referee.wire.protocol import AnswerFault
from tests.referee import protocolbots as pb

LOCAL = NetPolicy(allow_private=True)
STANDARD = find_ruleset("standard")
CLASS_NAME = re.compile(r"\b_?[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+\b|\w+Error\b|\w+\(\w+=|Errno")
"""A Python class name (``ConnectionResetError``), a repr (``HTTPConnection(host=``) or an
``errno`` text."""
RESET = plain_fault(Fault.CONNECTION.value)
HTTP_500 = "answered HTTP 500; a 200 with a JSON object is expected"
NOT_JSON = plain_fault(Fault.NOT_JSON.value)


def _match_against_broken_bots() -> dict[str, object]:
    """A real match: seat 0 resets the connection, seat 1 answers 500, seat 2 answers
    something that is not JSON (each on its first two moves), seat 3 plays well."""
    bots = [pb.ProtocolBot(name="resets", misbehave=pb.reset, bad_moves={0, 1}),
            pb.ProtocolBot(name="fails", misbehave=pb.error_500, bad_moves={0, 1}),
            pb.ProtocolBot(name="garbles", misbehave=pb.invalid_json, bad_moves={0, 1}),
            pb.ProtocolBot(name="good")]
    with pb.running(*bots) as started:
        players: list[Player] = [HttpPlayer(b.url, policy=LOCAL) for b in started]
        try:
            rec = run_match(STANDARD, players, seed=4, deals=1,
                            limits=Limits(deadline_ms=20_000, time_bank_ms=0, max_strikes=None))
        finally:
            for p in players:
                p.close()
    return to_document(rec)


def test_a_match_records_each_fault_in_words() -> None:
    doc = _match_against_broken_bots()
    assert verify(doc).ok
    result = doc["result"]
    assert isinstance(result, dict)
    by_seat = {(s["seat"], s["reason"], s["detail"]) for s in result["strikes"]}
    assert by_seat == {(0, "connection", RESET), (1, "http_status", HTTP_500),
                       (2, "not_json", NOT_JSON)}
    deals = doc["deals"]
    assert isinstance(deals, list)
    faulted = [t for d in deals for t in d["turns"] if t["fault"] is not None]
    assert len(faulted) == 6
    assert all(t["detail"] == plain_fault(t["fault"], "", 500) for t in faulted)
    text = json.dumps(doc)
    assert not CLASS_NAME.search(text), CLASS_NAME.search(text)
    assert "127.0.0.1" not in text and "[redacted]" not in text


HOSTILE = ("_PinnedHTTPConnection(host='bot.internal', port=443): "
           "ConnectionResetError(104, 'Connection reset by peer') at 10.0.0.7 "
           "http://bot.internal/s3cr3t")


def test_every_fault_reads_in_words_and_stays_so() -> None:
    """Every transport fault (with and without a status), every refused answer and an unknown
    code: words with no internals, and putting them in words again changes nothing."""
    cases = [(f.value, s, HOSTILE) for f in Fault for s in (None, 502)]
    cases += [(f.value, None, "no legal move has id 'x'") for f in AnswerFault]
    cases += [("some_new_fault", None, HOSTILE), ("bad_description", None, "name missing")]
    for fault, status, detail in cases:
        words = plain_fault(fault, detail, status)
        assert not CLASS_NAME.search(words), (fault, words)
        for internal in ("bot.internal", "10.0.0.7", "s3cr3t", "host=", "://bot"):
            assert internal not in words, (fault, words)
        assert re.search(r"[a-z]{3,} [a-z]{2,}", words), (fault, words)
        assert plain_fault(fault, words) == words, fault  # idempotent, even without status
    assert plain_fault("http_status", "HTTP 503") == plain_fault("http_status", "", 503)
    assert "HTTP 503" in plain_fault("http_status", "HTTP 503")
    assert plain_fault("unknown_move", "no legal move has id 'x'").startswith(
        ANSWER_TEXTS["unknown_move"])
    assert plain_fault(None, HOSTILE) == plain_fault("forfeited", "") == ""
    # An in-process bot's exception is its author's own: kept after the sentence.
    assert "RuntimeError: no idea" in plain_fault(EXCEPTION, "RuntimeError: no idea")


def test_a_log_stored_with_the_callers_texts_verifies_and_reads_in_words() -> None:
    """Logs written before the referee put details in words carry the HTTP caller's texts;
    they still verify, and :func:`plain_log` shows them as a new log would (and still
    verifies: only details change)."""
    new = _match_against_broken_bots()
    old = copy.deepcopy(new)
    raw = {"connection": "ConnectionResetError: [Errno 104] Connection reset by peer",
           "http_status": "HTTP 500", "not_json": "invalid JSON: Expecting value at 0"}
    for d in old["deals"]:  # type: ignore[attr-defined]
        for t in d["turns"]:
            if t["fault"] in raw:
                t["detail"] = raw[t["fault"]]
    for s in old["result"]["strikes"]:  # type: ignore[index]
        s["detail"] = raw[s["reason"]]
    assert verify(old).ok
    shown = plain_log(old)
    assert verify(shown).ok
    assert shown == new
    assert "ConnectionResetError" in json.dumps(old)  # the input is not changed in place
