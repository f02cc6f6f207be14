"""Named presets: each is a set of option values, with the rule text it follows.

``find_ruleset(name)`` accepts a preset name or alias; keyword overrides derive a variant
(``find_ruleset("house-003", players=3)``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .rules import (
    PENALTY_ENUMS,
    STANDARD_FIVE_ORDER,
    CardValues,
    Direction,
    Exchange,
    FinalRestriction,
    FiveCompare,
    FiveKind,
    FlushCompare,
    InstantWin,
    LastCardDuty,
    LaterLead,
    Leftover,
    PassDraw,
    PassRule,
    PenaltySchedule,
    RuleSet,
    Settlement,
    ShortHandedTiers,
)

_NO_FLUSH = tuple(k for k in STANDARD_FIVE_ORDER if k is not FiveKind.FLUSH)
_HONOUR = frozenset({FiveKind.FOUR_OF_A_KIND, FiveKind.STRAIGHT_FLUSH})

PRESETS: dict[str, RuleSet] = {
    r.name: r
    for r in [
        RuleSet(
            name="standard",
            # Why each alias leads here: ALIAS_REASONS below (printed in docs/rules.md).
            aliases=(
                "big-two",
                "big-deuce",
                "deuces",
                "default",
                "top-dog",
                "dai-di",
                "choh-dai-di",
                "chor-dai-di",
                "choi-dai-di",
            ),
            description="The default convention of shared/rules/README.md: suits D<C<H<S, "
            "A2345 lowest sequence, flush by suit, 3D opens, pass costs a turn, 1/2/3 per card "
            "at 10 and 13 cards, winner collects.",
        ),
        RuleSet(
            name="hong-kong",
            aliases=("hk",),
            description="Ivan Ip's Hong Kong rules (000): flushes by highest card, A2345 then "
            "23456 highest sequences and no JQKA2, a dragon wins outright, no single two as "
            "the last card, the winner leads the next deal.",
            straights="hong-kong",
            flush_compare=FlushCompare.TOP_CARD,
            instant_wins=frozenset({InstantWin.DRAGON}),
            forbidden_final=frozenset({FinalRestriction.SINGLE_TWO}),
            later_leads=LaterLead.WINNER,
        ),
        RuleSet(
            name="hong-kong-two-high",
            description="The Hong Kong version Karl Boehnker calls most common (000:138, "
            "001:42): twos rank high in sequences and never follow a three, so J-Q-K-A-2 is "
            "highest; everything else as in the standard game (neither text gives this "
            "version other rules).",
            straights="two-high-no-wrap",
        ),
        RuleSet(
            name="taiwan",
            aliases=("tw",),
            description="Taiwan suit order clubs < diamonds < hearts < spades, so the three of "
            "clubs opens (000 'Order of suits'; 000 wiki var. 12).",
            suit_order="CDHS",
        ),
        RuleSet(
            name="bu-bu-gao-sheng",
            aliases=("da-lao-er", "gamesky"),
            description="The game a Chinese web site, GameSky, called Da Lao Er or Bu Bu Gao "
            "Sheng (000:106; both are also everyday names of Big Two itself, 000:24, 000:26, "
            "002:11: see the names below for why both lead here): no flushes, a five-card hand "
            "only beats one of its own type, four of a kind or a straight flush may be played "
            "out of turn to beat any combination, 1 per card up to 10 and 2 per card from 11. "
            "Between two bombs the same-type rule still holds: a four of a kind is beaten only "
            "by a higher four of a kind and a straight flush only by a higher straight flush "
            "(the text's 'beat any combination' is read as any non-bomb combination).",
            five_card_order=_NO_FLUSH,
            five_card_compare=FiveCompare.SAME_TYPE_ONLY,
            bomb_kinds=_HONOUR,
            bomb_targets=frozenset({1, 2, 3, 5}),
            bombs_out_of_turn=True,
            penalty=PenaltySchedule(tiers=((11, 2),), tiers_three_players=None),
        ),
        RuleSet(
            name="lukang",
            description="Lukang, central Taiwan (000, Jonathan Dushoff): honour hands (four of a "
            "kind with a card, straight flush) may beat singles, pairs and triples.",
            bomb_kinds=_HONOUR,
            bomb_targets=frozenset({1, 2, 3}),
        ),
        RuleSet(
            name="indonesia",
            aliases=("capsa", "cap-sa", "capsa-banting"),
            description="Indonesian play (000, Harold Hutabarat; 001): clockwise, strict pass, "
            "sequences with a two on top ranked by the two's suit, rounds of ten deals where "
            "the three opens only the first and the winner leads the rest, Indonesian scoring.",
            direction=Direction.CLOCKWISE,
            pass_rule=PassRule.TRICK,
            straights="indonesia",
            later_leads=LaterLead.WINNER,
            lowest_card_every=10,
            penalty=PenaltySchedule(
                tiers=((11, 2), (13, 3)),
                tiers_three_players=None,
                card_values=CardValues.TWOS_FIVE,
            ),
            settlement=Settlement.INDONESIA,
        ),
        RuleSet(
            name="pusoy-dos",
            aliases=("pusoy", "sikitcha", "chikicha"),
            description="Pusoy Dos, the Philippines (000): suits clubs < spades < hearts < "
            "diamonds so the three of clubs opens; the winner scores 1, doubled for each two "
            "in the last play.",
            suit_order="CSHD",
            settlement=Settlement.PUSOY_DOS,
        ),
        RuleSet(
            name="singapore",
            aliases=("sg",),
            description="Singapore (000: Gary Chan, no triples and no flushes; 000 wiki var. 9: "
            "Singapore/Hong Kong sequence order with A2345 highest).",
            triples=False,
            five_card_order=_NO_FLUSH,
            straights="hong-kong",
        ),
        RuleSet(
            name="house-003",
            aliases=("house",),
            description="The house rules of 003: clockwise, twos high in sequences (no A or 2 "
            "low, 003:40), flushes by highest card, the player before a last card must play "
            "their highest hand of any size and may not pass while able to play (003:54), "
            "doubled from 7 cards and tripled from 12 (003:59), three players play with a "
            "dead hand (003:19) and pay by 003's three-player table whatever the deal "
            "(003:60: double from 11, triple from 16, so 13 cards left pay 26; "
            "`penalty.short_handed_tiers=bigger-hands` pays them as four players, 39); dealt "
            "17 each: `house-003+players=3,leftover=set-aside` (003:20); penalty points only.",
            direction=Direction.CLOCKWISE,
            straights="two-high-no-wrap",
            flush_compare=FlushCompare.TOP_CARD,
            last_card_duty=LastCardDuty.HIGHEST_HAND,
            leftover=Leftover.GHOST_HAND,
            penalty=PenaltySchedule(
                tiers=((7, 2), (12, 3)),
                tiers_three_players=((11, 2), (16, 3)),
                short_handed_tiers=ShortHandedTiers.PLAYER_COUNT,
            ),
            settlement=Settlement.PENALTY_ONLY,
        ),
        RuleSet(
            name="steep",
            description="Steeper penalties for money play (000; 001): x2 for 8-9 cards, x3 for "
            "10-12, x4 for 13; every pair settles up.",
            penalty=PenaltySchedule(tiers=((8, 2), (10, 3), (13, 4))),
            settlement=Settlement.PAIRWISE,
        ),
        RuleSet(
            name="malta",
            aliases=("ciniza",),
            description="Malta (000 wiki var. 16): a dealt 'dragun' of six pairs and a single "
            "wins at once, unless it holds a pair of threes.",
            instant_wins=frozenset({InstantWin.SIX_PAIRS}),
        ),
        RuleSet(
            name="hawaii-penning",
            aliases=("penning",),
            description="Penning, Hawaii (000:396 wiki var. 28): suits clubs < spades < hearts "
            "< diamonds; with three or four players play goes on for the 2nd and 3rd places, "
            "which are the result (the text gives no points).",
            suit_order="CSHD",
            play_to_end=True,
            settlement=Settlement.FINISHING_ORDER,
        ),
        RuleSet(
            name="poker-style",
            description="Poker ranks throughout (000 wiki var. 23): suits never break ties, "
            "flushes compared card by card.",
            suits_break_ties=False,
            flush_compare=FlushCompare.POKER,
        ),
        RuleSet(
            name="todd-latta",
            description="Todd Latta's Taiwan rules (000): no triples and no flushes; a straight "
            "flush is played with two extra cards; four of a kind with a card beats any single "
            "or other combination, and only a straight flush with two beats it.",
            triples=False,
            five_card_order=(FiveKind.STRAIGHT, FiveKind.FULL_HOUSE, FiveKind.FOUR_OF_A_KIND),
            straight_flush_plus_two=True,
            bomb_kinds=frozenset({FiveKind.FOUR_OF_A_KIND}),
            bomb_targets=frozenset({1, 2, 3}),
        ),
        RuleSet(
            name="smack-down",
            aliases=("chop",),
            description="Smack-down (000 wiki var. 1): a single two of spades may be chopped by "
            "four of a kind or a run of three or more pairs, and chopped back by a higher one.",
            chop=True,
        ),
        RuleSet(
            name="president",
            description="Big Two President (002:98-104; 000:405-413): play to the end; the "
            "players after the new President must follow the President's last play if they "
            "can (002:100); from the second deal the President and Asshole (Scum), "
            "Vice-President and Vice-Asshole exchange cards; the titles, that is the finishing "
            "order, are the result (neither text gives points).",
            play_to_end=True,
            follow_president=True,
            exchange=Exchange.PRESIDENT,
            settlement=Settlement.FINISHING_ORDER,
        ),
        RuleSet(
            name="teams",
            aliases=("team-play",),
            description="Team play (000 wiki, 002): partners sit opposite; the team holding fewer "
            "cards when someone goes out wins; ties go to five-card shoot-outs.",
            settlement=Settlement.TEAMS,
        ),
        RuleSet(
            name="heads-up",
            aliases=("two-player",),
            description="Two players, 17 cards each, the other 18 set aside unseen (000 'Two "
            "Player Game': the first practice it lists); the holder of the lowest dealt card "
            "opens with it.",
            players=2,
            cards_per_player=17,
            leftover=Leftover.SET_ASIDE,
        ),
        RuleSet(
            name="three-player",
            aliases=("three-player-pagat",),
            description="Three players as Pagat describes them (000:240-246): 17 cards each, the "
            "last card to the holder of the 3D (the 3C's holder if it is the 3D); a player "
            "holding more than 13 cards pays as one with 13, so the four-player schedule "
            "applies: 1 per card, 2 from 10 cards, 3 from 13 (11 cards pay 22, 16 pay 48).",
            players=3,
            penalty=PenaltySchedule(tiers_three_players=None),
        ),
        RuleSet(
            name="three-player-wiki",
            aliases=("three-player-002",),
            description="Three players with the encyclopedia's schedule (002:61, 000:340): 17 "
            "cards each, the spare to the holder of the 3D; double for more than 11 and less "
            "than 17 cards, triple for 17 (11 cards pay 11, 16 pay 32).  This is also what "
            "`standard+players=3` plays.",
            players=3,
        ),
        RuleSet(
            name="three-player-stock",
            description="Three players, 13 cards each, a pass draws from the stock (000; 001); a "
            "player holding 13 or more cards pays 3 per card, as in the four-player game (000).",
            penalty=PenaltySchedule(tiers_three_players=None),
            players=3,
            cards_per_player=13,
            leftover=Leftover.STOCK,
            pass_draw=PassDraw.ONE,
        ),
    ]
}

_ALIASES = {alias: r.name for r in PRESETS.values() for alias in r.aliases}

ALIAS_REASONS: dict[str, str] = {
    "big-two": "000:23 'Big Two, Big Deuce or Deuces are the names commonly used in the "
    "English speaking world'",
    "big-deuce": "000:23",
    "deuces": "000:23",
    "default": "the project's default convention (shared/rules/README.md)",
    "top-dog": "000:293 'This card game has many other names, including big deuce and top dog'",
    "dai-di": "every text gives Dai Di to Big Two itself, never to one region's rules: 000:25 "
    "and 002:11 (the Cantonese name of the game), 001:2 (a name of the basic game it "
    "describes), 003:1 ('It's also called Dai Di', of Big Two, before 'here are the rules we "
    "use'). The texts call Hong Kong's rules 'Hong Kong Big Two' (000:236), so the name leads "
    "to the standard game, not to `hong-kong` or `house-003`",
    "choh-dai-di": "as `dai-di`: 000:25 'Choh Dai Di or simply Dai Di', 001:2, 002:11 (Big Two "
    "itself); 000:258 writes 'Singapore Chor Dai Di' when it means one place's rules",
    "chor-dai-di": "as `dai-di`: 000:293 'in Cantonese ... chor dai di ... or simply dai di', "
    "001:2 (Big Two itself)",
    "choi-dai-di": "000:106: GameSky called the basic game 'Choi Dai Dee' (000:259 'Nicholas "
    "Cheung's page with rules of Choi Dai Di'), as against its Da Lao Er / Bu Bu Gao Sheng",
    "hk": "short for `hong-kong`",
    "tw": "short for `taiwan`",
    "da-lao-er": "000:106 gives Da Lao Er and Bu Bu Gao Sheng together to one game, GameSky's "
    "variant, set against the basic game it called Choi Dai Dee: the only passage in the texts "
    "where these names tell one rule set from another. Where the texts give them as names of "
    "Big Two itself (000:24 Mandarin, 000:26 Taiwan, 002:11) they name no rules, and that game "
    "has its own names here (`standard`, `big-two`, `dai-di`). Both names lead to one game; "
    "`bu-bu-gao-sheng` is that preset's stored name and cannot change meaning",
    "gamesky": "the web site 000:106 reports this variant from",
    "capsa": "000:293 'cap sa in Hokkien ... a name commonly used in Indonesia'",
    "cap-sa": "000:293",
    "capsa-banting": "001:2",
    "pusoy": "000:27 'Pusoy Dos is the usual name used in the Philippines'",
    "sikitcha": "000:260, 000:295 (a variation of Pusoy Dos)",
    "chikicha": "000:276, 000:295",
    "sg": "short for `singapore`",
    "house": "short for `house-003`",
    "ciniza": "000:293 'In Malta, it is often referred to as ciniza'",
    "penning": "000:396",
    "chop": "000 wiki var. 1 'Also known as a chop'",
    "team-play": "000 wiki, 002 'Team play'",
    "two-player": "000:250 'Two Player Game'",
    "three-player-pagat": "000:240-246, the Pagat-style text's three-player game",
    "three-player-002": "002:61, the encyclopedia's three-player schedule",
}
"""Why each alias leads to its preset (docs/rules.md prints it next to the alias): the rule
texts give some names to more than one game, and a name must never choose silently."""


def preset_names() -> list[str]:
    return list(PRESETS)


def find_ruleset(name: str = "standard", **overrides: Any) -> RuleSet:
    """The preset called ``name`` (or an alias), with option overrides applied.

    An overridden preset is named after its base with the overrides appended, so logs show
    what was played, e.g. ``house-003+players=3``; such a name is accepted back here
    (``find_ruleset("house-003+players=3")``), so a rule set can be named in one string.
    Every option can be written this way, the penalty schedule's fields as ``penalty.<field>``
    (see :data:`OPTION_SYNTAX` and docs/rules.md).  A ``penalty=`` keyword gives the whole
    schedule; its name lists the fields that differ from the preset's.
    """
    base_name, _, suffix = name.strip().partition("+")
    key = base_name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in PRESETS:
        known = ", ".join(PRESETS)
        raise ValueError(f"unknown rule set {name!r}; known: {known}")
    base = PRESETS[key]
    merged = {**parse_overrides(suffix), **overrides}
    if not merged:
        return base
    penalty_changes = {
        k.removeprefix(PENALTY_PREFIX): v for k, v in merged.items() if k.startswith(PENALTY_PREFIX)
    }
    changes = {k: v for k, v in merged.items() if not k.startswith(PENALTY_PREFIX)}
    if penalty_changes:
        start = changes.pop("penalty", base.penalty)
        start = RuleSet().with_options(penalty=start).penalty if isinstance(start, dict) else start
        changes["penalty"] = dataclasses.replace(start, **_coerce_penalty(penalty_changes))
    derived = base.with_options(**changes)
    named: dict[str, str] = {}
    for k in changes:
        if k == "penalty":
            for f in dataclasses.fields(PenaltySchedule):
                value = getattr(derived.penalty, f.name)
                if value != getattr(base.penalty, f.name) or f.name in penalty_changes:
                    named[PENALTY_PREFIX + f.name] = format_option(value, PENALTY_PREFIX + f.name)
        else:
            named[k] = format_option(getattr(derived, k), k)
    text = ",".join(f"{k}={v}" for k, v in sorted(named.items()))
    return dataclasses.replace(derived, name=f"{base.name}+{text}", aliases=())


PENALTY_PREFIX = "penalty."
"""Prefix of the penalty schedule's fields in a rule-set name (``penalty.twos_double=true``)."""

