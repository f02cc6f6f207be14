"""The site: the home page, and the operational probes.

``/healthz``: the process answers (liveness).  ``/readyz``: the database and Redis answer
(readiness); 503 naming the failing part otherwise (``"down"``; the reason is only logged),
as of a probe at most ``READYZ_CACHE_S`` old (:class:`Readiness`).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, render_template
from sqlalchemy import Select, func, select

from arena.core.models import STATUS_COLUMNS, Bot, Match, Rating, RatingFamily, bot_status
from arena.core.queue import get_queue
from arena.core.storage import get_db, session
from arena.core.tournament_models import Tournament
from arena.play.matches import MATCH_LINE_COLUMNS, match_lines
from arena.web.idempotency import issue_key
from arena.web.limits import limited
from arena.web.openapi import operation, page
from arena.web.shapes import responses as out
from arena.web.shapes.requests import Empty

from .live import HOME_MATCHES, live_now
from .plumbing import app_object
from .ratings import DEFAULT_FAMILY, RATING_COLUMNS, BotBrief, RatingLine

bp = Blueprint("site", __name__)
log = logging.getLogger(__name__)


class SiteCounts:
    """The home page's counts of bots and tournaments, cached per app (one per web process)
    for ``SITE_COUNTS_TTL_S`` (a small aggregate, not a scan per hit).  The count of finished
    matches needs no cache: it is the sum of the per-family counters (``RatingFamily
    .results``) that the finishing transaction increments.  Kept on the app, not the module:
    another app of the process (a test's, on a database of the same URL emptied since) must
    not read this one's counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at = -1e18
        self._value: tuple[int, int] = (0, 0)

    @staticmethod
    def of(app: Flask) -> SiteCounts:
        counts: SiteCounts | None = app.extensions.get("arena.site_counts")
        if counts is None:  # the first request of this app (setdefault: one wins a race)
            counts = app.extensions.setdefault("arena.site_counts", SiteCounts())
        return counts

    def get(self, ttl_s: float) -> tuple[int, int]:
        now = time.monotonic()
        with self._lock:
            if now - self._at < ttl_s:
                return self._value
        s = session()
        bots = s.scalar(select(func.count()).select_from(Bot).where(Bot.deleted_at.is_(None)))
        n_tournaments = s.scalar(select(func.count()).select_from(Tournament))
        value = (int(bots or 0), int(n_tournaments or 0))
        with self._lock:
            self._at, self._value = now, value
        return value


@functools.cache
def _home_statements() -> tuple[Select[*tuple[Any, ...]], Select[Tournament],
                               Select[*tuple[Any, ...]], Select[*tuple[Any, ...]]]:
    """The home page's own statements (the matches played, the newest finished tournaments,
    the top five, the newest six matches), built once: building them and their cache keys
    anew on each render cost about as much as running them."""
    finished = select(func.coalesce(func.sum(RatingFamily.results), 0))
    recent_t = (select(Tournament).where(Tournament.state == "finished")
                .order_by(Tournament.id.desc()).limit(5))
    # Columns, not objects: the top five and the newest six matches' seats were 29 whole
    # ``Bot``s (each info document decoded) for a name and a status.
    top = (select(*RATING_COLUMNS, Bot.name, *STATUS_COLUMNS).join(Bot, Bot.id == Rating.bot_id)
           .where(Rating.family == DEFAULT_FAMILY, Bot.deleted_at.is_(None))
           .order_by(Rating.rating.desc(), Rating.bot_id).limit(5))
    # ix_matches_state_finished_at: the newest six, read backwards from the index.
    recent = (select(*MATCH_LINE_COLUMNS).where(Match.state == "finished")
              .order_by(Match.finished_at.desc(), Match.id.desc()).limit(6))
    return finished, recent_t, top, recent


@bp.get("/")
@page("Home page: counts, live now (the featured match, running matches and their viewers), "
      "live and recent tournaments, the top of the leaderboard, recent matches")
def home() -> str:
    s = session()
    cfg = current_app.config
    bots, n_tournaments = SiteCounts.of(app_object()).get(float(cfg["SITE_COUNTS_TTL_S"]))
    finished_stmt, recent_t_stmt, top_stmt, recent_stmt = _home_statements()
    finished = s.scalar(finished_stmt)
    now = live_now()
    # The five newest running tournaments: live_now's first five (it reads the newest
    # LIVE_TOURNAMENTS, 10, by the same statement), not read a second time.
    live = [t for t, _ in now.tournaments[:5]]
    recent_t = s.scalars(recent_t_stmt).all()
    top = [RatingLine(r[0], r[1], r[2], r[3], BotBrief(r[4], bot_status(*r[5:])))
           for r in s.execute(top_stmt)]
    recent = match_lines(s, s.execute(recent_stmt))
    return render_template("home.html", bots=bots, finished=int(finished or 0),
                           n_tournaments=n_tournaments, live=live, recent_t=recent_t,
                           top=top, recent=recent, now=now, home_matches=HOME_MATCHES)


@bp.post("/api/idempotency-keys")
@limited("keys")
@operation("An Idempotency-Key for an anonymous creating request (POST /api/bots): a replay "
           "with it carries the answer's secrets (the owner token), whatever address it "
           "comes from; keep it secret", {201: (out.IssuedKey, "a new key")}, body=Empty,
           body_required=False)
def issue_idempotency_key() -> tuple[Response, int]:
    """Nothing is stored: the key is random and signed (:func:`arena.web.idempotency.issue_key`)."""
    Empty.from_body(optional=True)
    resp = jsonify({"key": issue_key(), "note": "send it as Idempotency-Key with one creating "
                    "request and each retry of it; whoever holds it gets that request's "
                    "answer, secrets included (docs/api.md)"})
    resp.headers["Cache-Control"] = "no-store"
    return resp, 201


@bp.get("/healthz")
@operation("Liveness: the process answers", {200: (out.Probe, "alive")})
def healthz() -> Response:
    return jsonify({"status": "ok"})


class Readiness:
    """The last ``/readyz`` probe of the database and Redis, reused for ``READYZ_CACHE_S``
    (one per app, i.e. per web process): under a flood of probes (16 at once: 52 ms p95,
    each a database round trip and a Redis one) the process probes at most once per that
    time, one thread probing while the others wait for its answer.  A failure is reused
    like a success, so a down database is not hammered either, and reported within the same
    bound.  ``clock`` is replaceable (tests)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at = -1e18
        self._value: dict[str, str] = {}
        self.clock = time.monotonic

    @staticmethod
    def of(app: Flask) -> Readiness:
        ready: Readiness | None = app.extensions.get("arena.readiness")
        if ready is None:
            ready = app.extensions.setdefault("arena.readiness", Readiness())
        return ready

    def get(self, ttl_s: float) -> dict[str, str]:
        with self._lock:  # held while probing: one probe at a time, its answer shared
            started = self.clock()
            if started - self._at >= ttl_s:
                self._value = probe()
                self._at = started  # the bound counts from when the probe began
            return dict(self._value)


def probe() -> dict[str, str]:
    """``ok`` or ``down`` for the database and for Redis (the reason is only logged)."""
    checks: dict[str, str] = {}
    try:
        get_db().ping()
        checks["database"] = "ok"
    except Exception:
        log.exception("readiness: the database does not answer")
        checks["database"] = "down"
    try:
        get_queue(app_object()).redis.ping()
        checks["redis"] = "ok"
    except Exception:
        log.exception("readiness: Redis does not answer")
        checks["redis"] = "down"
    return checks


@bp.get("/readyz")
@operation("Readiness: the database and Redis answer (the failing part is named, never why; "
           "a probe is reused for READYZ_CACHE_S)",
           {200: (out.Readiness, "ready"), 503: (out.Readiness, "not ready")})
def readyz() -> tuple[Response, int]:
    """Whether the database and Redis answer, as of a probe at most ``READYZ_CACHE_S``
    (0.5 s) old (:class:`Readiness`): a part going down is reported within that bound."""
    # Public: it says which part is down, never why (error texts carry host names, users and
    # driver versions); the reason goes to the log.
    checks = Readiness.of(app_object()).get(float(current_app.config["READYZ_CACHE_S"]))
    ok = all(v == "ok" for v in checks.values())
    return jsonify({"status": "ok" if ok else "unavailable", "ready": ok,
                    "checks": checks}), (200 if ok else 503)
