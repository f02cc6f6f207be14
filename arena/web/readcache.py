"""Whole GET responses kept per web process for at most ``READ_CACHE_S`` seconds.

Why
---
Public pages and API reads are the same for every visitor, and a popular one (the
leaderboard, the home page, a busy bot) is asked for many times a second.  Each render costs
5-50 ms of one core (queries, ORM objects, Jinja or JSON) even when every query is indexed;
on a small machine sixteen visitors at once queue behind each other's renders.  With this
cache a process renders a URL at most about once per ``READ_CACHE_S`` and answers the
other requests from memory in well under a millisecond.

Staleness bound
---------------
An answer is never older than ``READ_CACHE_S`` seconds, counted from the moment its render
*started* (when its data was read).  A request that changed what pages show - a transaction
of it that changed such rows committed, as the storage layer reports (:mod:`arena.core.changes`),
whatever the method and status - empties this process's cache and stales every process's
shared renders at once, and a render that began before that change is not stored, so a
writer sees its own change.  A request that changed nothing (a sign-out, a refused form, a
pause of a paused bot, a replayed ``Idempotency-Key``) empties nothing: a flood of them
cannot keep pages uncached for everyone.  ``READ_CACHE_S = 0`` turns the
cache off.  (A version counter instead of a time bound would miss on nearly every hit at
volume: ratings change with every finished match, several times a second.)

What is cached
--------------
Only what is the same for everyone: a GET (or HEAD) without an ``Authorization`` header,
without conditional headers and without a signed-in session (:func:`cacheable_request`),
answered 200, not streamed, without ``Set-Cookie`` or a ``Cache-Control`` of
``no-store``/``no-cache``/``private``.  Pages with a form carry the visitor's CSRF token
(from the session cookie): a shared render writes :data:`TOKEN_SLOT` in its place
(:func:`visitor_token`), and every answer, stored or not, gets the visitor's own token
there.  Never cached: the probes and a submission's check
(polled for its outcome), listed in :data:`NEVER` by URL rule, and whatever a view marks
``Cache-Control: no-cache``, such as the tournament live fragment (its polls carry its ETag,
and its own render cache, :class:`arena.routes.tournaments.RenderCache`, answers them).  The
key is the scheme, host, path and query string as sent.

Shared tier
-----------
On a miss, the process asks the deployment's shared renders in Redis
(:mod:`arena.web.sharedcache`, ``READ_CACHE_SHARED``) before rendering, and stores its own
render there too: one render per URL per ``READ_CACHE_S`` for every process and machine,
within the same bound, and a write through any process stales every earlier render.

Concurrent misses of one key render it once: the others wait for that render (up to
``WAIT_S``) and share it.  An entry past half its life is rendered anew by the next request
while the others go on getting it, so a page in steady demand is never waited for.  The
newest entries up to ``READ_CACHE_MAX_BYTES`` are kept.

Rate limits still count cached answers: :func:`init_app` wraps the views before
:func:`arena.web.limits.init_app` wraps them with their limits.
"""

from __future__ import annotations

import functools
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, current_app, g, request, session

from arena.core import metrics
from arena.core.changes import state_changed
from arena.core.queue import get_queue
from arena.core.rediskeys import namespace_of

from .sharedcache import SharedTier, shared_redis

NEVER = frozenset({
    "/healthz",
    "/readyz",
    "/api/bots/<id:bot_id>/check",
})
"""URL rules whose answers must be fresh on every request (see the module docstring)."""
WAIT_S = 10.0
"""How long a request waits for another thread's render of the same key before rendering
itself."""
TOKEN_SLOT = "csrfslot" + secrets.token_hex(16)
"""Stands for the visitor's CSRF token in a stored render (letters and digits: it passes
autoescaping unchanged); each answer gets the visitor's own token in its place."""
CONDITIONAL = ("If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since",
               "If-Range", "Range")
UNCACHEABLE_CONTROL = ("no-store", "no-cache", "private")
ANONYMOUS_SESSION_KEYS = frozenset({"csrf"})
"""Session keys every visitor may carry and a shared render may still answer (the CSRF token
is filled in per visitor); any other key makes the request the visitor's own."""