OPTION_SYNTAX: dict[str, str] = {
    "int": "a whole number, e.g. `players=3`",
    "int-or-none": "a whole number, or `None` for the option's 'not set' meaning",
    "bool": "`true` or `false`",
    "enum": "one of the option's values (listed below)",
    "text": "the text itself, e.g. `suit_order=CDHS`, `straights=hong-kong`",
    "text-or-none": "the text itself, or `None`",
    "list": "values joined by `/`, in order, e.g. `five_card_order=straight/full-house`; "
    "nothing after `=` for an empty list",
    "set": "values joined by `/` in any order, e.g. `bomb_targets=1/2/3`; nothing after `=` "
    "for none",
    "tiers": "`cards:multiplier` steps joined by `/`, e.g. `penalty.tiers=8:2/10:3/13:4`; "
    "nothing after `=` for no multipliers (one point per card)",
    "tiers-or-none": "as tiers, or `None` to use `penalty.tiers`",
}
"""How each type of option value is written in a rule-set name."""

OPTION_TYPES: dict[str, str] = {
    "players": "int",
    "cards_per_player": "int-or-none",
    "leftover": "enum",
    "spare_face_up": "bool",
    "direction": "enum",
    "suit_order": "text",
    "suits_break_ties": "bool",
    "triples": "bool",
    "five_card_order": "list",
    "five_card_compare": "enum",
    "straights": "text",
    "straight_flushes": "text-or-none",
    "flush_compare": "enum",
    "four_card": "enum",
    "dragon_play": "bool",
    "bomb_kinds": "set",
    "bomb_targets": "set",
    "bomb_takes_trick": "bool",
    "opening_must_include": "bool",
    "later_leads": "enum",
    "lowest_card_every": "int-or-none",
    "pass_rule": "enum",
    "pass_draw": "enum",
    "stock_empty": "enum",
    "triple_threes_force": "bool",
    "last_card_duty": "enum",
    "forbidden_final": "set",
    "instant_wins": "set",
    "redeal": "set",
    "play_to_end": "bool",
    "follow_president": "bool",
    "settlement": "enum",
    "loser_stake": "int",
    "straight_flush_plus_two": "bool",
    "chop": "bool",
    "straight_lengths": "set",
    "twos_low_after_bomb": "bool",
    "bombs_out_of_turn": "bool",
    "exchange": "enum",
    "spare_trade": "bool",
    "penalty.tiers": "tiers",
    "penalty.tiers_three_players": "tiers-or-none",
    "penalty.tiers_two_players": "tiers-or-none",
    "penalty.card_values": "enum",
    "penalty.twos_double": "bool",
    "penalty.multiplier_only_for_starter": "bool",
    "penalty.unused_power_doubles": "bool",
    "penalty.special_finish_doubles": "bool",
    "penalty.finishing_twos_double": "bool",
    "penalty.assist_penalty": "bool",
    "penalty.assist_reading": "enum",
    "penalty.short_handed_tiers": "enum",
}
"""The value type of every option as written in a rule-set name (a key of
:data:`OPTION_SYNTAX`); the ``penalty`` option itself is written field by field."""

