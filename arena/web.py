"""Web pages (a minimal home page for now) and the operational probes.

``/healthz``: the process answers (liveness).  ``/readyz``: the database and Redis answer
(readiness); 503 with the failing part otherwise.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify, render_template
from sqlalchemy import func, select

from .models import Bot, Match
from .queue import get_queue
from .storage import get_db, session

bp = Blueprint("web", __name__)


@bp.get("/")
def home() -> str:
    s = session()
    bots = s.scalar(select(func.count()).select_from(Bot).where(Bot.deleted_at.is_(None)))
    finished = s.scalar(select(func.count()).select_from(Match)
                        .where(Match.state == "finished"))
    return render_template("home.html", bots=bots or 0, finished=finished or 0)


@bp.get("/healthz")
def healthz() -> Response:
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz() -> tuple[Response, int]:
    checks: dict[str, Any] = {}
    ok = True
    try:
        get_db().ping()
        checks["database"] = "ok"
    except Exception as exc:
        ok, checks["database"] = False, f"{type(exc).__name__}: {exc}"[:300]
    try:
        get_queue(current_app._get_current_object()).redis.ping()  # type: ignore[attr-defined]
        checks["redis"] = "ok"
    except Exception as exc:
        ok, checks["redis"] = False, f"{type(exc).__name__}: {exc}"[:300]
    return jsonify({"status": "ok" if ok else "unavailable", "checks": checks}), (
        200 if ok else 503)
