"""A small blocking server-sent events reader for the live tests (raw socket, no library):
what a browser's EventSource does, made inspectable."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Event:
    id: str | None
    event: str
    data: str

    @property
    def json(self) -> Any:
        return json.loads(self.data)


class Stream:
    """One open ``GET`` of an event stream; ``status`` and ``headers`` once opened."""

    def __init__(self, url: str, last_event_id: str | None = None, timeout_s: float = 60.0,
                 headers: dict[str, str] | None = None) -> None:
        u = urlsplit(url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 80),
                                             timeout=timeout_s)
        extra = dict(headers or {})
        if last_event_id is not None:
            extra["Last-Event-ID"] = last_event_id
        lines = "".join(f"{k}: {v}\r\n" for k, v in extra.items())
        path = u.path + (f"?{u.query}" if u.query else "")
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\n"
                          f"Accept: text/event-stream\r\n{lines}\r\n".encode())
        self.file = self.sock.makefile("rb")
        status_line = self.file.readline().decode("latin-1")
        self.status = int(status_line.split(" ")[1])
        self.headers: dict[str, str] = {}
        while True:
            line = self.file.readline().decode("latin-1").strip()
            if not line:
                break
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.chunked = self.headers.get("transfer-encoding", "") == "chunked"
        self._buf = b""

    def _lines(self) -> Iterator[str]:
        while True:
            if self.chunked:
                size_line = self.file.readline()
                if not size_line:
                    return
                size = int(size_line.strip() or b"0", 16)
                if size == 0:
                    return
                self._buf += self.file.read(size)
                self.file.readline()
                while b"\n" in self._buf:
                    line, _, self._buf = self._buf.partition(b"\n")
                    yield line.decode()
            else:
                line = self.file.readline()
                if not line:
                    return
                yield line.decode().rstrip("\n")

    def events(self) -> Iterator[Event]:
        """Events until the server closes the stream (comments are skipped)."""
        ev_id: str | None = None
        kind, data = "message", []
        for line in self._lines():
            if line == "":
                if data:
                    yield Event(ev_id, kind, "\n".join(data))
                ev_id, kind, data = None, "message", []
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                ev_id = value
            elif field == "event":
                kind = value
            elif field == "data":
                data.append(value)

    def body(self) -> bytes:
        return self.file.read()

    def close(self) -> None:
        self.file.close()
        self.sock.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
