"""The conformance kit: a battery of checks that tells a bot's author, before registering,
whether the bot will survive the arena (``python -m referee conformance URL``).

Families of checks, in the order they run (``docs/conformance.md`` lists every check):

* ``phases``: ``GET /`` describes the bot; ``POST /start`` and ``POST /end`` are answered.
* ``moves``: a ``/move`` of every shape each preset produces (:mod:`.move_shapes`: opening
  leads, answers to a play, decisions before play, out-of-turn bomb offers, two- and
  three-player deals, spare cards, stock draws), each answered legally within the deadline.
* ``history``: a late-deal request with a long history.
* ``forward``: requests with fields the bot cannot know yet, at several levels (a later
  referee may add fields within protocol 1): the answers must not change.
* ``keepalive``: several requests on one connection.
* ``signing`` (with ``--secret``): valid signatures accepted; unsigned, wrongly signed, stale,
  replayed and cross-path requests refused with 401 (:mod:`.conformance_signing`).
* ``latency``: the 95th percentile of each call type against its deadline.

Normal calls go through the arena's own caller, :class:`referee.wire.httpbot.BotClient`, and
are judged by the referee's own judge (:mod:`.judging`), so a fault reads here as it would in a
match.  Only the requests that caller never sends go through :mod:`.rawhttp`.

A check is ``pass``, ``warn`` (the arena copes, but the bot loses something: time, matches
when a transition ends), ``fail`` (the bot will collect strikes or be refused) or ``skip``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from referee.game.presets import find_ruleset
from referee.game.view import wire_bytes
from referee.runner.faults import BAD_DESCRIPTION, fault_line, fault_name
from referee.runner.health import NO_ANSWER_FAULTS
from referee.runner.match import Limits
from referee.wire.httpbot import BotClient, CallResult, Fault
from referee.wire.netguard import GuardError, NetPolicy
from referee.wire.protocol import check_description, end_request, start_request

from .advice import PHASE_HINTS, fix_for
from .conformance_report import (
    FAIL,
    KIT_VERSION,
    PASS,
    SKIP,
    WARN,
    WARN_RATIO,
    Check,
    Report,
    deadline_ms,
    dumps,
)
from .conformance_signing import SigningChecks, signed_headers
from .judging import judge_call
from .move_shapes import Sample, all_samples, long_history
from .rawhttp import RawConnection, request_bytes, request_target

MAX_TIMEOUTS_IN_A_ROW = 3
"""After this many ``/move`` timeouts in a row the remaining move checks are skipped."""

KEEPALIVE_REQUESTS = 3
"""Requests the keep-alive check sends on one connection."""

UNKNOWN_VALUE: dict[str, Any] = {"added": "later", "list": [1, "two", None], "flag": True}
"""The value of every unknown field the forward-compatibility checks add."""


def add_unknown_fields(request: Mapping[str, Any], name: str = "x_future_field"
                       ) -> dict[str, Any]:
    """A deep copy of ``request`` with an unknown field at the top, in every nested object it
    holds (rules and options, table, each trick, history and legal-move entry, seats...),
    and an unknown field in the copy's ``rules.options``."""
    out: dict[str, Any] = copy.deepcopy(dict(request))

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in list(value.values()):
                walk(v)
            value[name] = copy.deepcopy(UNKNOWN_VALUE)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(out)
    return out