@dataclass(frozen=True)
class Entry:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    stored: float
    """Clock time at which the render that made it started."""


class ReadCache:
    """The entries of one app in one process (thread-safe)."""

    def __init__(self, max_age_s: float, max_bytes: int,
                 clock: Callable[[], float] = time.monotonic,
                 shared: SharedTier | None = None) -> None:
        self.max_age_s = max_age_s
        self.max_bytes = max_bytes
        self.clock = clock
        self.shared = shared
        """The deployment-wide tier (:mod:`arena.web.sharedcache`), asked on every miss here."""
        self.hits = 0
        self.shared_hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[str, Entry] = OrderedDict()
        self._bytes = 0
        self._generation = 0
        self._inflight: dict[str, threading.Event] = {}

    def clear(self) -> None:
        """Forget everything, and refuse renders that started before now (here and, through
        the shared tier, in every process)."""
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self._generation += 1
        if self.shared is not None:
            self.shared.bump()

    def _fresh(self, key: str, now: float) -> Entry | None:
        entry = self._items.get(key)
        if entry is None:
            return None
        if now - entry.stored >= self.max_age_s:
            self._drop(key)
            return None
        self._items.move_to_end(key)
        return entry

    def _drop(self, key: str) -> None:
        entry = self._items.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry.body)

    def _store(self, key: str, entry: Entry, generation: int) -> None:
        if generation != self._generation or len(entry.body) > self.max_bytes // 4:
            return
        self._drop(key)
        self._items[key] = entry
        self._bytes += len(entry.body)
        while self._bytes > self.max_bytes and self._items:
            self._drop(next(iter(self._items)))

    def answer(self, key: str, render: Callable[[], Response]) -> Response:
        """The cached answer for ``key``, or ``render()``'s (stored if it may be)."""
        waited = False
        while True:
            with self._lock:
                now = self.clock()
                entry = self._fresh(key, now)
                pending = self._inflight.get(key)
                if entry is not None and (pending is not None
                                          or now - entry.stored < self.max_age_s / 2):
                    self.hits += 1
                    metrics.READ_CACHE_LOOKUPS.labels("hit").inc()
                    return replay(entry, now)
                if entry is None and pending is not None and not waited:
                    wait_for = pending  # another thread renders this key: share its answer
                else:
                    # A miss, or an entry past half its life that nobody refreshes yet:
                    # this request renders (the others meanwhile get the entry, if any).
                    mine = threading.Event()
                    if pending is None:
                        self._inflight[key] = mine
                    refreshing = entry is not None
                    generation, started = self._generation, now
                    break
            wait_for.wait(WAIT_S)
            waited = True
        try:
            shared_generation = None
            if self.shared is not None:
                # Another process may have rendered it: an aging entry is only worth
                # replacing by a younger one, or this process would keep fetching its own.
                found, shared_generation = self.shared.lookup(key)
                if found is not None:
                    age = self.shared.wall() - found.started_wall
                    if not refreshing or age < self.max_age_s / 2:
                        with self._lock:
                            now = self.clock()
                            entry = Entry(found.status, found.headers, found.body, now - age)
                            self._store(key, entry, generation)
                            self.shared_hits += 1
                        metrics.READ_CACHE_LOOKUPS.labels("shared_hit").inc()
                        return replay(entry, now)
            with self._lock:
                self.misses += 1
            metrics.READ_CACHE_LOOKUPS.labels("miss").inc()
            started_wall = self.shared.wall() if self.shared is not None else 0.0
            resp = render()
            if storable(resp):
                resp.direct_passthrough = False
                entry = Entry(resp.status_code, list(resp.headers.items()), resp.get_data(),
                              started)
                with self._lock:
                    current = generation == self._generation
                    self._store(key, entry, generation)
                if current and self.shared is not None and shared_generation is not None:
                    self.shared.store(key, entry.status, entry.headers, entry.body,
                                      started_wall, shared_generation)
            return resp
        finally:
            with self._lock:
                if self._inflight.get(key) is mine:
                    del self._inflight[key]
            mine.set()


def replay(entry: Entry, now: float) -> Response:
    resp = Response(entry.body, status=entry.status, headers=entry.headers)
    resp.headers["Age"] = str(int(now - entry.stored))
    return resp


