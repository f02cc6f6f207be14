"""Ratings: the leaderboard (page and JSON), the rating families, a bot's rating history.

The leaderboard page takes ``?family=``, ``?page=`` and ``?q=`` (a case-insensitive name
prefix; each row keeps its rank in the whole family) and draws the rating history of the
top of the page; the JSON leaderboard is an offset list (the shape of
:func:`~arena.routes.plumbing.paginate`, with the family added), a bot's history a keyset
list (:mod:`arena.web.pagination`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, render_template, request, url_for
from markupsafe import Markup, escape
from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    bindparam,
    exists,
    func,
    or_,
    select,
    true,
)
from sqlalchemy.orm import Session, aliased

from arena.core import counts
from arena.core.families import FAMILY_OF, family_of
from arena.core.idlists import among_bound
from arena.core.models import STATUS_COLUMNS, Bot, Rating, RatingEvent, RatingFamily, bot_status
from arena.core.storage import session
from arena.play.ratings import rating_series
from arena.play.uncertainty import margin_of
from arena.web.charts import rating_chart
from arena.web.limits import limited
from arena.web.openapi import operation, page
from arena.web.pagination import keyset_args, keyset_page
from arena.web.shapes import from_query
from arena.web.shapes import responses as out
from arena.web.shapes.requests import HistoryQuery, RatingsQuery
from referee import preset_names

from .plumbing import (
    arg_int,
    bot_link_html,
    get_bot,
    iso,
    page_args,
    provisional,
    rating_html,
)

bp = Blueprint("ratings", __name__)

DEFAULT_FAMILY = "classic"
CHART_BOTS = 8
"""Lines on the leaderboard's chart (the top of the page shown)."""
NAME_PREFIX_MAX = 64


def listed(family: str | ColumnElement[str]) -> ColumnElement[bool]:
    """The ratings a family's leaderboard lists: its bots' but the deleted ones.

    Written as "no deleted bot owns it" (an anti-join against the few deleted bots), not as
    a join to every bot filtered on ``deleted_at``: the join made PostgreSQL read all
    10,000 bots, hash them, and sort the family by rating again, where the anti-join lets it
    walk ``ix_ratings_family_rating`` in order and stop at the page (page 100 at 10,000
    bots: 19.8 ms of SQL -> 5.7 ms, its count 4.8 -> 4.1 ms).  The page's bots are then
    loaded by id."""
    return (Rating.family == family) & ~exists().where(Bot.id == Rating.bot_id,
                                                       Bot.deleted_at.is_not(None))


BY_RANK = (Rating.rating.desc(), Rating.bot_id)
"""A family's order: the leaderboard's and its ranks' (ties by the older bot)."""


RARE_PREFIX_MAX = 2000
"""A name prefix that at most this many listed bots share is searched name first (see
:func:`search`)."""


def search(s: Session, family: str, q: str, limit: int,
           offset: int) -> list[tuple[int, int]]:
    """``(bot_id, rank in the whole family)`` of the listed bots whose name starts with
    ``q`` (any case), in the family's order, ``limit`` of them from ``offset``: two
    statements.

    Which bots: the first statement counts the bots the prefix names, up to
    :data:`RARE_PREFIX_MAX` (``ix_bots_name_lower``, a range of it).  A rare prefix is
    searched name first: those bots, each one's rating by its key, sorted.  A common one
    walks the family's ratings in order (``ix_ratings_family_rating``) and stops at the page,
    which is soon when many bots match.  Left to itself PostgreSQL walked the ratings for
    every prefix: 0.4 s for one that 1% of 100,000 bots share, spread over the ratings;
    name first it is 4 ms.

    The rank is not a window over the family (every listed rating read, sorted and numbered:
    12-15 ms of SQL at 10,000 bots) but counted for the page's hits only, each hit as the
    listed ratings between it and the previous hit (``ix_ratings_family_rating``, index
    only), so the page reads the family's index down to its last hit at most once; the
    deleted bots are left out by one hashed list of them.  Ranks as the window's would be:
    ``rank() OVER (ORDER BY`` :data:`BY_RANK` ``)``, ties in rating by the older bot."""
    pattern = q.lower().replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"
    postgres = s.get_bind().dialect.name == "postgresql"
    named = int(s.execute(_named_count(), {"pattern": pattern,
                                            "cap": RARE_PREFIX_MAX + 1}).scalar_one())
    statement = _search_statement(name_first=named <= RARE_PREFIX_MAX, postgres=postgres)
    out: list[tuple[int, int]] = []
    rank = 0
    for bot_id, gap in s.execute(statement, {
            "family": family, "pattern": pattern, "limit": limit, "offset": offset}).all():
        rank += int(gap) + 1
        out.append((int(bot_id), rank))
    return out


