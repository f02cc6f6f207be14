"""The conformance kit's signing checks (``--secret``): what a bot must accept and refuse.

The scheme is :mod:`referee.wire.signing`'s: version 2 signs the method, the request target,
the timestamp and a random request id with the body; during the transition the arena sends the
version 1 header beside it.  The headers are built here, with that module, rather than by the
arena's caller, because most of these requests are ones it never sends (unsigned, wrongly
signed, stale, sent twice, sent to another path), and so that the valid ones carry version 2
whichever version the caller sends today.  Every request carries both versions, as the arena's
do during the transition, so a bot that checks version 1 only is *accepted* where it should
refuse (a replay, another path): those are the holes version 2 closes, and the kit says so.

Each request goes on a connection of its own (a bot may close one after a 401).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from referee.runner.match import Limits
from referee.wire.netguard import GuardError, NetPolicy
from referee.wire.protocol import check_description, judge_answer
from referee.wire.signing import (
    MAX_SKEW_S,
    REPLAY_WINDOW_S,
    REQUEST_ID_HEADER,
    SIGNATURE_HEADER,
    SIGNATURES_HEADER,
    TIMESTAMP_HEADER,
    new_request_id,
    sign,
    signatures_value,
)

from .conformance_report import FAIL, PASS, SKIP, WARN, Check
from .judging import RequestError, legal_and_hand
from .move_shapes import Sample
from .rawhttp import RawAnswer, RawConnection, request_bytes, request_target

STALE_BY_S = MAX_SKEW_S + 300
"""How old the stale check's timestamp is: well outside the skew any bot may allow."""

SPEC = "docs/protocol.md, \"Request signing\""


