"""Big Two Arena, the service: JSON API, storage, queue, jobs, ratings and the ladder.

``create_app(test_config=None)`` builds the Flask app: settings from :mod:`arena.core.config`
(defaults, then environment variables, then ``test_config``), one ``init_app`` per resource
(storage, queue, errors, limits) and one blueprint per feature (:mod:`arena.routes`: site,
bots, matches, ratings, tournaments, docs).  It refuses
to build an app whose secrets are placeholders or short (:mod:`arena.core.security`), and trusts
``X-Forwarded-*`` headers only from ``TRUSTED_PROXY_HOPS`` proxies (ProxyFix).  The instance
folder (SQLite file, generated secret key) is ``ARENA_INSTANCE_PATH`` or Flask's default,
or ``test_config["INSTANCE_PATH"]``; building an app writes into it only the generated
secret key (when ``SECRET_KEY`` is unset) and, once the database is opened, the SQLite file
(when ``DATABASE_URL`` is unset), so a read-only command leaves no folder behind
(:mod:`arena.ops.cli_app`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .core import rediskeys

# Before anything imports RQ: RQ takes its key prefix from the environment, once.
rediskeys.adopt_environment()

from flask import Flask  # noqa: E402
from werkzeug.middleware.proxy_fix import ProxyFix  # noqa: E402
from werkzeug.routing import BaseConverter  # noqa: E402

from .core import config, logs, queue, security, storage  # noqa: E402
from .core.models import MAX_ID  # noqa: E402
from .web import errors, jsonprovider, limits, observe, readcache  # noqa: E402


def _at_most(limit: int) -> str:
    """A regular expression of the decimal numbers 1..``limit`` (no leading zero): each
    shorter length, then ``limit``'s digits with one of them lower and any digits after."""
    digits = str(limit)
    parts = [f"[1-9][0-9]{{0,{len(digits) - 2}}}"] if len(digits) > 1 else []
    for i, d in enumerate(int(c) for c in digits):
        low = 1 if i == 0 else 0
        if d > low:
            parts.append(f"{digits[:i]}[{low}-{d - 1}][0-9]{{{len(digits) - i - 1}}}")
    return "(?:" + "|".join([*parts, digits]) + ")"


class IdConverter(BaseConverter):
    """A positive database id, at most :data:`~arena.core.models.MAX_ID` (the columns are
    32-bit on PostgreSQL).  The pattern takes exactly those numbers, so a larger one matches
    no rule and every route, whatever its method, answers it 404 ("no such row", which it
    is) instead of sending it to the database, which refused it with a 500.  (Refusing it in
    ``to_python`` instead made Werkzeug answer 405 for the methods of a sibling rule.)"""

    regex = _at_most(MAX_ID)

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: Any) -> str:
        return str(int(value))


def _secret_key(instance: Path) -> str:
    """A random key kept in the instance folder (created once, mode 0600)."""
    path = instance / "secret_key"
    if path.exists():
        return path.read_text().strip()
    instance.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    overrides = dict(test_config or {})
    instance_path = overrides.pop("INSTANCE_PATH", None) or os.environ.get("ARENA_INSTANCE_PATH")
    app = Flask(
        __name__,
        instance_path=os.path.abspath(instance_path) if instance_path else None,
        instance_relative_config=True,
    )
    app.config.from_mapping(config.default_settings())
    app.config.from_mapping(config.from_environment())
    app.config.from_mapping(overrides)
    if not app.config["SECRET_KEY"]:
        app.config["SECRET_KEY"] = _secret_key(Path(app.instance_path))
    security.refuse_weak_secrets(app.config)
    rediskeys.check_rq_prefix(app.config)  # a bad REDIS_NAMESPACE, or RQ under another one
    security.check_cookie_settings(app.config)
    logs.formatter(str(app.config["LOG_FORMAT"]))  # a LOG_FORMAT that is neither refuses to start
    config.check_choices(app.config)  # LADDER_FORMAT, rule set names: refused now, not later
    app.session_interface = security.SessionCookies()
    hops = int(app.config["TRUSTED_PROXY_HOPS"])
    if hops:
        # Believe X-Forwarded-For/-Proto from exactly `hops` proxies, counted from our end;
        # whatever a client wrote into those headers itself stays to the left and is ignored.
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=hops, x_proto=hops, x_host=0, x_port=0, x_prefix=0)
    app.json = jsonprovider.OrjsonProvider(app)  # keys in the order given
    app.url_map.converters["id"] = IdConverter
    app.url_map.strict_slashes = False

    storage.init_app(app)
    queue.init_app(app)
    errors.init_app(app)

    from .routes import BLUEPRINTS, plumbing

    plumbing.init_app(app)  # security headers, template filters and globals
    for bp in BLUEPRINTS:
        app.register_blueprint(bp)
    readcache.init_app(app)  # after the blueprints, before the limits (they count hits)
    limits.init_app(app)  # after the blueprints: it wraps the views marked @limited
    observe.init_app(app)  # request ids, latency histograms, one log line per request
    return app


__all__ = ["create_app"]