_INT_ITEMS = {"bomb_targets", "straight_lengths"}
"""Sets whose items are numbers."""


def format_option(value: Any, key: str | None = None) -> str:
    """Text of an option value in a rule-set name (see :data:`OPTION_SYNTAX`): lists joined by
    ``/`` (sets sorted), booleans lower case, tiers as ``cards:multiplier`` steps."""
    kind = OPTION_TYPES.get(key or "")
    if value is None:
        return "None"
    if kind in ("tiers", "tiers-or-none"):
        return "/".join(f"{a}:{m}" for a, m in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [str(getattr(v, "value", v)) for v in value]
        if isinstance(value, (list, tuple)):
            return "/".join(items)
        numeric = all(isinstance(v, int) for v in value)
        return "/".join(sorted(items, key=int) if numeric else sorted(items))
    return str(getattr(value, "value", value))


def parse_overrides(suffix: str) -> dict[str, Any]:
    """Parse ``key=value,key=value`` as written by :func:`format_option` into option values
    for :meth:`RuleSet.with_options` (``penalty.<field>`` keys stay separate: see
    :func:`find_ruleset`)."""
    out: dict[str, Any] = {}
    if not suffix.strip():
        return out
    for part in suffix.split(","):
        k, eq, v = part.partition("=")
        k, v = k.strip(), v.strip()
        kind = OPTION_TYPES.get(k)
        if not eq or kind is None:
            raise ValueError(
                f"cannot read rule-set option {part!r}: write key=value with a key from "
                "docs/rules.md"
            )
        if k in out:
            raise ValueError(f"rule-set option {k!r} is given twice")
        try:
            out[k] = _parse_value(kind, v, k)
        except ValueError as exc:
            raise ValueError(f"cannot read rule-set option {part!r}: {exc}") from None
    return out


def _parse_value(kind: str, v: str, key: str) -> Any:
    if kind.endswith("-or-none") and v in ("None", "none"):
        return None
    base = kind.removesuffix("-or-none")
    if base == "int":
        return int(v)
    if base == "bool":
        if v.lower() not in ("true", "false"):
            raise ValueError("expected true or false")
        return v.lower() == "true"
    if base in ("list", "set"):
        items = [x.strip() for x in v.split("/") if x.strip()]
        return [int(x) for x in items] if key in _INT_ITEMS else items
    if base == "tiers":
        steps = []
        for step in (x for x in v.split("/") if x.strip()):
            cards, colon, mult = step.partition(":")
            if not colon:
                raise ValueError(f"tier {step!r} is not cards:multiplier")
            steps.append((int(cards), int(mult)))
        return tuple(steps)
    return v  # enum and text values are checked when the rule set is built


def _coerce_penalty(values: dict[str, Any]) -> dict[str, Any]:
    """Typed penalty-schedule field values from parsed or JSON-ish ones."""
    out = dict(values)
    for k, v in values.items():
        if k not in {f.name for f in dataclasses.fields(PenaltySchedule)}:
            raise ValueError(f"the penalty schedule has no field {k!r}")
        if k.startswith("tiers") and v is not None:
            out[k] = tuple((int(a), int(b)) for a, b in v)
        elif k in PENALTY_ENUMS:
            out[k] = PENALTY_ENUMS[k](v)
    return out
