"""Each request, seen from outside: its id, its latency histogram, its one log line.

* **Request id.**  Every request gets one, bound to its log lines (:mod:`arena.core.logs`)
  and sent back in ``X-Request-ID``.  Behind a trusted proxy (``TRUSTED_PROXY_HOPS`` > 0)
  the proxy's id is kept (the shipped nginx sends its ``$request_id``), so nginx's access
  log and the app's lines share it; otherwise, and when what came is not a plain token of
  8-64 letters, digits, ``.``, ``_`` or ``-``, the app makes one.  A client cannot put text
  of its own choosing into the logs through it.
* **Latency** in ``arena_http_request_duration_seconds`` by the URL *rule*
  (``/api/bots/<id:bot_id>``, ``(unmatched)`` for a 404 without one), never by the path
  asked for, whose values a visitor could make unbounded; by method (``OTHER`` for any
  unusual one) and status class.
* **One summary line** per request (``LOG_FORMAT=json`` only, where it replaces gunicorn's
  access log): method, route, status, duration.
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from flask import Flask, Response, g, request

from arena.core import logs, metrics

log = logging.getLogger(__name__)

HEADER = "X-Request-ID"
_GOOD_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "(unmatched)"


def request_id(trust_proxy: bool) -> str:
    """The proxy's id for this request when trusted and well-formed, else a new one."""
    sent = request.headers.get(HEADER, "") if trust_proxy else ""
    return sent if _GOOD_ID.match(sent) else uuid.uuid4().hex


def route_label() -> str:
    rule = request.url_rule
    return rule.rule if rule is not None else UNMATCHED


def _start() -> None:
    g.arena_started = time.perf_counter()
    rid = request_id(int(g.arena_trusted_hops) > 0)
    g.arena_request_id = rid
    g.arena_request_token = logs.REQUEST_ID.set(rid)


def _finish(resp: Response) -> Response:
    rid = g.get("arena_request_id")
    if rid is not None:
        resp.headers[HEADER] = rid
    started = g.get("arena_started")
    if started is None:
        return resp
    took = time.perf_counter() - started
    method = request.method if request.method in METHODS else "OTHER"
    route = route_label()
    metrics.HTTP_REQUEST_SECONDS.labels(route, method,
                                        metrics.status_class(resp.status_code)).observe(took)
    if g.get("arena_log_requests"):
        log.info("%s %s %d %.1f ms", method, route, resp.status_code, took * 1000,
                 extra={"method": method, "route": route, "status": resp.status_code,
                        "duration_ms": round(took * 1000, 2)})
    return resp


def _forget(exc: BaseException | None) -> None:
    token = g.pop("arena_request_token", None)
    if token is not None:
        logs.REQUEST_ID.reset(token)


def init_app(app: Flask) -> None:
    hops = int(app.config["TRUSTED_PROXY_HOPS"])
    json_lines = str(app.config["LOG_FORMAT"]) == "json"

    def settings() -> None:
        g.arena_trusted_hops = hops
        g.arena_log_requests = json_lines

    # First of every before_request hook (so the id is on their lines too), last of the
    # after_request hooks (Flask runs those in reverse order of registration).
    app.before_request_funcs.setdefault(None, []).insert(0, _start)
    app.before_request_funcs[None].insert(0, settings)
    app.after_request_funcs.setdefault(None, []).insert(0, _finish)
    app.teardown_request(_forget)
