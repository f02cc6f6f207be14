"""SDK bots (``sample_bots.sdk``) with one thing changed, on loopback, for kit tests.

The SDK's server is a ``ThreadingHTTPServer`` whose handler class can be swapped after it is
made: each helper here subclasses :class:`sample_bots.sdk.BotHandler` to change exactly one
behaviour (how it verifies signatures, a condition under which it fails a ``/move``, how it
treats connections), so a test shows that the conformance kit catches that one thing.

``V2Handler`` verifies signatures with version 2 (``referee.wire.signing.verify_v2``, a
:class:`~referee.wire.signing.ReplayCache` per server) and ignores version 1 whenever version 2
is there: what the SDK does once it knows version 2.  ``V1Handler`` verifies version 1 only
(what the SDK did before).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from referee.wire.signing import (
    REQUEST_ID_HEADER,
    SIGNATURE_HEADER,
    SIGNATURES_HEADER,
    TIMESTAMP_HEADER,
    ReplayCache,
    verify_signature,
    verify_v2,
)
from sample_bots.sdk import BotHandler, BotServer, make_server


def first_legal(request: dict[str, Any]) -> str:
    return str(request["legal_moves"][0]["id"])


def last_legal(request: dict[str, Any]) -> str:
    return str(request["legal_moves"][-1]["id"])


class V2Handler(BotHandler):
    """Verifies version 2 signatures and refuses replays; version 1 is ignored, except on a
    request that carries no version 2 header at all (then checked as version 1).  The SDK
    itself now verifies version 2 and refuses version-1-only requests; this handler stays
    for the kit's tests that change one thing around it."""

    def _problem(self, body: bytes) -> tuple[str, str] | None:
        server = self.server
        if not server.secrets:
            return None
        if self.headers.get(SIGNATURES_HEADER) is None:
            return V1Handler._problem(self, body)  # type: ignore[arg-type]
        cache = getattr(server, "replay_cache", None)
        if cache is None:
            cache = server.replay_cache = ReplayCache()  # type: ignore[attr-defined]
        return verify_v2(server.secrets, self.command, self.path, body,
                         timestamp=self.headers.get(TIMESTAMP_HEADER),
                         request_id=self.headers.get(REQUEST_ID_HEADER),
                         signatures=self.headers.get(SIGNATURES_HEADER),
                         replay_cache=cache)


class V1Handler(BotHandler):
    """Verifies version 1 only: refuses unsigned, wrong and stale requests, not replays."""

    def _problem(self, body: bytes) -> tuple[str, str] | None:
        server = self.server
        if not server.secrets:
            return None
        ok = any(verify_signature(key, self.headers.get(TIMESTAMP_HEADER) or "", body,
                                  self.headers.get(SIGNATURE_HEADER) or "")
                 for key in server.secrets)
        return None if ok else ("bad_signature", "version 1 signature does not verify")


class Refuses403Handler(V2Handler):
    """Verifies version 2 but refuses with 403 instead of 401."""

    def _authorised(self, body: bytes) -> bool:
        problem = self._problem(body)
        if problem is not None:
            self._send(403, {"error": problem[1]})
        return problem is None


def failing_when(predicate: Callable[[dict[str, Any]], bool], status: int = 500
                 ) -> type[BotHandler]:
    """A handler whose ``/move`` answers ``status`` when ``predicate(request)`` holds."""

    class Failing(BotHandler):
        def _move(self, data: dict[str, Any]) -> None:
            if predicate(data):
                self._error(status, "this bot cannot handle this request")
                return
            super()._move(data)

    return Failing


def failing_start_end_when(predicate: Callable[[dict[str, Any]], bool], status: int = 400
                           ) -> type[BotHandler]:
    """A handler whose ``/start`` and ``/end`` answer ``status`` when ``predicate(body)``
    holds (the SDK gives them to hooks; here the check runs first)."""

    class Failing(BotHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            path = self._endpoint()
            if path in ("/start", "/end"):
                import json

                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                if predicate(json.loads(body)):
                    self._error(status, "unexpected field")
                else:
                    self._send(200, {})
                return
            super().do_POST()

    return Failing


class ClosingHandler(BotHandler):
    """Answers ``Connection: close`` and closes after every answer."""

    def end_headers(self) -> None:
        self.send_header("Connection", "close")
        super().end_headers()


@contextlib.contextmanager
def sdk_bot(handler: type[BotHandler] = BotHandler, choose: Callable[[dict[str, Any]], str]
            = first_legal, **kw: Any) -> Iterator[BotServer]:
    """An SDK bot on 127.0.0.1 (a free port) served by ``handler``, stopped at the end."""
    server = make_server(choose, name=kw.pop("name", "kit-test"), **kw)
    server.RequestHandlerClass = handler
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
