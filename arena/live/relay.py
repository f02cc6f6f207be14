"""``arena live``: the relay that fans live events out to spectators (server-sent events).

Why a process of its own: a viewer keeps its connection open for the whole match.  Served by
gunicorn, every viewer would hold one of its few threads (2 processes x 8 threads ship),
so sixteen spectators would stop the site.  Here a viewer is a coroutine and a socket
(a few KiB), and each watched stream is read from Redis once, whatever the number of
viewers: one blocking ``XREAD`` over every watched stream, on one connection.

Endpoints (behind nginx's ``location /live/``, or directly in the demo):

``GET /live/matches/<id>/events``
    The match's events (:mod:`arena.live.channel`) as ``text/event-stream``, each with its
    Redis stream id as the SSE ``id``.  The stream starts after ``Last-Event-ID`` (the header
    the browser sends when it reconnects, or ``?last=``), else at the match's beginning, and
    ends after the match's final ``end`` event.  No gap and no duplicate: a viewer joins the
    channel *before* it reads the history, and every event is sent once by id order.
    404 when the match has no live events (not started, or long over).
``GET /live/tournaments/<id>/events``
    ``fragment`` events: the tournament's live fragment (the HTML the polling page swaps in),
    read by the relay from the web app once per change for all viewers; the SSE ``id`` is the
    fragment's ETag, so a reconnecting browser gets it only if it changed.
``GET /live/healthz``
    ``{"status": "ok", "viewers": n, "channels": m}``.

Every :data:`arena.live.viewers.PUBLISH_S` the relay writes how many viewers each of its
streams has into Redis (:mod:`arena.live.viewers`), where the web's "live now" pages read
them without ever asking the relay.

Bounds (``LIVE_*`` settings): viewers in all, per channel and per client
(:func:`arena.core.clients.client_key`: an IPv6 /64 is one client); channels
watched at once; the request's size and the time to send it; each stream's lifetime (the
browser reconnects and resumes); events queued for a slow viewer (one that falls behind is
cut off and resumes when it reconnects); a heartbeat comment finds dead viewers.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import contextlib
import json
import logging
import re
import secrets
import signal
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from redis.asyncio import Redis

from arena.core import logs, metrics
from arena.core.clients import client_key
from arena.core.redis_connect import connect_async

from . import viewers as viewer_counts
from .channel import match_key, tournament_key

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 8192
"""Request line and headers together, at most (a browser's are well below 2 KiB)."""
SEND_TIMEOUT_S = 10.0
"""A viewer that accepts no bytes for this long is dropped."""
CHANNEL_LINGER_S = 10.0
"""A channel without viewers is kept this long (a reload reconnects at once)."""
FETCH_SPACING_S = 0.5
"""Least time between two reads of one tournament's fragment (a burst of changes: one read)."""
REDIS_CONNECTIONS = 16
"""Connections for history reads and wake-ups (the blocking reader has one of its own)."""
READ_BATCH = 500
"""Stream entries read per ``XREAD`` call at most."""

_ROUTE = re.compile(r"^/live/(matches|tournaments)/([1-9][0-9]{0,11})/events$")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")
REFUSALS = {503: "busy", 429: "per_ip", 404: "not_live"}
"""A refused stream's status -> the reason label of ``arena_live_streams_refused_total``."""
_STREAM_ID = re.compile(r"^[0-9]{1,15}-[0-9]{1,10}$")
_REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 429: "Too Many Requests",
            431: "Request Header Fields Too Large", 503: "Service Unavailable"}


Entry = tuple[str, dict[str, str]]
"""A stream entry as read with ``decode_responses``: its id and its fields."""


def id_key(stream_id: str) -> tuple[int, int]:
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


