"""Big Two referee: the pure game and match engine (standard library only).

Quick use::

    from referee import find_ruleset, Deal
    deal = Deal.new(find_ruleset("standard"), 1)
    while not deal.over:
        deal.push(deal.legal_moves()[0])
    print(deal.outcome)
"""

from .cards import (
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
from .combos import Play, beats, classify
from .compiled import Tables, tables_for
from .outcome import Outcome, Termination
from .presets import PRESETS, find_ruleset, preset_names
from .rules import RuleSet
from .state import PASS, Deal, DealContext, Turn

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