def storable(resp: Response) -> bool:
    if resp.status_code != 200 or resp.is_streamed or "Set-Cookie" in resp.headers:
        return False
    control = (resp.headers.get("Cache-Control") or "").lower()
    return not any(word in control for word in UNCACHEABLE_CONTROL)


def shared_render() -> bool:
    """Whether the view runs for everyone (its answer may be stored): a form then asks for
    :data:`TOKEN_SLOT` instead of the visitor's CSRF token."""
    return bool(g.get("arena_shared_render", False))


def _personalise(resp: Response) -> Response:
    """Put the visitor's own CSRF token where a shared render left :data:`TOKEN_SLOT`."""
    if resp.is_streamed or resp.direct_passthrough:
        return resp
    body = resp.get_data()
    slot = TOKEN_SLOT.encode()
    if slot in body:
        token: Callable[[], str] = current_app.extensions["arena.readcache.token"]
        resp.set_data(body.replace(slot, token().encode()))
    return resp


def visitor_token(token: Callable[[], str]) -> Callable[[], str]:
    """Register ``token`` (the visitor's CSRF token, from the session) as what fills a
    shared render's slot; returns a function that gives the slot during a shared render and
    the token otherwise (what the templates call)."""

    def token_or_slot() -> str:
        if shared_render():
            return TOKEN_SLOT
        return token()

    token_or_slot.arena_token = token  # type: ignore[attr-defined]
    return token_or_slot


def cacheable_request() -> bool:
    """A GET or HEAD that is the same for everyone: no credentials in a header, no
    conditional headers, and a session cookie that holds nothing but the CSRF token (a
    visitor signed in as a bot's owner, or carrying anything else the views read, is
    answered by the view itself: a shared answer must never carry, nor hide, what is
    theirs)."""
    return (request.method in ("GET", "HEAD") and "Authorization" not in request.headers
            and not any(h in request.headers for h in CONDITIONAL)
            and set(session.keys()) <= ANONYMOUS_SESSION_KEYS)


def cache_key() -> str:
    query = request.query_string.decode("latin-1")
    return f"{request.scheme}://{request.host}{request.path}?{query}"


def get_cache(app: Flask) -> ReadCache | None:
    cache: ReadCache | None = app.extensions.get("arena.readcache")
    return cache


def _wrap(view: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(view)
    def cached_view(*args: Any, **kwargs: Any) -> Any:
        app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
        cache = get_cache(app)
        if cache is None or not cacheable_request():
            return view(*args, **kwargs)
        return _personalise(cache.answer(cache_key(), lambda: shared(*args, **kwargs)))

    def shared(*args: Any, **kwargs: Any) -> Response:
        g.arena_shared_render = True
        try:
            resp: Response = current_app.make_response(view(*args, **kwargs))
        finally:
            g.arena_shared_render = False
        return resp

    return cached_view


def _forget_after_changes(resp: Response) -> Response:
    if state_changed():
        cache = get_cache(current_app)
        if cache is not None:
            cache.clear()
    return resp


def init_app(app: Flask) -> None:
    """Wrap every GET view but those in :data:`NEVER` (call after the blueprints are
    registered and before :func:`arena.web.limits.init_app`)."""
    max_age = float(app.config["READ_CACHE_S"])
    if max_age <= 0:
        app.extensions["arena.readcache"] = None
        return
    shared = None
    if app.config["READ_CACHE_SHARED"]:
        shared = SharedTier(lambda: shared_redis(get_queue(app).url),
                            namespace_of(app.config), max_age, TOKEN_SLOT)
    app.extensions["arena.readcache"] = ReadCache(max_age, int(app.config["READ_CACHE_MAX_BYTES"]),
                                                  shared=shared)
    app.after_request(_forget_after_changes)
    wrap = {r.endpoint for r in app.url_map.iter_rules()
            if "GET" in (r.methods or ()) and r.rule not in NEVER and r.endpoint != "static"}
    never = {r.endpoint for r in app.url_map.iter_rules() if r.rule in NEVER}
    for endpoint in sorted(wrap - never):
        app.view_functions[endpoint] = _wrap(app.view_functions[endpoint])