def _named(pattern: Any) -> ColumnElement[bool]:
    return Bot.deleted_at.is_(None) & func.lower(Bot.name).like(pattern, escape="/")


@functools.cache
def _named_count() -> Select[int]:
    """How many listed bots the prefix names, counted up to ``cap``."""
    some = (select(Bot.id).where(_named(bindparam("pattern", type_=String)))
            .limit(bindparam("cap", type_=Integer)).subquery())
    return select(func.count()).select_from(some)


@functools.cache
def _search_statement(*, name_first: bool, postgres: bool) -> Select[int, int]:
    """:func:`search`'s statement, built once per plan (building it took longer than
    running it): the family, the escaped name pattern, the limit and the offset are bound.

    ``name_first``: the named bots first (on PostgreSQL a materialized list, and each one's
    rating read by its primary key through a lateral subquery: joined plainly, PostgreSQL
    hashed every rating of the family instead); otherwise the family's ratings in order,
    each bot's name checked."""
    family = bindparam("family", type_=String)
    pattern = bindparam("pattern", type_=String)
    if name_first:
        named = select(Bot.id).where(_named(pattern)).cte("named")
        if postgres:
            named = named.prefix_with("MATERIALIZED", dialect="postgresql")
            one = (select(Rating.bot_id, Rating.rating)
                   .where(Rating.bot_id == named.c.id, Rating.family == family)
                   .limit(1).lateral("one"))  # (bot_id, family) is the key: one at most
            found = select(one.c.bot_id, one.c.rating).select_from(named).join(one, true())
            hits = found.order_by(one.c.rating.desc(), one.c.bot_id)
        else:
            hits = (select(Rating.bot_id, Rating.rating)
                    .join(named, named.c.id == Rating.bot_id).where(Rating.family == family)
                    .order_by(*BY_RANK))
    else:
        hits = (select(Rating.bot_id, Rating.rating).join(Bot, Bot.id == Rating.bot_id)
                .where(Rating.family == family, _named(pattern)).order_by(*BY_RANK))
    hits_cte = (hits.limit(bindparam("limit", type_=Integer))
                .offset(bindparam("offset", type_=Integer)).cte("hits"))
    order = (hits_cte.c.rating.desc(), hits_cte.c.bot_id)
    p = select(hits_cte.c.bot_id, hits_cte.c.rating,
               func.lag(hits_cte.c.rating).over(order_by=order).label("prev_rating"),
               func.lag(hits_cte.c.bot_id).over(order_by=order).label("prev_bot")
               ).subquery("p")
    r = aliased(Rating)
    top = select(func.max(Rating.rating)).where(Rating.family == family).scalar_subquery()
    between = (select(func.count()).select_from(r).where(
        r.family == family, r.rating >= p.c.rating,
        r.rating <= func.coalesce(p.c.prev_rating, top),  # the index range; exactly:
        or_(r.rating > p.c.rating, r.bot_id < p.c.bot_id),  # ahead of the hit,
        or_(p.c.prev_rating.is_(None), r.rating < p.c.prev_rating,  # after the previous
            r.bot_id > p.c.prev_bot),
        r.bot_id.not_in(select(Bot.id).where(Bot.deleted_at.is_not(None))))
        .scalar_subquery())
    return select(p.c.bot_id, between).order_by(p.c.rating.desc(), p.c.bot_id)


@dataclass(frozen=True)
class BotBrief:
    """What a list shows of a bot: its name and status."""

    name: str
    status: str


@dataclass(frozen=True)
class RatingLine:
    """A leaderboard row read as columns (what a list shows of a :class:`Rating`), with its
    bot's :class:`BotBrief` as ``bot``: templates and :func:`rating_json` read it as they
    read a ``Rating``."""

    bot_id: int
    family: str
    rating: float
    games: int
    bot: BotBrief


RATING_COLUMNS = (Rating.bot_id, Rating.family, Rating.rating, Rating.games)


