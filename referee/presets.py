"""Named presets: each is a set of option values, with the rule text it follows.

``find_ruleset(name)`` accepts a preset name or alias; keyword overrides derive a variant
(``find_ruleset("house-003", players=3)``).
"""

from __future__ import annotations

from typing import Any

from .rules import (
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
    option_fields,
)

_NO_FLUSH = tuple(k for k in STANDARD_FIVE_ORDER if k is not FiveKind.FLUSH)
_HONOUR = frozenset({FiveKind.FOUR_OF_A_KIND, FiveKind.STRAIGHT_FLUSH})

PRESETS: dict[str, RuleSet] = {
    r.name: r
    for r in [
        RuleSet(
            name="standard",
            aliases=("big-two", "deuces", "default"),
            description="The default convention of shared/rules/README.md: suits D<C<H<S, "
            "A2345 lowest sequence, flush by suit, 3D opens, pass costs a turn, 1/2/3 per card "
            "at 10 and 13 cards, winner collects.",
        ),
        RuleSet(
            name="hong-kong",
            aliases=("choh-dai-di", "dai-di", "hk"),
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
            description="The Hong Kong version Karl Boehnker calls most common (000, 001): twos "
            "rank high in sequences and never follow a three, so J-Q-K-A-2 is highest.",
            straights="two-high-no-wrap",
            flush_compare=FlushCompare.TOP_CARD,
            later_leads=LaterLead.WINNER,
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
            aliases=("da-lao-er",),
            description="GameSky's Da Lao Er / Bu Bu Gao Sheng (000 Variations): no flushes, a "
            "five-card hand only beats one of its own type, four of a kind or a straight flush "
            "may be played out of turn to beat any combination, 1 per card up to 10 and 2 per "
            "card from 11.",
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
            aliases=("sg", "chor-dai-di"),
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
            "low), flushes by highest card, the player before a last card must play highest, "
            "doubled from 7 cards and tripled from 12 (three players: 11 and 16), three players "
            "play with a dead hand, penalty points only.",
            direction=Direction.CLOCKWISE,
            straights="two-high-no-wrap",
            flush_compare=FlushCompare.TOP_CARD,
            last_card_duty=LastCardDuty.HIGHEST_SINGLE_NO_PASS,
            leftover=Leftover.GHOST_HAND,
            penalty=PenaltySchedule(
                tiers=((7, 2), (12, 3)), tiers_three_players=((11, 2), (16, 3))
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
            description="Penning, Hawaii (000 wiki var. 28): suits clubs < spades < hearts < "
            "diamonds; played to the end, places scored 5/3/1/0.",
            suit_order="CSHD",
            play_to_end=True,
            settlement=Settlement.PLACES,
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
            description="Big Two President (000 wiki, 002): play to the end; from the second deal "
            "the President and Scum, Vice-President and Vice-Scum exchange cards; places "
            "score 5/3/1/0.",
            play_to_end=True,
            exchange=Exchange.PRESIDENT,
            settlement=Settlement.PLACES,
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


def preset_names() -> list[str]:
    return list(PRESETS)


def find_ruleset(name: str = "standard", **overrides: Any) -> RuleSet:
    """The preset called ``name`` (or an alias), with option overrides applied.

    An overridden preset is named after its base with the overrides appended, so logs show
    what was played, e.g. ``house-003+players=3``; such a name is accepted back here
    (``find_ruleset("house-003+players=3")``), so a rule set can be named in one string.
    """
    base_name, _, suffix = name.strip().partition("+")
    key = base_name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in PRESETS:
        known = ", ".join(PRESETS)
        raise ValueError(f"unknown rule set {name!r}; known: {known}")
    merged = {**parse_overrides(suffix), **overrides}
    base = PRESETS[key]
    if not merged:
        return base
    text = ",".join(f"{k}={format_option(v)}" for k, v in sorted(merged.items()))
    return base.with_options(name=f"{base.name}+{text}", aliases=(), **merged)


_INT_OPTIONS = {"players", "cards_per_player", "lowest_card_every", "loser_stake"}
_LIST_OPTIONS = {
    "five_card_order", "bomb_kinds", "bomb_targets", "forbidden_final", "instant_wins",
    "redeal", "straight_lengths",
}


def format_option(value: Any) -> str:
    """Text of an option value in a rule-set name: lists joined by ``/``, booleans lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [str(getattr(v, "value", v)) for v in value]
        return "/".join(items if isinstance(value, (list, tuple)) else sorted(items))
    return str(getattr(value, "value", value))


def parse_overrides(suffix: str) -> dict[str, Any]:
    """Parse ``key=value,key=value`` as written by :func:`format_option` (the penalty schedule
    cannot be named this way: build the RuleSet instead)."""
    out: dict[str, Any] = {}
    if not suffix.strip():
        return out
    fields = {f.name for f in option_fields()}
    for part in suffix.split(","):
        k, eq, v = part.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or k not in fields or k == "penalty":
            raise ValueError(f"cannot read rule-set option {part!r}")
        if k in _INT_OPTIONS:
            out[k] = None if v == "None" else int(v)
        elif k in _LIST_OPTIONS:
            items = [x for x in v.split("/") if x]
            out[k] = [int(x) for x in items] if k in ("bomb_targets", "straight_lengths") else items
        elif v in ("true", "false", "True", "False"):
            out[k] = v.lower() == "true"
        else:
            out[k] = v
    return out
