"""Rate limits: Flask-Limiter counting in the service's Redis, one line per route.

A view says which class of limits it counts against with :func:`limited`::

    @bp.post("/bots")
    @limited("bot_submit")
    def create_bot(): ...

and :func:`init_app` (after the blueprints are registered) wraps every marked view with the
app's own :class:`flask_limiter.Limiter`, so every app has its own counters and settings
(the tests build many apps in one process).  Each class is one or more *shared* limits, one
per setting: every route of the class draws from the same bucket, per key.

=============  ====================================================================  ==========
class          routes                                                                 key
=============  ====================================================================  ==========
bot_submit     ``POST /api/bots``, ``POST /bots/new``                                 client
url_change     ``PATCH /api/bots/<id>`` with a ``url``                                client, owner
downloads      match logs (JSON, JSONL, replay), tournament archives                  client
pages          leaderboard (API and page), lists and searches                         client
admin          the operator's API                                                     client
keys           ``POST /api/idempotency-keys`` (a key for anonymous retries)           client
sign_in        owner sign-in and sign-out on the bot pages                            client
bot_owner      an owner's every change: ``PATCH`` (pausing too), ``DELETE``, re-check, client, owner
               signing secret rotation (API and form)
account_sign_in ``POST /account/sign-in``, ``POST /account/reset`` (and a per-account  client
               delay: arena.accounts)
account_sign_up ``POST /account/sign-up``                                             client
webhook_test   "send test event" (API and form): each is a call to the owner's URL    client, owner
challenges     ``POST /api/challenges``, ``POST /challenges/new``                      client, owner
=============  ====================================================================  ==========

Registering and deleting webhooks count as ``bot_owner`` (an owner's change).

Every route that can change state (any method but GET, HEAD, OPTIONS) counts against at
least one class that no request of it is exempt from: a flood of writes, even writes that
change nothing, is bounded per client (``tests/arena/test_limits.py`` walks the URL map).

The *client* is the address the request came from: the TCP peer, or what the trusted proxy
put in ``X-Forwarded-For`` when ``TRUSTED_PROXY_HOPS`` says there is one (ProxyFix in
:func:`arena.create_app`; a client's own ``X-Forwarded-For`` is never believed).  IPv6
clients count per /64, the block one subscriber usually gets, and IPv4-mapped IPv6 as IPv4:
the one rule of :mod:`arena.core.clients`, which every counter of the service follows.  The
*owner* is a hash of the bearer token.

A refused request gets a JSON 429 with ``Retry-After`` (seconds) and the usual
``X-RateLimit-*`` headers.  Counters live in Redis under ``<REDIS_NAMESPACE>:limits``, so
every web process of a deployment shares them; while Redis is unreachable each process falls
back to counting in its own memory (the limits still hold, per process).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from flask import Flask, Response, current_app, request
from flask_limiter import Limiter
from flask_limiter.errors import RateLimitExceeded

from arena.core import clients, metrics
from arena.core.queue import embedded_dir, get_queue
from arena.core.redis_connect import configured_url, limits_storage
from arena.core.rediskeys import redis_key
from arena.core.security import bearer_token

from .errors import ApiError, error_response, json_object

F = TypeVar("F", bound=Callable[..., Any])

MARK = "_arena_limits"

log = logging.getLogger(__name__)


# --- who is asking ---------------------------------------------------------------------------


def client_address() -> str:
    """The client the request comes from, by the service's one rule
    (:func:`arena.core.clients.client_key`: IPv4 as is, IPv6 as its /64)."""
    return clients.client_key(request.remote_addr)


def client_key() -> str:
    return "client:" + client_address()


def owner_key() -> str:
    """A hash of the bearer token (never the token itself in Redis); the client without one."""
    token = bearer_token()
    if token is None:
        return client_key()
    return "owner:" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]


# --- the classes of limits -------------------------------------------------------------------


def _changes_no_url() -> bool:
    """A PATCH of a bot that does not change its URL (pausing) costs nothing outside."""
    if request.method != "PATCH":
        return False
    try:
        return "url" not in json_object()
    except ApiError:
        return False  # a malformed body counts; the view refuses it


@dataclass(frozen=True)
class Rule:
    setting: str
    key: Callable[[], str]
    what: str


CLASSES: dict[str, tuple[list[Rule], Callable[[], bool] | None]] = {
    "bot_submit": ([Rule("RATE_LIMIT_BOT_SUBMIT_PER_CLIENT", client_key,
                         "bot submissions from one address")], None),
    "url_change": ([Rule("RATE_LIMIT_URL_CHANGE_PER_CLIENT", client_key,
                         "bot URL changes from one address"),
                    Rule("RATE_LIMIT_URL_CHANGE_PER_OWNER", owner_key,
                         "bot URL changes with one owner token")], _changes_no_url),
    "downloads": ([Rule("RATE_LIMIT_DOWNLOADS_PER_CLIENT", client_key,
                        "log and archive downloads from one address")], None),
    "pages": ([Rule("RATE_LIMIT_PAGES_PER_CLIENT", client_key,
                    "leaderboard pages, lists and searches from one address")], None),
    "admin": ([Rule("RATE_LIMIT_ADMIN_PER_CLIENT", client_key,
                    "operator API calls from one address")], None),
    "keys": ([Rule("RATE_LIMIT_IDEMPOTENCY_KEYS_PER_CLIENT", client_key,
                               "Idempotency-Keys issued to one address")], None),
    "sign_in": ([Rule("RATE_LIMIT_SIGN_IN_PER_CLIENT", client_key,
                      "owner sign-ins and sign-outs from one address")], None),
    "bot_owner": ([Rule("RATE_LIMIT_BOT_OWNER_PER_CLIENT", client_key,
                        "changes of bots by their owners from one address"),
                   Rule("RATE_LIMIT_BOT_OWNER_PER_OWNER", owner_key,
                        "changes of bots with one owner token")], None),
    "account_sign_in": ([Rule("RATE_LIMIT_ACCOUNT_SIGN_IN_PER_CLIENT", client_key,
                              "account sign-in attempts from one address")], None),
    "challenges": ([Rule("RATE_LIMIT_CHALLENGES_PER_CLIENT", client_key,
                         "challenges from one address"),
                    Rule("RATE_LIMIT_CHALLENGES_PER_OWNER", owner_key,
                         "challenges with one token")], None),
    "account_sign_up": ([Rule("RATE_LIMIT_SIGN_UP_PER_CLIENT", client_key,
                              "account sign-ups from one address")], None),
    "webhook_test": ([Rule("RATE_LIMIT_WEBHOOK_TEST_PER_CLIENT", client_key,
                           "test events asked for from one address"),
                      Rule("RATE_LIMIT_WEBHOOK_TEST_PER_OWNER", owner_key,
                           "test events asked for with one token")], None),
}
"""Each class: its rules (one setting each) and when a request of the class is exempt."""

WHAT = {rule.setting: rule.what for rules, _ in CLASSES.values() for rule in rules}
CLASS_OF = {rule.setting: name for name, (rules, _) in CLASSES.items() for rule in rules}
"""Each rule's setting -> its class (the label of ``arena_rate_limit_refusals_total``)."""