def signed_headers(
    secret: bytes,
    method: str,
    target: str,
    body: bytes,
    *,
    timestamp: int | None = None,
    request_id: str | None = None,
    v2_secrets: Sequence[bytes] | None = None,
    v1: bool = True,
) -> list[tuple[str, str]]:
    """The signature headers of one request: version 1 (unless ``v1`` is False) and version 2
    (one entry per secret of ``v2_secrets``, default ``[secret]``)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    rid = request_id or new_request_id()
    keys = list(v2_secrets) if v2_secrets is not None else [secret]
    headers = [(TIMESTAMP_HEADER, ts)]
    if v1:
        headers.append((SIGNATURE_HEADER, sign(secret, ts, body)))
    headers += [(REQUEST_ID_HEADER, rid),
                (SIGNATURES_HEADER, signatures_value(keys, method, target, ts, rid, body))]
    return headers


class SigningChecks:
    """The checks of the ``signing`` family against the bot at ``url``: ``sample`` is the
    ``/move`` request they send, ``start_body`` a ``/start`` body (for the cross-path one)."""

    def __init__(self, url: str, policy: NetPolicy, limits: Limits, secret: bytes,
                 sample: Sample, start_body: bytes) -> None:
        self.url, self.policy, self.limits, self.secret = url, policy, limits, secret
        self.request = sample.request
        self.move_body = sample.request.encoded()
        self.start_body = start_body
        self.checks: list[Check] = []

    # --- plumbing ---------------------------------------------------------------------------
    def _check(self, cid: str, title: str, call: str) -> Check:
        return Check(f"signing:{cid}", "signing", title, PASS, call=call)

    def _send(self, wire_for: Any, method: str, path: str, deadline_s: float) -> RawAnswer:
        """Open a connection, send ``wire_for(conn)`` (bytes), read the answer."""
        try:
            conn = RawConnection(self.url, self.policy, deadline_s)
        except GuardError as exc:
            return RawAnswer(None, b"", False, 0.0, f"the URL is refused: {exc}")
        with conn:
            if conn.error:
                return RawAnswer(None, b"", False, 0.0, conn.error)
            return conn.exchange(wire_for(conn), method, deadline_s)

    def _post(self, path: str, body: bytes, headers_for: Any) -> RawAnswer:
        def wire(conn: RawConnection) -> bytes:
            where = request_target(conn.target, path)
            return request_bytes(conn.target, "POST", where, body, headers_for(where))

        return self._send(wire, "POST", path, self.limits.deadline_ms / 1000)

    def _accepted_move(self, answer: RawAnswer) -> str | None:
        """Why ``answer`` is not a legal answer to the sample request, or None."""
        if answer.status is None:
            return answer.error or "no HTTP answer"
        if answer.status == 401:
            return "refused with HTTP 401"
        if not 200 <= answer.status < 300:
            return f"answered HTTP {answer.status}"
        try:
            data = json.loads(answer.body)
            legal, hand = legal_and_hand(self.request)
        except (ValueError, RequestError):
            return "the answer is not JSON"
        verdict = judge_answer(data, self.request["turn"], legal, hand)
        if verdict.fault is not None:
            return f"the answer is not a legal move ({verdict.fault.value})"
        return None

    def _expect_accepted(self, check: Check, answer: RawAnswer, fix: str,
                         level: str = "fail") -> bool:
        check.latency_ms = round(answer.latency_s * 1000, 3)
        problem = self._accepted_move(answer)
        if problem is None:
            check.detail = "accepted and answered"
            return True
        check.status = WARN if level == "warn" else FAIL
        check.detail = problem
        check.fix = fix
        return False

    def _expect_refused(self, check: Check, answer: RawAnswer, fix: str) -> None:
        check.latency_ms = round(answer.latency_s * 1000, 3)
        if answer.status == 401:
            check.detail = "refused with 401"
        elif answer.status is not None and 200 <= answer.status < 300:
            check.status, check.detail, check.fix = FAIL, "accepted: the bot answered it", fix
        elif answer.status is not None and 400 <= answer.status < 500:
            check.status = WARN
            check.detail = f"refused, but with HTTP {answer.status}"
            check.fix = "answer 401 to a request whose signature does not verify"
        else:
            check.status = FAIL
            check.detail = (f"answered HTTP {answer.status}" if answer.status is not None
                            else answer.error or "no HTTP answer")
            check.fix = ("refuse it with 401 (and a JSON body saying why); do not crash or "
                         "drop the connection")
        self.checks.append(check)

    # --- the checks -------------------------------------------------------------------------
    def run(self) -> list[Check]:
        self.valid_get()
        self.valid_move()
        self.two_secrets()
        self.v2_only()
        self.unsigned()
        self.wrong_secret()
        self.stale()
        self.replayed()
        self.cross_path()
        return self.checks

    def valid_get(self) -> None:
        check = self._check("valid-get", "a signed GET / is accepted", "GET /")

        def wire(conn: RawConnection) -> bytes:
            where = request_target(conn.target, "/")
            headers = signed_headers(self.secret, "GET", where, b"")
            return request_bytes(conn.target, "GET", where, None, headers)

        answer = self._send(wire, "GET", "/", self.limits.call_deadline_ms / 1000)
        check.latency_ms = round(answer.latency_s * 1000, 3)
        problem: str | None = None
        if answer.status != 200:
            problem = (f"answered HTTP {answer.status}" if answer.status is not None
                       else answer.error or "no HTTP answer")
        else:
            try:
                problem = check_description(json.loads(answer.body))
            except ValueError:
                problem = "the answer is not JSON"
        if problem is None:
            check.detail = "accepted and answered"
        else:
            check.status, check.detail = FAIL, problem
            check.fix = ("verify GET requests too, over an empty body: " + self._valid_fix())
        self.checks.append(check)

    def _valid_fix(self) -> str:
        return ("accept a request when any v2 entry of X-BigTwo-Signatures is the hex "
                "HMAC-SHA256, under your secret's characters, of \"v2\\nMETHOD\\nTARGET\\n"
                "TIMESTAMP\\nREQUEST_ID\\nBODY\" (TARGET: the path and query exactly as on the "
                "request line; BODY: the raw bytes, before any JSON parsing); check that the "
                f"bot was started with the secret given to the kit ({SPEC})")

    def valid_move(self) -> None:
        check = self._check("valid-move", "a correctly signed POST /move is accepted",
                            "POST /move")
        answer = self._post("/move", self.move_body,
                            lambda where: signed_headers(self.secret, "POST", where,
                                                         self.move_body))
        self._expect_accepted(check, answer, self._valid_fix())
        self.checks.append(check)

    def two_secrets(self) -> None:
        check = self._check("two-secrets", "a POST /move signed with two secrets (a rotation's "
                            "grace period) is accepted", "POST /move")
        other = self.secret + b"-previous"
        answer = self._post("/move", self.move_body, lambda where: signed_headers(
            self.secret, "POST", where, self.move_body, v2_secrets=[other, self.secret]))
        self._expect_accepted(check, answer, "read X-BigTwo-Signatures as a comma-separated "
                              "list and accept the request when any v2 entry verifies (while a "
                              "rotated secret's grace period runs the arena signs with both)")
        self.checks.append(check)

    def v2_only(self) -> None:
        check = self._check("v2-only", "a POST /move signed with version 2 only (as the arena "
                            "will sign once the transition ends) is accepted", "POST /move")
        answer = self._post("/move", self.move_body, lambda where: signed_headers(
            self.secret, "POST", where, self.move_body, v1=False))
        self._expect_accepted(check, answer, "verify version 2 (X-BigTwo-Signatures, "
                              "X-BigTwo-Request-Id) and do not require the version 1 header: "
                              + self._valid_fix(), level="warn")
        self.checks.append(check)

    def unsigned(self) -> None:
        check = self._check("unsigned", "an unsigned POST /move is refused with 401",
                            "POST /move")
        answer = self._post("/move", self.move_body, lambda where: [])
        self._expect_refused(check, answer, "verify the signature of every request and answer "
                             f"401 when it is missing ({SPEC}): otherwise anyone who learns the "
                             "URL can call the bot")

    def wrong_secret(self) -> None:
        check = self._check("wrong-secret", "a POST /move signed with another secret is "
                            "refused with 401", "POST /move")
        wrong = self.secret + b"-not-this-one"
        answer = self._post("/move", self.move_body,
                            lambda where: signed_headers(wrong, "POST", where, self.move_body))
        self._expect_refused(check, answer, "compare the signature with the HMAC under your "
                             "own secret (in constant time) and refuse a mismatch with 401")

    def stale(self) -> None:
        check = self._check("stale", f"a POST /move stamped {STALE_BY_S} s ago is refused with "
                            "401", "POST /move")
        then = int(time.time()) - STALE_BY_S
        answer = self._post("/move", self.move_body, lambda where: signed_headers(
            self.secret, "POST", where, self.move_body, timestamp=then))
        self._expect_refused(check, answer, f"refuse a X-BigTwo-Timestamp more than "
                             f"{MAX_SKEW_S} s from your clock (and keep the clock synchronised)")

    def replayed(self) -> None:
        check = self._check("replayed", "the same signed POST /move sent twice is refused "
                            "the second time with 401", "POST /move")
        headers: list[tuple[str, str]] = []

        def once(where: str) -> list[tuple[str, str]]:
            if not headers:
                headers.extend(signed_headers(self.secret, "POST", where, self.move_body))
            return headers

        first = self._post("/move", self.move_body, once)
        if self._accepted_move(first) is not None:
            check.status = SKIP
            check.detail = "not run: the bot did not accept the first, valid, request"
            self.checks.append(check)
            return
        again = self._post("/move", self.move_body, once)
        self._expect_refused(check, again, "verify version 2 and remember the "
                             "X-BigTwo-Request-Id of every request you accepted for "
                             f"{REPLAY_WINDOW_S} s; refuse an id seen before with 401 "
                             "(version 1 alone cannot tell a replay; referee.wire.signing."
                             "ReplayCache does this in Python)")

    def cross_path(self) -> None:
        check = self._check("cross-path", "a POST /start signature sent to /end is refused "
                            "with 401", "POST /end")

        def wire(conn: RawConnection) -> bytes:
            signed_for = request_target(conn.target, "/start")
            headers = signed_headers(self.secret, "POST", signed_for, self.start_body)
            where = request_target(conn.target, "/end")
            return request_bytes(conn.target, "POST", where, self.start_body, headers)

        answer = self._send(wire, "POST", "/end", self.limits.call_deadline_ms / 1000)
        self._expect_refused(check, answer, "verify version 2, which covers the method and the "
                             "request target (version 1 covers only the body, so a request "
                             "captured on one path passes on another)")


__all__ = ["SigningChecks", "signed_headers"]
