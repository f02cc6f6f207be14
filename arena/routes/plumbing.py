"""What the views of every feature share: finding the row a URL names, who may act on it,
offset pages, timestamps as JSON, and, for the HTML pages, the CSRF token, the "not found"
page, the security headers and the template filters.

The other shared parts of the HTTP layer are modules of their own, each one concern with
its own docstring, and the views use them directly: :mod:`arena.web.errors` (the one JSON body
parser and the JSON error shape), :mod:`arena.web.limits` (``@limited``: rate limits),
:mod:`arena.web.idempotency` (``@idempotent`` and ``commit``: the ``Idempotency-Key`` header),
:mod:`arena.web.pagination` (keyset cursors for the lists that grow without bound) and
:mod:`arena.core.security` (tokens).

:func:`init_app` installs the app-wide parts (headers on every response, template filters
and globals); :func:`arena.create_app` calls it.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import Flask, Response, current_app, g, jsonify, request, url_for
from flask import session as cookie_session
from markupsafe import Markup, escape
from sqlalchemy import Select, func, select
from sqlalchemy.orm.interfaces import ORMOption

from arena.accounts import service as accounts
from arena.accounts import sessions as account_sessions
from arena.core.models import MAX_ID, Bot, utcnow
from arena.core.security import bearer_token, is_admin, token_matches
from arena.core.storage import session
from arena.play.uncertainty import margin_of
from arena.web import owners, readcache
from arena.web.errors import ApiError, error_response
from arena.web.shapes.requests import Paging
from referee.game.numbering import shown
from referee.runner.faults import FAULTS

FAULT_NAMES = {code: kind.name for code, kind in FAULTS.items()}
"""Every fault's name by its code, for the replay viewer (one vocabulary with the pages)."""

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'")
FORMAT_NAMES = {"round_robin": "Round robin", "swiss": "Swiss", "knockout": "Knockout"}
"""Tournament formats as pages name them."""
FORM_EXPIRED = "This form has expired or did not come from this site; please submit it again."


# --- JSON ------------------------------------------------------------------------------------


