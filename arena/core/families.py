"""Rating families: which rule sets share one rating.

A rating says how well a bot plays a game; rule sets that change what good play is get their
own rating, rule sets that only relabel things (suit order, scoring weights) share one.

=============  =====================================================================
family         presets
=============  =====================================================================
``classic``    standard, taiwan, pusoy-dos, poker-style, malta, steep: the same play
               with another suit order, tie-breaking, payout or a rare instant win.
``hong-kong``  hong-kong, hong-kong-two-high: twos and aces placed otherwise in sequences
               (hong-kong also lets the winner lead the next deal).
``<preset>``   every other preset is its own family: no triples or flushes (singapore),
               bombs (lukang), same-type-only
               five-card hands (bu-bu-gao-sheng), strict passes (indonesia), last-card
               duty (house-003), playing to the end (hawaii-penning), three players with
               a stock (three-player-stock).
=============  =====================================================================

A rule set with a player count other than its preset's gets ``/<n>p`` appended: Elo over a
four-seat table and over a three-seat one do not measure the same thing.
"""

from __future__ import annotations

import functools

from referee import RuleSet, find_ruleset

from .models import RULESET_NAME_MAX  # the width of the rule-set name columns

FAMILY_OF: dict[str, str] = {
    "standard": "classic",
    "taiwan": "classic",
    "pusoy-dos": "classic",
    "poker-style": "classic",
    "malta": "classic",
    "steep": "classic",
    "hong-kong": "hong-kong",
    "hong-kong-two-high": "hong-kong",
}
"""Preset name -> family, for presets that share a family; others are their own family."""


def family_of(ruleset: str | RuleSet) -> str:
    """The rating family of a rule set, or of a preset name or alias (ValueError if unknown)."""
    rules = find_ruleset(ruleset) if isinstance(ruleset, str) else ruleset
    base = rules.name.split("+", 1)[0]
    family = FAMILY_OF.get(base, base)
    preset_players = find_ruleset(base).players
    if rules.players != preset_players:
        family += f"/{rules.players}p"
    return family


def storable_ruleset(name: str) -> RuleSet:
    """The rule set a name or ``preset+key=value,...`` string describes, refused with a clear
    reason (ValueError) when it is unknown or its canonical name is longer than the database
    keeps: a name cut short would name other rules."""
    rules = find_ruleset(name)
    if len(rules.name) > RULESET_NAME_MAX:
        raise ValueError(
            f"the rule set {rules.name!r} has a {len(rules.name)}-character name; the arena "
            f"stores names of at most {RULESET_NAME_MAX} characters: change fewer options"
        )
    return rules


def canonical_ruleset(name: str) -> str:
    """The preset's canonical name for a name or alias (raises ValueError for unknown)."""
    return find_ruleset(name).name


@functools.lru_cache(maxsize=256)
def family_seats(family: str) -> int:
    """The number of seats of a family's tables: ``/<n>p`` when its name says so, else its
    presets' (4 when the name is no family the arena knows)."""
    base, _, suffix = family.partition("/")
    if suffix.endswith("p") and suffix[:-1].isdigit():
        return int(suffix[:-1])
    preset = next((p for p, f in FAMILY_OF.items() if f == base), base)
    try:
        return find_ruleset(preset).players
    except ValueError:
        return 4
