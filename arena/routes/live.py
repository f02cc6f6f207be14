"""Live now: the matches and tournaments being played, a featured table, and how many
spectators watch each (``/live``, ``/api/live``, and the home page's section).

What it costs, whatever the size of the database: one query for the running matches (the
newest :data:`LIVE_MATCHES`, ``ix_matches_state_id``), one for their seats and bots, one for
the tournaments they belong to, one for their seats' ratings, one for the running
tournaments; and at most one Redis read per ``CACHE_S`` per process for the viewer counts
(:class:`arena.live.viewers.ViewerCounts`, bounded by a short timeout, "—" when unknown).
The relay itself is never asked.

The featured match is the running one whose seats have the highest mean rating in the
match's rating family (a bot without a rating there counts as the family's initial rating),
the newest first among equals: the strongest table being played now.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, render_template, url_for
from sqlalchemy import Integer, Select, bindparam, select, tuple_

from arena.core.models import Match, Rating
from arena.core.queue import get_queue
from arena.core.storage import session
from arena.core.tournament_models import Tournament, TournamentMatch
from arena.live.channel import prefix_of
from arena.live.viewers import Stream, ViewerCounts
from arena.web.limits import limited
from arena.web.openapi import operation, page
from arena.web.shapes import responses as out

from .matches import seats_with_bots
from .plumbing import app_object, iso

bp = Blueprint("live", __name__)

LIVE_MATCHES = 24
"""Running matches shown at most (the newest; a deployment runs about one per worker
thread)."""
LIVE_TOURNAMENTS = 10
"""Running tournaments shown at most (the newest)."""
HOME_MATCHES = 4
"""Running matches the home page's section lists (the featured one first)."""


@dataclass
class LiveMatch:
    match: Match
    rating: float
    """The seats' mean rating in the match's family."""
    ratings: dict[int, float | None]
    """Each seat's bot's rating (None: none yet in that family)."""
    tournament: Tournament | None
    viewers: int | None


@dataclass
class LiveNow:
    matches: list[LiveMatch]
    """Featured first, then newest first."""
    tournaments: list[tuple[Tournament, int | None]]
    featured: LiveMatch | None
    viewers_known: bool


def viewer_counts(app: Flask) -> ViewerCounts:
    counts: ViewerCounts | None = app.extensions.get("arena.viewer_counts")
    if counts is None:  # the first request of this app (setdefault: one wins a race)
        counts = app.extensions.setdefault("arena.viewer_counts", ViewerCounts(
            get_queue(app).url, prefix_of(app.config)))
    return counts


@functools.cache
def _running_statements() -> tuple[Select[Match], Select[Tournament]]:
    """:func:`live_now`'s running matches (their seats and bots loaded with them) and
    running tournaments, built once with their limit bound (``limit``): building the
    matches' statement with its loader option, and its cache key, anew on each render cost
    about as much as running both on an empty result (the home page and ``/live`` send them
    on every render)."""
    limit = bindparam("limit", type_=Integer)
    return (select(Match).where(Match.state == "running").options(seats_with_bots())
            .order_by(Match.id.desc()).limit(limit),
            select(Tournament).where(Tournament.state == "running")
            .order_by(Tournament.id.desc()).limit(limit))


def live_now(limit: int = LIVE_MATCHES) -> LiveNow:
    s = session()
    app = app_object()
    running_matches, running_tournaments = _running_statements()
    matches = list(s.scalars(running_matches, {"limit": limit}))
    tournaments = list(s.scalars(running_tournaments, {"limit": LIVE_TOURNAMENTS}))
    by_match: dict[int, Tournament] = {}
    pairs = {(x.bot_id, m.family) for m in matches for x in m.seats}
    ratings: dict[tuple[int, str], float] = {}
    if matches:
        links = s.execute(select(TournamentMatch.match_id, Tournament)
                          .join(Tournament, Tournament.id == TournamentMatch.tournament_id)
                          .where(TournamentMatch.match_id.in_([m.id for m in matches]))).all()
        by_match = {int(mid): t for mid, t in links}
        rows = s.execute(select(Rating.bot_id, Rating.family, Rating.rating)
                         .where(tuple_(Rating.bot_id, Rating.family).in_(sorted(pairs)))).all()
        ratings = {(b, f): r for b, f, r in rows}
    streams: list[Stream] = [("match", m.id) for m in matches] + [
        ("tournament", t.id) for t in tournaments]
    counts = viewer_counts(app).get(streams) if streams else {}
    initial = float(current_app.config["ELO_INITIAL"])
    shown: list[LiveMatch] = []
    for m in matches:
        own = {x.bot_id: ratings.get((x.bot_id, m.family)) for x in m.seats}
        values = [initial if r is None else r for r in own.values()]
        mean = sum(values) / len(values) if values else initial
        shown.append(LiveMatch(m, mean, own, by_match.get(m.id),
                               None if counts is None else counts.get(("match", m.id), 0)))
    featured = max(shown, key=lambda x: (x.rating, x.match.id), default=None)
    if featured is not None:
        shown.remove(featured)
        shown.insert(0, featured)
    return LiveNow(shown, [(t, None if counts is None else counts.get(("tournament", t.id), 0))
                           for t in tournaments], featured, counts is not None)


@bp.get("/live")
@limited("pages")
@page("Live now: running matches (the highest-rated table featured) and tournaments, with "
      "how many spectators watch each")
def live_page() -> str:
    return render_template("live.html", now=live_now())


def live_match_json(x: LiveMatch) -> dict[str, Any]:
    m = x.match
    t = x.tournament
    return {
        "id": m.id, "kind": m.kind, "ruleset": m.ruleset, "family": m.family,
        "deals": m.deals, "rated": m.rated, "started_at": iso(m.started_at),
        "rating": round(x.rating, 1), "viewers": x.viewers,
        "url": url_for("matches.match_page", match_id=m.id),
        "tournament": None if t is None else {
            "id": t.id, "name": t.name,
            "url": url_for("tournaments.tournament_page", tournament_id=t.id)},
        "seats": [{"seat": s.seat, "bot": {"id": s.bot_id, "name": s.bot.name},
                   "rating": None if x.ratings.get(s.bot_id) is None
                   else round(float(x.ratings[s.bot_id] or 0.0), 1)}
                  for s in sorted(m.seats, key=lambda s: s.seat)],
    }


@bp.get("/api/live")
@limited("pages")
@operation("Live now: running matches (the featured one first) and running tournaments, "
           "with their viewer counts (null when unknown: no live relay reports)",
           {200: (out.LiveNow, "what is being played")})
def live_json() -> Response:
    now = live_now()
    return jsonify({
        "featured": None if now.featured is None else now.featured.match.id,
        "viewers_known": now.viewers_known,
        "matches": [live_match_json(x) for x in now.matches],
        "tournaments": [{
            "id": t.id, "name": t.name, "format": t.format, "ruleset": t.ruleset,
            "current_round": t.current_round, "rounds": t.rounds, "viewers": n,
            "url": url_for("tournaments.tournament_page", tournament_id=t.id)}
            for t, n in now.tournaments],
    })
