"""Big Two referee: the game engine, the bot caller and the match runner, in four rooms.

The sub-packages are the architecture, each importing only the rooms before it
(``tests/test_architecture.py`` checks this on the source, and that no module imports itself
back through a cycle):

* :mod:`referee.game`: the game itself (cards, rule sets, move generation, a deal, scoring,
  what one seat may see).  Pure, deterministic, imports no other room.
* :mod:`referee.wire`: talking to bots over HTTP (the protocol's messages, the HTTP caller,
  the SSRF guard, URL redaction, players).  May import the game.
* :mod:`referee.runner`: running and recording matches (the match loop with its deadlines and
  strikes, match logs and their verification, the health check).  May import game and wire.
* :mod:`referee.cli`: ``python -m referee COMMAND``, one small module per command, and the
  terminal-safe printing they share.  May import every room; nothing imports it.

"wire" rather than "http" or "net" because what it owns is the conversation with a bot, of
which HTTP is the transport; "runner" because it runs matches, where "match" would clash with
its main module.

Dependencies: the standard library only, plus ``h11`` (the HTTP/1.1 parser) in the HTTP
caller, :mod:`referee.wire.httpbot`.  Never Flask, Redis, a database or :mod:`arena`
(the service depends on the referee, not the other way round).

This module re-exports the game's public names, so the quick use needs no room names::

    from referee import find_ruleset, Deal
    deal = Deal.new(find_ruleset("standard"), 1)
    while not deal.over:
        deal.push(deal.legal_moves()[0])
    print(deal.outcome)
"""

from .game.cards import (
    Card,
    CardError,
    CardNotInHandError,
    CardSet,
    DoesNotBeatError,
    MalformedCardError,
    Mask,
    NotACombinationError,
    card_text,
    mask_text,
    parse_card,
    parse_mask,
)
from .game.combos import Play, beats, classify
from .game.compiled import Tables, tables_for
from .game.outcome import Outcome, Termination
from .game.presets import PRESETS, find_ruleset, preset_names
from .game.rules import RuleSet
from .game.state import PASS, Deal, DealContext, Turn

__all__ = [
    "PASS",
    "PRESETS",
    "Card",
    "CardError",
    "CardNotInHandError",
    "CardSet",
    "Deal",
    "DealContext",
    "DoesNotBeatError",
    "MalformedCardError",
    "Mask",
    "NotACombinationError",
    "Outcome",
    "Play",
    "RuleSet",
    "Tables",
    "Termination",
    "Turn",
    "beats",
    "card_text",
    "classify",
    "find_ruleset",
    "mask_text",
    "parse_card",
    "parse_mask",
    "preset_names",
    "tables_for",
]
