"""Players: what the match runner talks to, whether a bot over HTTP or a Python function.

A :class:`Player` answers the four protocol calls (``describe`` = ``GET /``, ``start``,
``move``, ``end``) with a :class:`Reply`: the answer's JSON object or a fault, and how long it
took.  A player never raises for anything the bot does; faults are data, and the runner decides
what they cost (see :mod:`referee.runner.match`).  Nothing else is caught: an exception that is not
the bot's doing (a job queue's timeout raised by a signal handler, ``KeyboardInterrupt``, a bug
here) propagates out of the player and out of :func:`~referee.runner.match.run_match`.

* :class:`HttpPlayer` calls a bot's web server through :class:`~referee.wire.httpbot.BotClient`
  (deadline-enforcing, SSRF-guarded, optionally signing every request).  Its URL stays
  inside it: every detail it reports is scrubbed of the URL (:mod:`referee.wire.redact`), and the
  match record names the seat by the player's ``label``, never by URL.
* :class:`LocalPlayer` wraps ``choose(request) -> answer`` for tests, demos and benchmarks.  It
  cannot interrupt a slow function, but it measures it: an answer that came after the deadline
  is a ``timeout`` fault exactly as it would be over HTTP, and an exception is an
  ``exception`` fault.  The function *is* the bot, so any ``Exception`` it raises is the bot's
  fault; an exception raised asynchronously while it runs (a queue's job timeout) cannot be
  told apart from one of its own, so in-process players are for tests, demos and benchmarks,
  and the arena seats only :class:`HttpPlayer`.
"""

from __future__ import annotations

import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .httpbot import DEFAULT_ERROR_BODY_MAX, DEFAULT_MAX_BODY, BotClient, CallResult, Fault
from .netguard import DEFAULT_POLICY, NetPolicy
from .protocol import PROTOCOL_VERSION
from .redact import UrlRedactor, scrub_generic
from .signing import LEGACY_V1_DEFAULT

EXCEPTION = "exception"
"""Fault of a :class:`LocalPlayer` whose function raised."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer from a player: ``data`` (a JSON object) or a ``fault`` with a ``detail``.

    ``fault`` is a :class:`~referee.wire.httpbot.Fault` value (``"timeout"``, ``"connection"``, ...)
    or :data:`EXCEPTION`; ``latency_s`` is the wall time the call took.  ``body`` is the raw
    answer of an HTTP bot when a whole one arrived in time, or the first bytes of a non-2xx
    answer's body (empty otherwise; a caller that keeps it bounds it), never part of a match
    record.  ``status`` is the HTTP status of the answer, when one came.
    """

    data: dict[str, Any] | None
    latency_s: float
    fault: str | None = None
    detail: str = ""
    body: bytes = b""
    status: int | None = None

    @property
    def ok(self) -> bool:
        return self.fault is None

    @classmethod
    def from_call(cls, result: CallResult) -> Reply:
        fault = result.fault.value if result.fault is not None else None
        return cls(result.data, result.latency_s, fault, result.detail, result.body,
                   result.status)