class Kit:
    """Runs the battery against one URL (see the module docstring); :meth:`run` returns the
    :class:`Report`."""

    def __init__(
        self,
        url: str,
        *,
        secret: bytes | None = None,
        policy: NetPolicy | None = None,
        limits: Limits | None = None,
        progress: Callable[[Check], None] | None = None,
    ) -> None:
        self.url = url
        self.secret = secret
        self.policy = policy or NetPolicy()
        self.limits = limits or Limits()
        self.progress = progress
        self.report = Report(url, self.limits, secret is not None)
        self.client = BotClient(url, secret=secret, policy=self.policy)
        self._timeouts_in_a_row = 0
        self._stopped = ""
        """Why the remaining BotClient checks are skipped (nothing answers), or empty."""

    # --- bookkeeping --------------------------------------------------------------------
    def add(self, check: Check) -> Check:
        self.report.checks.append(check)
        if self.progress is not None:
            self.progress(check)
        return check

    def _timed(self, call: str, result: CallResult) -> None:
        if result.ok:
            self.report.latencies.setdefault(call, []).append(result.latency_s * 1000)

    def _call(self, path: str, payload: Mapping[str, Any]) -> CallResult:
        deadline = deadline_ms(f"POST {path}", self.limits) / 1000
        result = self.client.call(path, payload, deadline)
        self._timed(f"POST {path}", result)
        return result

    def _transport_fail(self, check: Check, result: CallResult) -> Check:
        fault = result.fault.value if result.fault is not None else "connection"
        check.status = FAIL
        check.detail = fault_line(fault, result.detail, result.status)
        check.fix = fix_for(fault, result.status)
        return check

    # --- the battery --------------------------------------------------------------------
    def run(self) -> Report:
        try:
            samples = all_samples(self.limits)
            self.describe()
            self.start(samples[0])
            for sample in samples:
                self.move(sample)
            self.history()
            self.forward(samples)
            self.keepalive(samples[0])
            self.signing(samples[0])
            self.end()
            self.latency()
        finally:
            self.client.close()
        return self.report

    def describe(self) -> None:
        check = Check("describe", "phases", "GET / describes the bot", PASS, call="GET /")
        result = self.client.get("/", self.limits.call_deadline_ms / 1000)
        self._timed("GET /", result)
        check.latency_ms = round(result.latency_s * 1000, 3)
        if not result.ok:
            self._transport_fail(check, result)
            fault = result.fault.value if result.fault is not None else ""
            if result.status is None and (fault in NO_ANSWER_FAULTS or fault in (
                    Fault.DNS.value, Fault.REFUSED_ADDRESS.value, Fault.BAD_URL.value)):
                self._stopped = "nothing answered GET / (see the first check)"
            elif result.status == 401:
                self._stopped = ("the bot refused GET / with 401: it verifies signatures, "
                                 "so " + ("check the --secret given" if self.secret else
                                          "run the kit with --secret and its secret"))
        else:
            problem = check_description(result.data)
            if problem is not None:
                check.status = FAIL
                check.detail = fault_line(BAD_DESCRIPTION, problem)
                check.fix = fix_for(BAD_DESCRIPTION)
            else:
                data = result.data or {}
                check.detail = (f"{data['name'][:64]!r} by {data['author'][:64]!r}, "
                                f"version {data['version'][:64]!r}")
        self.add(check)

    def _skipped(self, check: Check) -> bool:
        if self._stopped:
            check.status, check.detail = SKIP, f"not run: {self._stopped}"
            self.add(check)
            return True
        return False

    def start(self, sample: Sample) -> None:
        check = Check("start", "phases", "POST /start is answered", PASS, call="POST /start")
        if self._skipped(check):
            return
        result = self._call("/start", self.start_body(sample))
        check.latency_ms = round(result.latency_s * 1000, 3)
        if not result.ok:
            self._transport_fail(check, result)
            check.status = WARN
            check.detail += (" (the arena notes a failed /start in the match log but does not "
                             "strike it; the bot misses the seats and limits it carries)")
        self.add(check)

    def start_body(self, sample: Sample) -> dict[str, Any]:
        rules = find_ruleset(sample.rules)
        seats = [{"seat": s, "name": f"bot-{s}", "author": "conformance", "version": "1"}
                 for s in range(rules.players)]
        limits = {"deadline_ms": self.limits.deadline_ms,
                  "time_bank_ms": self.limits.time_bank_ms,
                  "max_strikes": self.limits.max_strikes}
        return start_request(match_id=sample.request["match_id"], seat=sample.request["seat"],
                             rules=rules, deals=2, seats=seats, limits=limits)

    def end_body(self, sample_rules: str = "standard") -> dict[str, Any]:
        standings = [{"rank": i + 1, "seat": i, "name": f"bot-{i}", "score": 30 - 20 * i,
                      "forfeited": False} for i in range(4)]
        return end_request(match_id="m-conformance0000", seat=0, scores=[30, 10, -10, -30],
                           standings=standings, deals=[], strikes=[0, 0, 0, 0], forfeited=[])

    def _move_check(self, check: Check, request: Mapping[str, Any], hint: str = "") -> None:
        """Send ``request`` to ``/move`` through the arena's caller and judge the answer."""
        if self._skipped(check):
            return
        if self._timeouts_in_a_row >= MAX_TIMEOUTS_IN_A_ROW:
            check.status = SKIP
            check.detail = f"not run: {MAX_TIMEOUTS_IN_A_ROW} /move calls in a row timed out"
            self.add(check)
            return
        result = self._call("/move", request)
        verdict = judge_call(result, request)
        check.latency_ms = verdict.latency_ms
        self._timeouts_in_a_row = (
            self._timeouts_in_a_row + 1 if verdict.fault == Fault.TIMEOUT.value else 0)
        if verdict.ok:
            check.detail = f"played {verdict.move}"
        else:
            check.status = FAIL
            check.detail = f"{fault_name(verdict.fault)}: {verdict.words}"
            check.fix = verdict.fix + (f" {hint}" if hint else "")
        self.add(check)

    def move(self, sample: Sample) -> None:
        where = f"{sample.rules} ({sample.players} players)"
        check = Check(f"move:{sample.rules}:{'+'.join(sample.tags)}", "moves",
                      f"POST /move, {where}: {sample.words()}", PASS, call="POST /move")
        hint = " ".join(PHASE_HINTS[t] for t in sample.tags if t in PHASE_HINTS)
        self._move_check(check, sample.request, hint)

    def history(self) -> None:
        request = long_history(self.limits)
        size = len(request.encoded())
        check = Check("history:long", "history",
                      f"POST /move late in the last deal, {len(request['history'])} turns of "
                      f"history ({size} bytes)", PASS, call="POST /move")
        self._move_check(check, request, "A request carries the deal's whole history: read "
                         "bodies of any size up to 1 MiB and do not re-scan the history on every "
                         "move.")

    def forward(self, samples: Sequence[Sample]) -> None:
        follow = next((s for s in samples if "follow" in s.tags), samples[0])
        check = Check("forward:move", "forward", "POST /move with fields the bot cannot know "
                      "yet (at the top, in rules and options, table, history, legal moves)",
                      PASS, call="POST /move")
        self._move_check(check, add_unknown_fields(follow.request),
                         "Ignore fields you do not know: a later referee may add fields "
                         "within protocol 1 (docs/protocol.md).")
        for path, body in (("/start", self.start_body(follow)), ("/end", self.end_body())):
            check = Check(f"forward:{path.strip('/')}", "forward",
                          f"POST {path} with fields the bot cannot know yet", PASS,
                          call=f"POST {path}")
            if self._skipped(check):
                continue
            result = self._call(path, add_unknown_fields(body))
            check.latency_ms = round(result.latency_s * 1000, 3)
            if not result.ok:
                self._transport_fail(check, result)
                check.status = WARN
                check.fix = ("ignore fields you do not know: a later referee may add fields "
                             "within protocol 1; " + check.fix)
            self.add(check)

    def keepalive(self, sample: Sample) -> None:
        check = Check("keepalive", "keepalive", f"{KEEPALIVE_REQUESTS} requests on one "
                      "connection (keep-alive, as the arena holds one per bot)", PASS,
                      call="POST /move")
        if self._skipped(check):
            return
        body = sample.request.encoded()
        try:
            conn = RawConnection(self.url, self.policy, self.limits.call_deadline_ms / 1000)
        except GuardError as exc:
            check.status, check.detail = SKIP, f"not run: {exc}"
            self.add(check)
            return
        where = request_target(conn.target, "/move")
        deadline = self.limits.deadline_ms / 1000
        with conn:
            if conn.error:
                check.status, check.detail = FAIL, conn.error
                check.fix = fix_for(Fault.CONNECTION.value)
                self.add(check)
                return
            for i in range(KEEPALIVE_REQUESTS):
                headers = signed_headers(self.secret, "POST", where, body) if self.secret else []
                answer = conn.exchange(request_bytes(conn.target, "POST", where, body, headers),
                                       "POST", deadline)
                if answer.status is None and answer.closed and i > 0:
                    check.status = WARN
                    check.detail = (f"the bot closed the connection after request {i} without "
                                    "saying so (no Connection: close): the arena reconnects, "
                                    "at the cost of a handshake, and may send a request twice")
                    check.fix = ("keep connections open (HTTP/1.1 keep-alive), or say "
                                 "Connection: close in the answer before closing")
                    break
                if answer.status is None:
                    check.status = FAIL
                    check.detail = (f"request {i + 1} on the connection got {answer.error}, "
                                    "though the bot had not said it would close it")
                    check.fix = ("answer every request on a kept-alive connection (HTTP/1.1): "
                                 "read each request's whole body (Content-Length), answer "
                                 "with a Content-Length, and say Connection: close if you "
                                 "close")
                    break
                if answer.status != 200:
                    check.status = FAIL
                    check.detail = f"request {i + 1} on the connection: HTTP {answer.status}"
                    check.fix = fix_for(Fault.HTTP_STATUS.value, answer.status)
                    if i > 0:
                        check.fix = (f"the first request on the connection was answered, "
                                     f"request {i + 1} was not: answer every request on a "
                                     "kept-alive connection as the first (read each whole "
                                     "body by its Content-Length, reset per-request state)")
                    break
                if not answer.keep_alive:
                    if i + 1 < KEEPALIVE_REQUESTS:
                        check.status = WARN
                        check.detail = (f"the bot closed the connection after request {i + 1} "
                                        "(Connection: close, HTTP/1.0, or no length)")
                        check.fix = ("keep connections open (HTTP/1.1 keep-alive, answers "
                                     "with Content-Length): each new connection costs a TCP "
                                     "and a TLS handshake out of the move's deadline")
                    break
            else:
                check.detail = f"{KEEPALIVE_REQUESTS} answers on one connection"
        self.add(check)

    def signing(self, sample: Sample) -> None:
        if self.secret is None:
            self.add(Check("signing", "signing", "signed, unsigned, wrongly signed and replayed "
                           "requests", SKIP,
                           detail="not run: no --secret given",
                           fix="run the kit again with --secret S, S being the secret the bot "
                               "verifies (the arena shows it once, at registration), and start "
                               "the bot with it"))
            return
        if self._skipped(Check("signing", "signing", "signed, unsigned, wrongly signed and "
                               "replayed requests", SKIP)):
            return
        start = wire_bytes(self.start_body(sample))
        signing = SigningChecks(self.url, self.policy, self.limits, self.secret, sample, start)
        for check in signing.run():
            self.add(check)

    def end(self) -> None:
        check = Check("end", "phases", "POST /end is answered", PASS, call="POST /end")
        if self._skipped(check):
            return
        result = self._call("/end", self.end_body())
        check.latency_ms = round(result.latency_s * 1000, 3)
        if not result.ok:
            self._transport_fail(check, result)
            check.status = WARN
            check.detail += " (the arena notes a failed /end in the match log, no strike)"
        self.add(check)

    def latency(self) -> None:
        for row in self.report.latency_rows():
            call, limit = row["call"], row["deadline_ms"]
            check = Check(f"latency:{call}", "latency", f"{call} answers well within its "
                          f"deadline ({limit} ms)", PASS, call=call, latency_ms=row["p95_ms"])
            figures = (f"p50 {row['p50_ms']:.0f} ms, p95 {row['p95_ms']:.0f} ms, max "
                       f"{row['max_ms']:.0f} ms over {row['calls']} calls from this machine")
            check.detail = figures
            if row["p95_ms"] > WARN_RATIO * limit:
                check.status = WARN
                check.detail = (f"{figures}: p95 is {row['p95_ms'] / limit:.0%} of the deadline "
                                "(the arena's network adds its own round trip)")
                check.fix = ("answer faster: host the bot close to the arena, keep connections "
                             "open, and cap thinking time well under deadline_ms")
            self.add(check)


__all__ = ["FAIL", "KIT_VERSION", "PASS", "SKIP", "WARN", "Check", "Kit", "Report",
           "add_unknown_fields", "deadline_ms", "dumps"]