def limited(name: str, *, methods: tuple[str, ...] | None = None) -> Callable[[F], F]:
    """Mark a view as counted against the class ``name`` (only for ``methods``, if given)."""
    if name not in CLASSES:
        raise ValueError(f"unknown class of limits {name!r}; known: {', '.join(CLASSES)}")

    def mark(view: F) -> F:
        marks: list[tuple[str, tuple[str, ...] | None]] = view.__dict__.setdefault(MARK, [])
        marks.append((name, methods))
        return view

    return mark


def counted_methods(view: Callable[..., Any]) -> set[str] | None:
    """The methods for which ``view`` counts against a class no request is exempt from
    (``None``: every method)."""
    counted: set[str] = set()
    for name, methods in getattr(view, MARK, []):
        if CLASSES[name][1] is not None:
            continue
        if methods is None:
            return None
        counted.update(methods)
    return counted


# --- wiring ----------------------------------------------------------------------------------


def storage(app: Flask) -> tuple[str, dict[str, Any]]:
    """The service's Redis in the notation of the ``limits`` library, and the options its
    storage needs (with Sentinel: its ``redis+sentinel`` storage, on the primary only)."""
    url = configured_url(app.config)
    if not url:
        sock = embedded_dir(app.instance_path, str(app.config["EMBEDDED_REDIS_DIR"]))
        url = f"unix://{sock / 'redis.sock'}?db=0"
    return limits_storage(url)


