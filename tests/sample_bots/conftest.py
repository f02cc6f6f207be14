"""Fixtures: sample bots served on loopback (127.0.0.1, a free port) in a background thread."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sample_bots.sdk import BotServer, serve_in_thread


class Client:
    """A keep-alive HTTP/1.1 client for one bot server (loopback only)."""

    def __init__(self, server: BotServer) -> None:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        self.conn = http.client.HTTPConnection(host, port, timeout=10)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        self.conn.request(method, path, body=body, headers=hdrs)
        resp = self.conn.getresponse()
        raw = resp.read()
        data = json.loads(raw) if raw else None
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data

    def post(self, path: str, payload: Any, **kw: Any) -> tuple[int, dict[str, str], Any]:
        return self.request("POST", path, json.dumps(payload).encode(), **kw)

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[BotServer, Client]]]:
    """``serve(choose, **kw)`` starts a bot server and returns it with a client; both are
    closed at the end of the test."""
    started: list[tuple[BotServer, Client]] = []

    def start(choose: Callable[[dict[str, Any]], Any], **kw: Any) -> tuple[BotServer, Client]:
        kw.setdefault("name", "test-bot")
        server = serve_in_thread(choose, host="127.0.0.1", port=0, **kw)
        client = Client(server)
        started.append((server, client))
        return server, client

    yield start
    for server, client in started:
        client.close()
        server.shutdown()
        server.server_close()