class Player(ABC):
    """Something that can sit at a table.

    ``label`` is the caller's name for who sits there (the arena uses ``"bot:<id>"``); it is
    what a match record and its log say about the seat besides the bot's own description.
    ``url`` is None for in-process players and never leaves the player (see :meth:`scrub`).
    """

    url: str | None = None
    label: str | None = None

    def scrub(self, text: str) -> str:
        """``text`` made fit for a public record: without URLs or IP literals.  The runner
        passes every detail through this (a custom player's exception text included)."""
        return scrub_generic(text)

    @abstractmethod
    def describe(self, deadline_s: float) -> Reply:
        """``GET /``: ``{"protocol": 1, "name", "author", "version"}``."""

    @abstractmethod
    def start(self, info: dict[str, Any], deadline_s: float) -> Reply:
        """``POST /start`` with the body built by :func:`referee.wire.protocol.start_request`."""

    @abstractmethod
    def move(self, request: dict[str, Any], deadline_s: float) -> Reply:
        """``POST /move`` with a :func:`referee.wire.protocol.move_request` body.

        Read it, do not modify it: its history entries and rule set are shared with the other
        requests of the deal (see :class:`referee.game.view.DealView`).
        """

    @abstractmethod
    def end(self, info: dict[str, Any], deadline_s: float) -> Reply:
        """``POST /end`` with the body built by :func:`referee.wire.protocol.end_request`."""

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release connections (the runner does not call this; the owner does)."""

    def __enter__(self) -> Player:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HttpPlayer(Player):
    """A bot at ``url``, called through one pooled keep-alive :class:`BotClient`.

    ``secrets`` (current first; ``secret`` for one) sign every request and ``legacy_v1`` adds
    the version 1 header (see :mod:`referee.wire.httpbot`); ``policy`` says which
    addresses may be reached (the default allows public addresses only); ``label`` names the
    seat in the match record; ``error_body_max`` how much of a non-2xx answer's body is kept
    and ``encoder`` what writes the request bodies (:class:`BotClient`).  Every
    :class:`Reply` it returns has its detail scrubbed of the URL (a second line: the client
    builds its own texts without path or query, but a detail may still name the host or an
    address).
    """

    def __init__(
        self,
        url: str,
        *,
        secret: bytes | None = None,
        secrets: Sequence[bytes] = (),
        legacy_v1: bool = LEGACY_V1_DEFAULT,
        policy: NetPolicy = DEFAULT_POLICY,
        max_body: int = DEFAULT_MAX_BODY,
        client: BotClient | None = None,
        label: str | None = None,
        error_body_max: int = DEFAULT_ERROR_BODY_MAX,
        encoder: Callable[[Mapping[str, object]], bytes] | None = None,
    ) -> None:
        self.url = url
        self.label = label
        self._redactor = UrlRedactor([url])
        self.client = client or BotClient(url, secret=secret, secrets=secrets,
                                          legacy_v1=legacy_v1, policy=policy,
                                          max_body=max_body, error_body_max=error_body_max,
                                          encoder=encoder)

    def scrub(self, text: str) -> str:
        return self._redactor.scrub(text)

    def _reply(self, result: CallResult) -> Reply:
        reply = Reply.from_call(result)
        if not reply.detail:
            return reply
        return Reply(reply.data, reply.latency_s, reply.fault, self.scrub(reply.detail),
                     reply.body, reply.status)

    def describe(self, deadline_s: float) -> Reply:
        return self._reply(self.client.get("/", deadline_s))

    def start(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self._reply(self.client.call("/start", info, deadline_s))

    def move(self, request: dict[str, Any], deadline_s: float) -> Reply:
        return self._reply(self.client.call("/move", request, deadline_s))

    def end(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self._reply(self.client.call("/end", info, deadline_s))

    def close(self) -> None:
        self.client.close()

    def __repr__(self) -> str:
        return f"HttpPlayer(label={self.label!r})"  # no URL: reprs end up in logs


Choose = Callable[[dict[str, Any]], Any]
"""A bot as a function: a ``/move`` request in, an answer object out."""

Hook = Callable[[dict[str, Any]], Any]


class LocalPlayer(Player):
    """A bot that is a Python function, held to the same deadline rules as an HTTP bot.

    ``choose(request)`` returns the ``/move`` answer (``{"move": id}`` or ``{"cards": [...]}``);
    it must not modify the request (parts of it are shared between requests).
    ``on_start``/``on_end`` receive the ``/start``/``/end`` bodies.  Anything raised is an
    ``exception`` fault, an answer that is not a ``dict`` a ``bad_shape`` fault, and an answer
    that took longer than the deadline a ``timeout`` fault (the function is not interrupted).
    """

    def __init__(
        self,
        choose: Choose,
        *,
        name: str = "local",
        author: str = "",
        version: str = "",
        on_start: Hook | None = None,
        on_end: Hook | None = None,
        label: str | None = None,
    ) -> None:
        self.choose = choose
        self.label = label
        self.name, self.author, self.version = name, author, version
        self.on_start, self.on_end = on_start, on_end

    def describe(self, deadline_s: float) -> Reply:
        info = {
            "protocol": PROTOCOL_VERSION,
            "name": self.name,
            "author": self.author,
            "version": self.version,
        }
        return Reply(info, 0.0)

    def start(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self._run(self.on_start, info, deadline_s)

    def move(self, request: dict[str, Any], deadline_s: float) -> Reply:
        return self._run(self.choose, request, deadline_s)

    def end(self, info: dict[str, Any], deadline_s: float) -> Reply:
        return self._run(self.on_end, info, deadline_s)

    @staticmethod
    def _run(fn: Hook | None, arg: dict[str, Any], deadline_s: float) -> Reply:
        if fn is None:
            return Reply({}, 0.0)
        t0 = time.perf_counter()
        try:
            data = fn(arg)
        except Exception as exc:  # the function is the bot: its exceptions are its faults
            latency = time.perf_counter() - t0
            where = traceback.extract_tb(exc.__traceback__)[-1]
            detail = f"{type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"
            return Reply(None, latency, EXCEPTION, detail[:300])
        latency = time.perf_counter() - t0
        if latency > deadline_s:
            return Reply(
                None,
                latency,
                Fault.TIMEOUT.value,
                f"answered after {latency:.3f}s, deadline {deadline_s:.3f}s",
            )
        if not isinstance(data, dict):
            return Reply(
                None,
                latency,
                Fault.BAD_SHAPE.value,
                f"answer is {type(data).__name__}, not an object",
            )
        return Reply(data, latency)

    def __repr__(self) -> str:
        return f"LocalPlayer({self.name!r})"