def get_limiter(app: Flask | None = None) -> Limiter | None:
    a = app or current_app
    limiter: Limiter | None = a.extensions.get("arena.limiter")
    return limiter


def init_app(app: Flask) -> None:
    """Build the app's limiter and wrap every view marked with :func:`limited`."""
    if not app.config["RATE_LIMITS_ENABLED"]:
        app.extensions["arena.limiter"] = None
        return
    for rules, _ in CLASSES.values():
        for rule in rules:
            _check_notation(rule.setting, str(app.config[rule.setting]))
    # Registered before the limiter's own hook, so it runs after it (Flask runs them in
    # reverse): Flask-Limiter writes Retry-After on every response; keep it on 429s only.
    app.after_request(_retry_after_only_on_429)
    uri, options = storage(app)
    limiter = Limiter(
        key_func=client_key,
        storage_uri=uri,
        storage_options={"socket_timeout": 2, "socket_connect_timeout": 2,
                         "key_prefix": redis_key(app.config, "limits"), **options},
        strategy="moving-window",
        headers_enabled=True,
        in_memory_fallback_enabled=True,
        swallow_errors=True,
    )
    limiter.init_app(app)
    app.extensions["arena.limiter"] = limiter
    if not configured_url(app.config):
        app.before_request(_start_embedded_redis)
    for endpoint, view in list(app.view_functions.items()):
        wrapped: Any = view
        for name, methods in getattr(view, MARK, []):
            rules, exempt = CLASSES[name]
            for rule in rules:
                wrapped = limiter.shared_limit(
                    _setting(rule.setting), scope=rule.setting, key_func=rule.key,
                    methods=list(methods) if methods else None, exempt_when=exempt,
                )(wrapped)
        app.view_functions[endpoint] = wrapped
    app.register_error_handler(RateLimitExceeded, _too_many)


def _setting(name: str) -> Callable[[], str]:
    return lambda: str(current_app.config[name])


def _check_notation(name: str, value: str) -> None:
    from limits import parse_many

    try:
        parse_many(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {value!r} is not a rate limit ({exc}); write e.g. "
                         "'10 per hour;3 per minute'") from None


def _start_embedded_redis() -> None:
    """Start the instance's embedded Redis if nobody has (once per process: the URL is
    cached); if it cannot start, the limiter counts in memory and says so in the log."""
    try:
        get_queue().url  # noqa: B018
    except Exception as exc:
        log.warning("rate limits: no Redis (%s); counting in this process only", exc)


def _retry_after_only_on_429(resp: Response) -> Response:
    if resp.status_code != 429:
        resp.headers.pop("Retry-After", None)
    return resp


def _too_many(e: RateLimitExceeded) -> Response:
    limiter = get_limiter()
    current = limiter.current_limit if limiter is not None else None
    retry = 1
    if current is not None:
        retry = max(1, int(current.reset_at - time.time()))  # as Flask-Limiter's header
    scope = e.limit.scope if isinstance(e.limit.scope, str) else ""
    what = WHAT.get(scope, "requests")
    metrics.RATE_LIMIT_REFUSALS.labels(CLASS_OF.get(scope, "other")).inc()
    resp = error_response(
        429, "rate_limited",
        f"too many requests: {what} are limited to {e.limit.limit}; retry in {retry} s",
        retry_after=retry, limit=str(e.limit.limit))
    resp.headers["Retry-After"] = str(retry)
    return resp