def sse(event: str, data: str, event_id: str | None = None) -> bytes:
    """One server-sent event (``data`` is one line of JSON: no newline inside)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n".encode()


@dataclass(frozen=True)
class RelayLimits:
    max_viewers: int = 20000
    per_channel: int = 5000
    per_ip: int = 16
    max_channels: int = 2000
    stream_max_s: float = 1800.0
    heartbeat_s: float = 15.0
    viewer_queue: int = 1024
    header_timeout_s: float = 10.0
    recheck_s: float = 5.0
    fragment_max_bytes: int = 512 * 1024
    history_max: int = 20000
    trusted_hops: int = 0

    @classmethod
    def from_config(cls, c: Mapping[str, Any]) -> RelayLimits:
        return cls(int(c["LIVE_MAX_VIEWERS"]), int(c["LIVE_MAX_VIEWERS_PER_CHANNEL"]),
                   int(c["LIVE_MAX_VIEWERS_PER_IP"]), int(c["LIVE_MAX_CHANNELS"]),
                   float(c["LIVE_STREAM_MAX_S"]), float(c["LIVE_HEARTBEAT_S"]),
                   int(c["LIVE_VIEWER_QUEUE"]), float(c["LIVE_HEADER_TIMEOUT_S"]),
                   float(c["LIVE_TOURNAMENT_RECHECK_S"]), int(c["LIVE_FRAGMENT_MAX_BYTES"]),
                   int(c["LIVE_STREAM_MAX_EVENTS"]), int(c["TRUSTED_PROXY_HOPS"]))


Item = tuple[tuple[int, int], bytes, bool]
"""An event ready to send: its id as a sortable key, its bytes, whether it ends the stream."""


class Viewer:
    """One open stream: a bounded queue of ready-to-send events, and a wake-up for its pump
    (an event came, or the viewer went away)."""

    def __init__(self, size: int) -> None:
        self.queue: collections.deque[Item] = collections.deque()
        self.size = size
        self.wake = asyncio.Event()
        self.overrun = False
        self.gone = False

    def offer(self, item: Item) -> None:
        if len(self.queue) >= self.size:
            self.overrun = True  # cut off; it resumes from its last event on reconnect
        else:
            self.queue.append(item)
        self.wake.set()

    async def watch_eof(self, reader: asyncio.StreamReader) -> None:
        """A viewer sends nothing after its request: any byte or the end means it is gone
        (noticed at once, not at the next write)."""
        with contextlib.suppress(Exception):
            await reader.read(1)
        self.gone = True
        self.wake.set()


@dataclass(eq=False)
class Channel:
    """One watched Redis stream and its viewers."""

    key: str
    kind: str
    ident: int
    last_id: str = "0-0"
    viewers: set[Viewer] = field(default_factory=set)
    ready: asyncio.Future[bool] | None = None
    backlog: list[Item] = field(default_factory=list)
    """A match's events so far, ready to send (a joining viewer's history, from memory: one
    Redis read per channel, not one per viewer)."""
    keys: list[tuple[int, int]] = field(default_factory=list)
    idle_since: float | None = None
    # tournaments only
    tag: str = ""
    state: str = ""
    fragment: bytes = b""
    poke: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def dispatch(self, item: Item) -> None:
        for v in self.viewers:
            v.offer(item)

    def remember(self, item: Item, cap: int) -> None:
        self.backlog.append(item)
        self.keys.append(item[0])
        if len(self.backlog) > cap:  # the oldest go; a viewer that needs them reads Redis
            del self.backlog[: len(self.backlog) - cap]
            del self.keys[: len(self.keys) - cap]


class HttpError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class Relay:
    """The relay's state: channels, viewers and the one Redis reader."""

    def __init__(self, redis_url: str, web_url: str, limits: RelayLimits,
                 prefix: str) -> None:
        """``prefix``: where the deployment's live streams are
        (:func:`arena.live.channel.prefix_of`)."""
        self.limits, self.prefix = limits, prefix
        self.web = urlsplit(web_url)
        # Many viewers joining at once each read their history: they queue for one of a few
        # connections (a plain pool would open one per viewer, up to its limit, then fail).
        self.redis: Redis = connect_async(redis_url, max_connections=REDIS_CONNECTIONS,
                                          pool_timeout=30, decode_responses=True,
                                          socket_connect_timeout=5)
        self.reader_redis: Redis = connect_async(redis_url, decode_responses=True,
                                                 socket_connect_timeout=5)
        self.channels: dict[str, Channel] = {}
        self.per_ip: Counter[str] = Counter()
        self.viewers = 0
        self.token = secrets.token_hex(8)
        self.wake_key = f"{prefix}:relay:{self.token}:wake"
        self._published: set[viewer_counts.Stream] = set()
        self._wake_last = "0-0"
        self._tasks: set[asyncio.Task[Any]] = set()
        self.events_in = 0

    # --- typed Redis reads (redis-py's annotations cover every decoding mode) -----------
    async def xrange(self, key: str, lo: str, hi: str = "+", count: int = 1) -> list[Entry]:
        return cast(list[Entry], await self.redis.xrange(key, min=lo, max=hi, count=count))

    async def last_entry_id(self, key: str) -> str | None:
        last = cast(list[Entry], await self.redis.xrevrange(key, count=1))
        return last[0][0] if last else None

    async def xread(self, streams: dict[str, str]) -> list[tuple[str, list[Entry]]]:
        answer = await self.reader_redis.xread(streams, count=READ_BATCH,  # type: ignore[arg-type]
                                               block=5000)
        return cast(list[tuple[str, list[Entry]]], answer or [])

    # --- the reader ----------------------------------------------------------------------
    async def wake(self) -> None:
        """Interrupt the blocking XREAD so that it takes a new channel in."""
        await self.redis.xadd(self.wake_key, {"w": "1"}, maxlen=8, approximate=False)
        await self.redis.expire(self.wake_key, 60)

    async def read_forever(self) -> None:
        backoff = 0.5
        while True:
            streams = {c.key: c.last_id for c in self.channels.values()
                       if c.ready is not None and c.ready.done() and c.ready.result()}
            streams[self.wake_key] = self._wake_last
            try:
                answer = await self.xread(streams)
                backoff = 0.5
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("live relay: reading Redis failed (%s); retrying", exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            for key, entries in answer:
                if key == self.wake_key:
                    self._wake_last = entries[-1][0]
                    continue
                ch = self.channels.get(key)
                if ch is None:
                    continue
                now_ms = time.time() * 1000
                for entry_id, fields in entries:
                    ch.last_id = entry_id
                    self.events_in += 1
                    metrics.LIVE_EVENTS.inc()
                    metrics.LIVE_LAG.observe(max(0.0, now_ms - id_key(entry_id)[0]) / 1000)
                    self._deliver(ch, entry_id, fields)
            self._sweep()

    def _deliver(self, ch: Channel, entry_id: str, fields: Mapping[str, str]) -> None:
        if ch.kind == "tournament":
            ch.poke.set()
            return
        kind, data = fields.get("t", ""), fields.get("d", "{}")
        item = (id_key(entry_id), sse(kind, data, entry_id), is_final(kind, data))
        ch.remember(item, self.limits.history_max)
        ch.dispatch(item)

    def _sweep(self) -> None:
        now = time.monotonic()
        for key, ch in list(self.channels.items()):
            if ch.viewers or ch.ready is None or not ch.ready.done():
                ch.idle_since = None
                continue
            if ch.idle_since is None:
                ch.idle_since = now
            elif now - ch.idle_since >= CHANNEL_LINGER_S:
                del self.channels[key]
                metrics.LIVE_CHANNELS.set(len(self.channels))
                if ch.task is not None:
                    ch.task.cancel()

    # --- viewer counts (for the web's "live now") -----------------------------------------
    def stream_viewers(self) -> dict[viewer_counts.Stream, int]:
        return {(ch.kind, ch.ident): len(ch.viewers) for ch in self.channels.values()
                if ch.ready is not None and ch.ready.done() and ch.ready.result()}

    async def publish_viewers(self) -> None:
        """Write this relay's counts once (:func:`arena.live.viewers.publish_commands`)."""
        counts = self.stream_viewers()
        gone = self._published - set(counts)
        pipe = self.redis.pipeline(transaction=False)
        for cmd in viewer_counts.publish_commands(self.prefix, self.token, counts, gone,
                                                  time.time()):
            pipe.execute_command(*cmd)
        await pipe.execute()
        self._published = set(counts)

    async def publish_viewers_forever(self) -> None:
        while True:
            try:
                await self.publish_viewers()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # counts are a nicety: the streams go on without them
                log.warning("live relay: writing viewer counts failed (%s)", exc)
            await asyncio.sleep(viewer_counts.PUBLISH_S)

    # --- channels --------------------------------------------------------------------------
    async def channel(self, kind: str, ident: int) -> Channel:
        key = (match_key if kind == "match" else tournament_key)(self.prefix, ident)
        ch = self.channels.get(key)
        if ch is None:
            if len(self.channels) >= self.limits.max_channels:
                raise HttpError(503, "busy", "too many live channels are watched right now")
            ch = self.channels[key] = Channel(key, kind, ident)
            ch.ready = asyncio.get_running_loop().create_future()
            try:
                ok = await self._open(ch)
            except Exception as exc:
                log.warning("live relay: %s could not be opened: %s", key, exc)
                ok = False
            ch.ready.set_result(ok)
            if not ok:
                self.channels.pop(key, None)
            metrics.LIVE_CHANNELS.set(len(self.channels))
            if ok:
                await self.wake()
        assert ch.ready is not None
        if not await asyncio.shield(ch.ready):
            raise HttpError(404, "not_live", f"{kind} {ident} has no live events")
        return ch

    async def _open(self, ch: Channel) -> bool:
        if ch.kind == "match":
            entries = await self.xrange(ch.key, "-", count=self.limits.history_max)
            if not entries:
                return False
            for entry_id, fields in entries:
                kind, data = fields.get("t", ""), fields.get("d", "{}")
                ch.remember((id_key(entry_id), sse(kind, data, entry_id), is_final(kind, data)),
                            self.limits.history_max)
            ch.last_id = entries[-1][0]
            return True
        last = await self.last_entry_id(ch.key)
        ch.last_id = last or "0-0"
        if not await self.refresh(ch):
            return False
        ch.task = asyncio.create_task(self._tournament_loop(ch))
        return True

    # --- tournaments -----------------------------------------------------------------------
    async def _tournament_loop(self, ch: Channel) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ch.poke.wait(), self.limits.recheck_s)
            ch.poke.clear()
            try:
                await self.refresh(ch)
            except Exception as exc:
                log.warning("live relay: tournament %s fragment: %s", ch.ident, exc)
            await asyncio.sleep(FETCH_SPACING_S)

    async def refresh(self, ch: Channel) -> bool:
        """Read the tournament's fragment from the web app; push it when it changed.
        False when the tournament does not exist."""
        path = f"/tournaments/{ch.ident}/live"
        status, headers, body = await http_get(self.web, path, {"If-None-Match": ch.tag}
                                               if ch.tag else {}, self.limits.fragment_max_bytes)
        if status == 404:
            return False
        if status == 304 or status != 200:
            return status == 304
        tag = headers.get("etag", "")
        ch.state = headers.get("x-tournament-state", "")
        final = ch.state in ("finished", "cancelled")
        if body is None:  # too large to push: viewers fetch it themselves
            data = json.dumps({"tag": tag, "state": ch.state})
            ch.fragment = sse("changed", data, tag)
        else:
            data = json.dumps({"tag": tag, "state": ch.state, "html": body.decode()})
            ch.fragment = sse("fragment", data, tag)
        ch.tag = tag
        ch.dispatch(((0, 0), ch.fragment, final))
        return True

    # --- viewers ---------------------------------------------------------------------------
    def client_ip(self, peer: str, headers: Mapping[str, str]) -> str:
        """The client a stream counts against: the peer, or what the trusted proxies put in
        ``X-Forwarded-For``, by the service's one rule (:func:`arena.core.clients.client_key`:
        an IPv6 /64 is one client, as for the rate limits)."""
        hops = self.limits.trusted_hops
        if hops > 0:
            chain = [x.strip() for x in headers.get("x-forwarded-for", "").split(",") if x.strip()]
            if len(chain) >= hops:
                return client_key(chain[-hops])
        return client_key(peer)

    def request_id(self, headers: Mapping[str, str]) -> str:
        """The proxy's ``X-Request-ID`` when the proxy is trusted and it is a plain token,
        else a new id (as the web app does: :mod:`arena.web.observe`)."""
        sent = headers.get("x-request-id", "") if self.limits.trusted_hops > 0 else ""
        return sent if _REQUEST_ID.match(sent) else secrets.token_hex(16)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("live relay: a stream failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"),
                                          self.limits.header_timeout_s)
        except asyncio.LimitOverrunError:
            await respond(writer, 431, "too_large", "request headers too large")
            return
        except TimeoutError:
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await respond(writer, 400, "bad_request", "not an HTTP/1.x request")
            return
        method, target = parts[0], parts[1]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        url = urlsplit(target)
        if method not in ("GET", "HEAD"):
            await respond(writer, 405, "method_not_allowed", "only GET")
            return
        if url.path == "/live/healthz":
            await respond(writer, 200, "", "", body={
                "status": "ok", "viewers": self.viewers, "channels": len(self.channels)})
            return
        route = _ROUTE.match(url.path)
        if route is None:
            await respond(writer, 404, "not_found", "no such live stream")
            return
        kind = "match" if route.group(1) == "matches" else "tournament"
        ident = int(route.group(2))
        # This connection's task has a context of its own: its log lines name the stream.
        logs.REQUEST_ID.set(self.request_id(headers))
        if kind == "match":
            logs.MATCH_ID.set(ident)
        query = parse_qs(url.query)
        peer = writer.get_extra_info("peername")
        ip = self.client_ip(str(peer[0]) if peer else "?", headers)
        try:
            if self.viewers >= self.limits.max_viewers:
                raise HttpError(503, "busy", "too many live viewers right now")
            if self.per_ip[ip] >= self.limits.per_ip:
                raise HttpError(429, "too_many_streams",
                                f"at most {self.limits.per_ip} live streams per client "
                                "(an IPv6 /64 counts as one)")
            ch = await self.channel(kind, ident)
            if len(ch.viewers) >= self.limits.per_channel:
                raise HttpError(503, "busy", f"too many viewers of this {kind}")
        except HttpError as exc:
            metrics.LIVE_REFUSED.labels(REFUSALS.get(exc.status, "other")).inc()
            log.info("live stream of %s %s refused: %s", kind, ident, exc.code,
                     extra={"status": exc.status})
            await respond(writer, exc.status, exc.code, exc.message)
            return
        last = headers.get("last-event-id") or (query.get("last") or query.get("tag") or [""])[0]
        viewer = Viewer(self.limits.viewer_queue)
        ch.viewers.add(viewer)
        self.viewers += 1
        metrics.LIVE_VIEWERS.set(self.viewers)
        self.per_ip[ip] += 1
        eof = asyncio.create_task(viewer.watch_eof(reader))
        opened = time.monotonic()
        log.info("live stream of %s %s opened", kind, ident)
        try:
            if kind == "match":
                await self.stream_match(writer, ch, viewer, last)
            else:
                await self.stream_tournament(writer, ch, viewer, last)
        finally:
            eof.cancel()
            ch.viewers.discard(viewer)
            self.viewers -= 1
            metrics.LIVE_VIEWERS.set(self.viewers)
            self.per_ip[ip] -= 1
            if self.per_ip[ip] <= 0:
                del self.per_ip[ip]
            if viewer.overrun:
                metrics.LIVE_CUT_OFF.inc()
            log.info("live stream of %s %s closed after %.1f s%s", kind, ident,
                     time.monotonic() - opened, " (cut off: too far behind)"
                     if viewer.overrun else "")

    async def stream_match(self, writer: asyncio.StreamWriter, ch: Channel, viewer: Viewer,
                           last: str) -> None:
        after = last if _STREAM_ID.match(last) else "0-0"
        sent = id_key(after)
        # The viewer joined the channel above, and takes the channel's backlog now, in the
        # same step (no await between): every event is in one or the other, exactly once.
        if ch.keys and (sent >= ch.keys[0] or len(ch.keys) < self.limits.history_max):
            history = ch.backlog[bisect.bisect_right(ch.keys, sent):]
            before = ch.backlog[bisect.bisect_right(ch.keys, sent) - 1] if sent >= ch.keys[0] \
                else None
        else:  # older than the backlog: from Redis (events that came meanwhile are deduplicated)
            entries = await self.xrange(ch.key, f"({after}", count=self.limits.history_max)
            history = [(id_key(i), sse(f.get("t", ""), f.get("d", "{}"), i),
                        is_final(f.get("t", ""), f.get("d", "{}"))) for i, f in entries]
            before = None
        if not history and before is not None and before[0] == sent and before[2]:
            # Reconnected after the final event: nothing more will come (204 stops it).
            await respond(writer, 204, "", "")
            return
        await send(writer, open_stream_head())
        final = False
        for start in range(0, len(history), 256):
            chunk = history[start:start + 256]
            sent, final = chunk[-1][0], chunk[-1][2]
            await send(writer, b"".join(x[1] for x in chunk))
        if final:
            return
        await self.pump(writer, viewer, sent)

    async def stream_tournament(self, writer: asyncio.StreamWriter, ch: Channel,
                                viewer: Viewer, tag: str) -> None:
        await send(writer, open_stream_head())
        if ch.fragment and tag != ch.tag:
            await send(writer, ch.fragment)
        if ch.state in ("finished", "cancelled"):
            return
        await self.pump(writer, viewer, (0, 0), ordered=False)

    async def pump(self, writer: asyncio.StreamWriter, viewer: Viewer, sent: tuple[int, int],
                   *, ordered: bool = True) -> None:
        """Send the viewer's queued events until the stream ends (heartbeats in between)."""
        ends_at = time.monotonic() + self.limits.stream_max_s
        while True:
            viewer.wake.clear()
            out: list[bytes] = []
            final = False
            while viewer.queue and not final:
                key, payload, final = viewer.queue.popleft()
                if ordered and key <= sent:
                    continue  # already sent with the history
                sent = key
                out.append(payload)
            if out:
                await send(writer, b"".join(out))
            left = ends_at - time.monotonic()
            if final or viewer.gone or viewer.overrun or left <= 0:
                return
            try:
                await asyncio.wait_for(viewer.wake.wait(), min(left, self.limits.heartbeat_s))
            except TimeoutError:
                await send(writer, b": ping\n\n")