def iso(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def app_object() -> Flask:
    """The app itself (not the ``current_app`` proxy), for the services that take one."""
    return current_app._get_current_object()  # type: ignore[attr-defined, no-any-return]


def page_args(query: Paging) -> tuple[int, int]:
    """The page (from 1) and the page size of an offset list's validated query."""
    return query.page, query.limit or int(current_app.config["API_PAGE_LIMIT"])


def paginate(stmt: Select[Any], query: Paging, render: Callable[[Any], Any], *,
             render_all: Callable[[Any], list[Any]] | None = None,
             total: int | None = None) -> Response:
    """An offset page of a short list (``render`` per row, or ``render_all`` for the whole
    page at once when rows need related data loaded together).  ``total``: the list's
    length when the caller knows it (a maintained count, :mod:`arena.core.counts`), else
    ``count(*)`` of ``stmt``."""
    page, limit = page_args(query)
    s = session()
    if total is None:
        total = s.scalar(select(func.count()).select_from(stmt.order_by(None).subquery())) or 0
    rows = s.scalars(stmt.limit(limit).offset((page - 1) * limit)).all()
    return jsonify({
        "items": render_all(rows) if render_all is not None else [render(r) for r in rows],
        "page": page,
        "limit": limit,
        "total": total,
        "next_page": page + 1 if page * limit < total else None,
    })


# --- rows and rights -------------------------------------------------------------------------

Row = TypeVar("Row")


def get_or_404(model: type[Row], row_id: int, noun: str, *,
               options: Sequence[ORMOption] = ()) -> Row:
    """The ``model`` row a URL names (loaded with ``options``), or the API's 404
    ``no <noun> <id>``."""
    row = session().get(model, row_id, options=options)
    if row is None:
        raise ApiError(404, "not_found", f"no {noun} {row_id}")
    return row


def get_bot(bot_id: int, *, include_deleted: bool = False) -> Bot:
    """The bot a URL or a body names, or a 404 (a deleted bot too, unless asked for)."""
    bot = session().get(Bot, bot_id)
    if bot is None or (bot.deleted_at is not None and not include_deleted):
        raise ApiError(404, "not_found", f"no bot {bot_id}")
    return bot


def get_bots(ids: list[int]) -> list[Bot]:
    """The bots a body names, in its order (a 404 for the first missing one)."""
    bots = []
    for b in ids:
        if not 1 <= b <= MAX_ID:
            raise ApiError(404, "not_found", f"no bot {b}")
        bots.append(get_bot(b))
    return bots


READ, WRITE = "bots:read", "bots:write"
"""The scopes an account token needs to read a bot as its owner, and to change it."""


def is_owner(bot: Bot, scope: str = READ, *, admin: bool = True) -> bool:
    """Whether the request's bearer token owns ``bot``: the bot's owner token, an account
    token of the account that owns it carrying ``scope``, or (with ``admin``) the
    operator's."""
    try:
        require_owner(bot, scope, admin=admin)
    except ApiError:
        return False
    return True


def require_owner(bot: Bot, scope: str = WRITE, *, admin: bool = True) -> None:
    """Refuse the request unless its bearer token owns ``bot`` (see :func:`is_owner`): 401
    without a token or with an unknown or revoked account token, 403 for a token that does
    not own the bot or lacks ``scope``.  Every owner-only endpoint goes through here."""
    token = bearer_token()
    if token is None:
        raise ApiError(401, "unauthorized", "send the bot's owner token or an account token: "
                       "Authorization: Bearer <token>")
    if token_matches(token, bot.token_hash) or (admin and is_admin(token)):
        return
    if accounts.looks_like_account_token(token):
        use = accounts.use_token(session(), token)
        if use is None:
            raise ApiError(401, "unauthorized", "this account token is unknown or revoked")
        if not accounts.owns(use.account, bot):
            raise ApiError(403, "forbidden", "this account does not own this bot")
        if not use.allows(scope):
            raise ApiError(403, "forbidden", f"this account token lacks the scope {scope}")
        return
    raise ApiError(403, "forbidden", "this token does not own this bot")


def browser_owns(bot: Bot) -> bool:
    """Whether this browser is signed in as ``bot``'s owner: with the bot's owner token
    (:mod:`arena.web.owners`) or as the account that owns it (:mod:`arena.accounts.sessions`)."""
    return owners.is_owner(bot) or accounts.owns(account_sessions.current(session()), bot)


def require_admin() -> None:
    if not current_app.config["ADMIN_TOKEN"]:
        raise ApiError(403, "admin_disabled", "the admin API is disabled (no ADMIN_TOKEN)")
    token = bearer_token()
    if token is None:
        raise ApiError(401, "unauthorized", "send the admin token: Authorization: Bearer <token>")
    if not is_admin(token):
        raise ApiError(403, "forbidden", "wrong admin token")


def provisional(games: int) -> bool:
    """Whether a rating of ``games`` games is still provisional (marked on every list)."""
    return games < int(current_app.config["ELO_PROVISIONAL_GAMES"])


# --- pages -----------------------------------------------------------------------------------


def _session_csrf_token() -> str:
    token = cookie_session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(24)
        cookie_session["csrf"] = token
    return token


csrf_token = readcache.visitor_token(_session_csrf_token)
"""The visitor's CSRF token, or its slot in a render the response cache may share."""


def csrf_ok() -> bool:
    sent = request.form.get("csrf_token", "")
    want = cookie_session.get("csrf")
    return isinstance(want, str) and bool(sent) and hmac.compare_digest(sent, want)


def page_not_found(what: str) -> Response:
    """The 404 of a page whose row does not exist (``what``: "bot 12"): the HTML error page
    for a browser, the JSON error for API clients, like every other error
    (:func:`arena.web.errors.error_response`)."""
    return error_response(404, "not_found", f"no {what}", page_message=f"there is no {what}")


def arg_int(name: str) -> int | None:
    """A small whole number from the query string of a page, or None (pages do not answer
    400 to a mistyped link; they show the default)."""
    raw = request.args.get(name, "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 7 else None


def content_security_policy() -> str:
    """:data:`CSP`, and the live relay's origin when it has one of its own (the demo's relay
    on another port; behind nginx it is this site)."""
    live = str(current_app.config["LIVE_URL"])
    if "://" not in live:
        return CSP
    u = urlsplit(live)
    return CSP.replace("connect-src 'self'", f"connect-src 'self' {u.scheme}://{u.netloc}")


def security_headers(resp: Response) -> Response:
    resp.headers.setdefault("Content-Security-Policy", content_security_policy())
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("X-Frame-Options", "DENY")
    resp.headers.setdefault("Referrer-Policy", "same-origin")
    resp.headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    return resp


def rating_margin(games: int, family: str) -> float:
    """The ± of a rating (half its 95% interval, :mod:`arena.play.uncertainty`)."""
    return margin_of(current_app.config, games, family)


def rating_html(value: float, games: int, family: str = "classic") -> Markup:
    """A rating with its ± (the title gives its 95% interval) and the provisional mark:
    ``rating`` in templates (``_macros.html`` exports it under that name).  A function, not template
    code: the leaderboard shows 50 of them, and a Jinja macro call with its ``set`` and
    five formatted numbers cost several times this (``family``, the one text a visitor can
    choose, is escaped as the template would)."""
    m = rating_margin(games, family)
    provisional_games = int(current_app.config["ELO_PROVISIONAL_GAMES"])
    out = (f'<span class="rating">{value:.0f}</span><span class="margin" '
           f'data-test="rating-margin" title="95% interval: {value - m:.0f} to '
           f'{value + m:.0f} ({games} rated result{"" if games == 1 else "s"} in '
           f'{escape(family)})">&plusmn;{m:.0f}</span>')
    if games < provisional_games:
        out += (f'<span class="prov" title="provisional: fewer than {provisional_games} '
                'rated games">?</span>')
    return Markup(out)


def bot_href(bot_id: int) -> str:
    """``url_for("bots.bot_page", bot_id=bot_id)``, routed once per request (the
    ``bot_link`` macro: a leaderboard page links 58 bots, a routing each)."""
    prefix = g.get("arena_bot_href")
    if prefix is None:
        prefix = g.arena_bot_href = url_for("bots.bot_page", bot_id=1)[:-1]
    return f"{prefix}{int(bot_id)}"


def bot_link_html(bot_id: int, name: str) -> Markup:
    """A link to a bot's page: the ``bot_link`` of ``_macros.html``.  A function, not a
    macro: a Jinja macro call costs about 30 Python calls, and a page links up to 60 bots
    (the leaderboard's rows and chart, the home page, a tournament's tables).  Escaped as
    the macro's template escaped."""
    return Markup(f'<a class="bot" href="{escape(bot_href(bot_id))}">{escape(name)}</a>')


def state_badge_html(state: str) -> Markup:
    """A match's or a tournament's state as a badge (a pulse while it plays): the
    ``state_badge`` of ``_macros.html``, a function for the reason of :func:`bot_link_html`."""
    pulse = '<span class="pulse" aria-hidden="true"></span>' if state in (
        "running", "playing") else ""
    text = escape(state)
    return Markup(f'<span class="badge badge-{text}">{pulse}{text}</span>')


def template_globals() -> dict[str, Any]:
    return {"csrf_token": csrf_token, "format_name": lambda f: FORMAT_NAMES.get(f, f),
            "signed_in_account": lambda: account_sessions.current(session()),
            "provisional_games": int(current_app.config["ELO_PROVISIONAL_GAMES"]),
            "fault_names": FAULT_NAMES, "rating_margin": rating_margin,
            "rating_html": rating_html, "bot_href": bot_href, "bot_link_html": bot_link_html,
            "state_badge_html": state_badge_html}


def card_filter(text: str) -> str:
    """``"TD"`` -> ``"10♦"`` (display text; the template escapes it)."""
    rank, suit = text[:-1], text[-1]
    return ("10" if rank == "T" else rank) + {"D": "♦", "C": "♣", "H": "♥", "S": "♠"}.get(
        suit, suit)


def human_filter(index: int) -> int:
    """A 0-based seat, deal or turn index (as the wire protocol, the match logs and the JSON
    API number them) as people count: from 1, as the command line does too
    (:mod:`referee.game.numbering`).  Every page shows seats, deals and turns through this
    one filter, and the replay viewer adds 1 the same way (docs/logs.md, "Numbering")."""
    return shown(index)


def ago_filter(value: Any) -> str:
    if value is None:
        return ""
    s = (utcnow() - value).total_seconds()
    if s < 60:
        return "just now"
    if s < 3600:
        return f"{int(s // 60)} min ago"
    if s < 86400:
        return f"{int(s // 3600)} h ago"
    return str(value.strftime("%Y-%m-%d"))


def init_app(app: Flask) -> None:
    """The parts every response and every template share, whichever feature made them."""
    app.after_request(security_headers)
    app.extensions["arena.readcache.token"] = _session_csrf_token  # fills a shared render
    app.context_processor(template_globals)
    app.add_template_filter(card_filter, "card")
    app.add_template_filter(ago_filter, "ago")
    app.add_template_filter(human_filter, "human")