def bot_briefs(s: Session, ids: list[int]) -> dict[int, BotBrief]:
    """The name and status of each bot of a page, in one statement by primary key."""
    if not ids:
        return {}
    return {row[0]: BotBrief(row[1], bot_status(*row[2:])) for row in s.execute(
        _briefs_statement(s.get_bind().dialect.name), {"ids": ids})}


@functools.cache
def _briefs_statement(dialect: str) -> Select[*tuple[Any, ...]]:
    """:func:`bot_briefs`' statement, built once per dialect (``ids`` bound)."""
    return select(Bot.id, Bot.name, *STATUS_COLUMNS).where(among_bound(dialect, Bot.id, "ids"))


@functools.cache
def _page_statement() -> Select[int, str, float, int]:
    """One page of a family's leaderboard (:data:`RATING_COLUMNS` of the :func:`listed`
    ratings in :data:`BY_RANK` order), built once: ``family``, ``limit`` and ``offset``
    bound (building the anti-join anew took about as long as running it)."""
    return (select(*RATING_COLUMNS).where(listed(bindparam("family", type_=String)))
            .order_by(*BY_RANK).limit(bindparam("limit", type_=Integer))
            .offset(bindparam("offset", type_=Integer)))


@functools.cache
def _hits_statement(dialect: str) -> Select[int, str, float, int]:
    """The ratings of a name search's hits (:data:`RATING_COLUMNS`), built once per dialect:
    ``family`` and ``ids`` bound."""
    return select(*RATING_COLUMNS).where(Rating.family == bindparam("family", type_=String),
                                         among_bound(dialect, Rating.bot_id, "ids"))


_FAMILY_NAMES = select(RatingFamily.name)
"""The rating families' names (the leaderboard's family picker), built once."""


def rating_lines(s: Session, stmt: Select[int, str, float, int],
                 params: dict[str, Any] | None = None) -> list[RatingLine]:
    """The ratings ``stmt`` selects (:data:`RATING_COLUMNS`; ``params``: its bound values),
    with their bots: two column statements.  Loading ``Rating`` objects with
    ``selectinload(Rating.bot)`` built every bot of the page whole (its info document
    decoded): a third of the leaderboard's time."""
    rows = s.execute(stmt, params).all()
    briefs = bot_briefs(s, [r[0] for r in rows])
    return [RatingLine(r[0], r[1], r[2], r[3], briefs[r[0]]) for r in rows]


def rating_json(r: Rating | RatingLine) -> dict[str, Any]:
    m = margin_of(current_app.config, r.games, r.family)
    return {"family": r.family, "rating": round(r.rating, 2), "games": r.games,
            "provisional": provisional(r.games), "margin": round(m, 1),
            "interval": [round(r.rating - m, 1), round(r.rating + m, 1)]}


# --- pages -----------------------------------------------------------------------------------


def leaderboard_rows_html(rows: list[RatingLine], ranks: dict[int, int]) -> Markup:
    """The leaderboard table's rows, as the template's loop wrote them (byte for byte:
    its whitespace too).  Python, not a Jinja loop: 50 rows of five cells were a third of
    the page's render (an attribute lookup, a conversion and an escape per cell)."""
    provisional_games = int(current_app.config["ELO_PROVISIONAL_GAMES"])
    out = []
    for r in rows:
        status = escape(r.bot.status)
        prov = (' <span class="muted small">provisional</span>'
                if r.games < provisional_games else "")
        out.append(f'\n      <tr>\n        <td class="num rank">{ranks[r.bot_id]}</td>\n'
                   f'        <td>{bot_link_html(r.bot_id, r.bot.name)}</td>\n'
                   f'        <td class="num">{rating_html(r.rating, r.games, r.family)}</td>\n'
                   f'        <td class="num">{r.games}</td>\n'
                   f'        <td><span class="badge badge-{status}">{status}</span>{prov}</td>\n'
                   '      </tr>\n    ')
    return Markup("".join(out))



@bp.get("/leaderboard")
@limited("pages")
@page("Leaderboard of a rating family (?family=, ?page=, ?q= a name prefix) with a "
      "rating-history chart")