def is_final(kind: str, data: str) -> bool:
    """The event after which a match stream ends: its ``end`` with a final state."""
    return kind == "end" and '"state":"stopped"' not in data


def open_stream_head() -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
            b"Access-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n"
            b"retry: 2000\n\n")


WRITE_BUFFER_BYTES = 64 * 1024
"""Bytes a viewer's socket may hold unsent before its stream waits for it to drain."""


async def send(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(data)
    if writer.transport.get_write_buffer_size() > WRITE_BUFFER_BYTES:
        await asyncio.wait_for(writer.drain(), SEND_TIMEOUT_S)


async def respond(writer: asyncio.StreamWriter, status: int, code: str, message: str,
                  body: Mapping[str, Any] | None = None) -> None:
    payload = b"" if status == 204 else json.dumps(
        body if body is not None else {"error": {"code": code, "message": message}}).encode()
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            "Cache-Control: no-store\r\nAccess-Control-Allow-Origin: *\r\n"
            "Connection: close\r\n\r\n")
    await send(writer, head.encode() + payload)


async def http_get(web: Any, path: str, headers: Mapping[str, str],
                   max_bytes: int) -> tuple[int, dict[str, str], bytes | None]:
    """A small HTTP/1.1 GET to the web app (one connection per call).  The body is None
    when it is larger than ``max_bytes``."""
    host, port = web.hostname or "127.0.0.1", web.port or 80
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
    try:
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {web.netloc}\r\n{extra}"
                     "Accept: text/html\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        raw = b""
        limit = max_bytes + 16384
        while len(raw) <= limit:
            chunk = await asyncio.wait_for(reader.read(65536), 15)
            if not chunk:
                break
            raw += chunk
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if len(body) > max_bytes:
        return status, hdrs, None
    return status, hdrs, body


async def serve(relay: Relay, host: str, port: int,
                ready: asyncio.Future[tuple[str, int]] | None = None) -> None:
    server = await asyncio.start_server(relay.handle, host, port, limit=MAX_REQUEST_BYTES,
                                        backlog=4096)
    reader = asyncio.create_task(relay.read_forever())
    counter = asyncio.create_task(relay.publish_viewers_forever())
    addr = server.sockets[0].getsockname()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set_result((addr[0], addr[1]))
    # The line arena.ops.procs.start_relay (and an operator) waits for: a log line, so that
    # with LOG_FORMAT=json it is a JSON line like every other.
    log.info("live relay listening on http://%s:%s/live/", addr[0], addr[1])
    try:
        async with server:
            await stop.wait()
    finally:
        reader.cancel()
        counter.cancel()
        server.close()
        await relay.redis.aclose()
        await relay.reader_redis.aclose()
