"""The service's URLs, one Flask blueprint per feature; each holds that feature's HTML pages
and its JSON endpoints (``/api/...``) side by side, so a change to bots, say, is one module.

=============  ==============================================================================
blueprint      what it serves
=============  ==============================================================================
site           home page, ``/healthz``, ``/readyz``
bots           submission (form and ``POST /api/bots``), the bot list and page and
               ``/api/bots/...``: changes, pause, delete, signing secret, versions, health
               checks; and (:mod:`arena.routes.bot_calls`) the owner's view of the bot's
               last calls
matches        match list, match page and replay, ``/api/matches/...``, log downloads, a bot's
               matches, the operator's matches and ladder rounds
ratings        leaderboard (page and ``/api/ratings``), ``/api/families``, a bot's history
tournaments    tournament list, form, page and live fragment, ``/api/tournaments/...``
live           live now: running matches and tournaments, the featured table, viewer
               counts (``/live``, ``/api/live``)
accounts       owner accounts: sign-up, sign-in and out, "my bots", adopting a bot, API
               tokens, the operator's reset link, ``/api/account/...``
webhooks       owners' webhooks: ``/api/webhooks...`` and the account's page with the
               delivery log, ``/account/webhooks``
challenges     an owner's matches on demand: ``/api/challenges``, the form, the challenge
               page (queue position, then the live match), a bot's opt-out
docs           the OpenAPI document, ``/api/openapi.json``, and the same as a page, ``/docs/api``
metrics        ``/metrics`` for Prometheus (behind ``METRICS_TOKEN``)
=============  ==============================================================================

Endpoint names are ``<blueprint>.<view>`` (``url_for("bots.bot_page", bot_id=...)``).  What
the views share is in :mod:`arena.routes.plumbing`; the tournament rules themselves stay in
:mod:`arena.tournaments`, as the bot, match and rating services stay in ``arena.bots.service``,
``arena.play.matches`` and ``arena.play.ratings``: ``arena.routes`` is only the service's face.
"""

from __future__ import annotations

from flask import Blueprint

from . import (
    accounts,
    bot_calls,
    bot_checks,
    bots,
    challenges,
    docs,
    live,
    matches,
    metrics,
    ratings,
    site,
    tournaments,
    webhooks,
)

ATTACHED = (bot_calls, bot_checks)
"""Modules that add their views to another feature's blueprint (imported for that): the
owner's view of a bot's calls and the owner's "check now" are part of ``bots``."""

BLUEPRINTS: tuple[Blueprint, ...] = (site.bp, bots.bp, matches.bp, ratings.bp,
                                     tournaments.bp, live.bp, accounts.bp, webhooks.bp,
                                     challenges.bp,
                                     docs.bp, metrics.bp)
"""Every feature's blueprint, in the order the app factory registers them."""