def leaderboard() -> str:
    """One page of a family's leaderboard (``?page=``), optionally only the bots whose name
    starts with ``?q=`` (case-insensitive), with each row's rank in the whole family."""
    s = session()
    cfg = current_app.config
    family = request.args.get("family", DEFAULT_FAMILY)[:64]
    q = request.args.get("q", "").strip()[:NAME_PREFIX_MAX]
    page = max(1, arg_int("page") or 1)
    size = int(cfg["LEADERBOARD_PAGE_SIZE"])
    families = sorted(set(s.scalars(_FAMILY_NAMES)) | {DEFAULT_FAMILY})
    if q:
        hits = search(s, family, q, size + 1, (page - 1) * size)
        ids = [b for b, _ in hits]
        ranks = dict(hits)
        by_id = {r.bot_id: r for r in rating_lines(
            s, _hits_statement(s.get_bind().dialect.name), {"family": family, "ids": ids})}
        rows = [by_id[b] for b in ids if b in by_id]
    else:
        # ix_ratings_family_rating: one index range, however many bots.
        rows = rating_lines(s, _page_statement(), {"family": family, "limit": size + 1,
                                                   "offset": (page - 1) * size})
        ranks = {r.bot_id: (page - 1) * size + i + 1 for i, r in enumerate(rows)}
    more = len(rows) > size
    rows = rows[:size]
    top = rows[:CHART_BOTS]
    hist = rating_series(s, family, {r.bot_id: r.games for r in top}, int(cfg["CHART_POINTS"]))
    chart = rating_chart([(r.bot.name, hist.get(r.bot_id, []),
                           url_for("bots.bot_page", bot_id=r.bot_id)) for r in top])
    return render_template("leaderboard.html", family=family, families=families, rows=rows,
                           rows_html=leaderboard_rows_html(rows, ranks), chart=chart, q=q,
                           page=page,
                           next_page=page + 1 if more else None,
                           prev_page=page - 1 if page > 1 else None)


# --- JSON ------------------------------------------------------------------------------------


@bp.get("/api/families")
@operation("Rating families and the presets in each", {200: (out.Families, "families")})
def list_families() -> Response:
    s = session()
    counts = {f.name: f.results for f in s.scalars(select(RatingFamily))}
    presets: dict[str, list[str]] = {}
    for name in preset_names():
        presets.setdefault(family_of(name), []).append(name)
    items = [{"family": f, "presets": p, "results": counts.get(f, 0)}
             for f, p in sorted(presets.items())]
    return jsonify({"items": items, "shared": FAMILY_OF})


@bp.get("/api/ratings")
@limited("pages")
@operation("Leaderboard of one rating family", {200: (out.Leaderboard, "leaderboard")},
           query=RatingsQuery)
def leaderboard_json() -> Response:
    query = from_query(RatingsQuery)
    family = query.family
    page, limit = page_args(query)
    first_rank = (page - 1) * limit

    rows = rating_lines(session(), _page_statement(), {"family": family, "limit": limit,
                                                       "offset": first_rank})
    # The maintained count of the family's listed ratings, not count(*) of listed(family):
    # that read every rating of the family (15-27 ms of SQL at 100,000 bots).
    total = counts.ratings_total(session(), family)
    items = [
        {"rank": first_rank + i + 1, "bot": {"id": r.bot_id, "name": r.bot.name,
                                             "status": r.bot.status},
         **rating_json(r)}
        for i, r in enumerate(rows)
    ]
    return jsonify({"family": family, "items": items, "page": page, "limit": limit,
                    "total": total, "next_page": page + 1 if page * limit < total else None})


@bp.get("/api/bots/<id:bot_id>/ratings")
@limited("pages")
@operation("Rating history of the bot, oldest first",
           {200: (out.CursorPage[out.RatingEvent], "rating changes")}, query=HistoryQuery,
           errors={404: "no such bot"})
def bot_rating_history(bot_id: int) -> Response:
    bot = get_bot(bot_id, include_deleted=True)
    query = from_query(HistoryQuery)
    key, limit = keyset_args("ratings", query.limit)
    stmt = select(RatingEvent).where(RatingEvent.bot_id == bot.id)
    if query.family is not None:
        stmt = stmt.where(RatingEvent.family == query.family)
    if key is not None:
        stmt = stmt.where(RatingEvent.id > key)

    def render(e: RatingEvent) -> dict[str, Any]:
        return {"match_id": e.match_id, "family": e.family, "before": e.before,
                "after": e.after, "delta": e.after - e.before, "games": e.games,
                "provisional": provisional(e.games), "at": iso(e.created_at)}

    rows = list(session().scalars(stmt.order_by(RatingEvent.id).limit(limit + 1)))
    return jsonify(keyset_page("ratings", [render(e) for e in rows], rows, limit,
                               lambda e: e.id))
