"""Render ``docs/rules.md`` from the rule-set metadata, so the document cannot drift.

``python -m referee rules-doc > docs/rules.md`` regenerates it; a test checks that the
committed file equals the output.  The option table comes from :class:`~referee.game.rules.RuleSet`
field metadata, value descriptions from the enum member docstrings in ``rules.py`` (read with
``ast``, since Python keeps no docstrings for enum members), and the coverage table below lists
every convention in the rule texts with the option value that expresses it.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
from typing import Any

from . import rules as rules_module
from .presets import (
    ALIAS_REASONS,
    OPTION_SYNTAX,
    OPTION_TYPES,
    PENALTY_PREFIX,
    PRESETS,
    format_option,
)
from .rules import RuleSet, option_fields
from .straights import STRAIGHT_ORDER_ALIASES, STRAIGHT_ORDERS

# (convention as the texts describe it, source, how to get it here)
COVERAGE: list[tuple[str, str, str]] = [
    ("Suits D<C<H<S, 3D opens", "000, 001, 002, 003", "`suit_order=DCHS` (standard)"),
    (
        "Suits C<D<H<S (Taiwan, bridge order), 3C opens",
        "000, 000 wiki 12, 002 var. 6",
        "`suit_order=CDHS` (preset `taiwan`)",
    ),
    ("Suits C<S<H<D (Pusoy Dos; Hawaii penning)", "000, 000 wiki 12, 28", "`suit_order=CSHD`"),
    ("Suits C<D<S<H ('Viet style')", "002 var. 6", "`suit_order=CDSH`"),
    (
        "No suit ranking: equal ranks never beat each other",
        "000 wiki 13, 23",
        "`suits_break_ties=false`",
    ),
    (
        "Every reported sequence order",
        "000, 001, 002 var. 3, 003",
        "`straights=` one of the orders below",
    ),
    ("Flush by suit, then top card", "000, 001, 002", "`flush_compare=suit-first`"),
    (
        "Flush by top card, then suit (Hong Kong)",
        "000, 002 var. 4, 003",
        "`flush_compare=top-card`",
    ),
    ("Flush compared card by card as in poker", "000, 002 var. 4", "`flush_compare=poker`"),
    ("Straight beats flush", "000 wiki 27", "`five_card_order` with flush before straight"),
    (
        "Only a royal flush beats four of a kind",
        "000",
        "`five_card_order=[..., straight-flush, four-of-a-kind, royal-flush]`",
    ),
    (
        "No changing type ('no poker rules'); Da Lao Er full house cannot beat a straight",
        "000, 000 wiki 30",
        "`five_card_compare=same-type-only`",
    ),
    (
        "Any five-card hand beats one with a lower top card",
        "000 wiki 31",
        "`five_card_compare=highest-card`",
    ),
    ("No triples", "000 (Singapore, Taiwan)", "`triples=false`"),
    ("No flushes", "000, 000 wiki", "`five_card_order` without flush"),
    ("Four of a kind alone as a play", "000, 000 wiki 3, 4, 001", "`four_card=quads`"),
    (
        "Two pairs or four of a kind as four-card plays",
        "000 wiki 5, 002 var. 1",
        "`four_card=quads-and-two-pairs`",
    ),
    (
        "Two pairs and an odd card ('two pair junk', 'butterfly')",
        "000 wiki 6, 002 var. 2",
        "`five_card_order` with `two-pair`",
    ),
    (
        "'Sisters': consecutive pairs and an odd card",
        "000 wiki 7, 002 var. 2",
        "`five_card_order` with `sisters`",
    ),
    (
        "Three of a kind with two odd cards",
        "000 wiki 7",
        "`five_card_order` with `three-of-a-kind`",
    ),
    (
        "Honour hands (four of a kind + 1, straight flush) beat singles, pairs, triples",
        "000, 001",
        "`bomb_kinds=[four-of-a-kind, straight-flush]`, `bomb_targets=[1,2,3]` (preset `lukang`)",
    ),
    (
        "Four of a kind + 1 and straight flush beat a single or a pair",
        "000 wiki 22",
        "`bomb_targets=[1,2]`",
    ),
    (
        "Four of a kind beats everything without a four of a kind",
        "000 wiki 25",
        "`bomb_kinds=[four-of-a-kind]`, `bomb_targets=[1,2,3]`, four-of-a-kind last in "
        "`five_card_order`",
    ),
    (
        "Thirteen-card dragon as a play (three players, 17 cards)",
        "000 wiki 15, 002 var. 8",
        "`dragon_play=true`",
    ),
    (
        "Holder of the lowest card opens and must include it",
        "000, 001, 003",
        "`opening_must_include=true`",
    ),
    ("The opening play need not include the lowest card", "000", "`opening_must_include=false`"),
    (
        "Lowest card opens only the first deal; the winner leads the next",
        "000, 000 wiki 17, 001, 002 var. 9",
        "`later_leads=winner`",
    ),
    ("The loser (most cards) leads the next deal", "000", "`later_leads=loser`"),
    (
        "Indonesia: rounds of ten deals, the three opens the first of each",
        "000",
        "`lowest_card_every=10`",
    ),
    ("Anticlockwise / clockwise / alternating direction", "000, 001, 003", "`direction=`"),
    ("A pass costs only the turn", "000, 001, 002", "`pass_rule=turn`"),
    (
        "Strict pass: no play after a pass until the trick ends; the owner may beat own play",
        "000, 001, 002 var. 7, 000 wiki 14",
        "`pass_rule=trick`",
    ),
    ("The first pass ends the trick", "000 wiki", "`pass_rule=ends-trick`"),
    (
        "After a lead of three threes the next player must play three twos if nothing else",
        "000 wiki 2",
        "`triple_threes_force=true`",
    ),
    (
        "Player before a last card must play highest single or a bigger combination (no pass "
        "while the highest single beats the table)",
        "000:180",
        "`last_card_duty=highest-single`",
    ),
    (
        "Player before a last card must play their highest hand, if they can play anything: "
        "the top play of the table's size and no pass while able; leading, the top play of "
        "the size led",
        "003:54",
        "`last_card_duty=highest-hand` (preset `house-003`); the singles-only reading: "
        "`highest-single-no-pass`",
    ),
    (
        "Announcing 'last card' / 'two cards'",
        "000, 003",
        "built in: every seat sees every card count in every request, so the announcement is "
        "always made",
    ),
    (
        "No single two as the last card (Hong Kong)",
        "000, 000 wiki 35",
        "`forbidden_final=[single-2]`",
    ),
    (
        "No two of spades as the last card / in the last play",
        "000, 000 wiki 24",
        "`forbidden_final=[single-2S]` / `[any-2S]`",
    ),
    (
        "No single or double two as the last play",
        "000 wiki",
        "`forbidden_final=[single-2, pair-of-2s]`",
    ),
    ("Dragon (one of each rank) wins at once", "000, 001", "`instant_wins=[dragon]`"),
    (
        "Four twos win at once / make the deal a draw",
        "000 wiki 21, 002 var. 12",
        "`instant_wins=[four-twos]` / `[four-twos-draw]`",
    ),
    (
        "Malta: six pairs win at once, with a pair of threes lose at once",
        "000 wiki 16",
        "`instant_wins=[six-pairs]`",
    ),
    (
        "Reshuffle a hand worth 3 points or less / without face cards / with four twos",
        "000 wiki, 002",
        "`redeal=[weak-hand]` / `[no-face-cards]` / `[four-twos]` (the right "
        "to throw in is always used)",
    ),
    ("Four players, 13 cards each", "all", "`players=4` (standard)"),
    (
        "Three players, 17 each, spare to the holder of the 3D (3C if the spare is the 3D)",
        "000, 001, 002",
        "`players=3`, `leftover=to-holder-of-lowest`",
    ),
    (
        "Spare to the holder of the lowest diamond / of the two of spades",
        "000 wiki 11, 20",
        "`leftover=to-holder-of-lowest-diamond` / `to-holder-of-2s`",
    ),
    ("Spare card dealt face down", "000", "`spare_face_up=false`"),
    (
        "Extra cards set aside / lowest cards removed",
        "000 wiki 11, 002 var. 5, 003",
        "`leftover=set-aside` / `remove-lowest`",
    ),
    (
        "Three players with a ghost (dead) hand",
        "000 wiki 19, 002 var. 11, 003",
        "`leftover=ghost-hand`",
    ),
    (
        "13 cards each and a stock: a pass draws one card / as many as the play declined",
        "000, 000 wiki 18, 001, 002 var. 10",
        "`leftover=stock`, `pass_draw=one` / `play-size`",
    ),
    (
        "When the stock is gone: no more draws / reshuffle finished tricks",
        "000",
        "`stock_empty=no-draw` / `reshuffle-discards`",
    ),
    (
        "Two players: 17, 21 or 13 each, the rest unseen; or the whole pack",
        "000, 001, 002",
        "`players=2`, `cards_per_player=17|21|13`, `leftover=set-aside`",
    ),
    ("Play on until one player has cards", "000, 000 wiki 32", "`play_to_end=true`"),
    ("1 per card, x2 from 10, x3 at 13", "000:93, 001:35, 002:59", "`penalty.tiers=10:2/13:3`"),
    ("x2 for 8-9, x3 for 10-12, x4 for 13", "000:196, 001:43", "preset `steep`"),
    ("x2 from 8, x4 from 10", "000:198", "`penalty.tiers=8:2/10:4`"),
    (
        "House 7-11 double, 12-13 triple; three players 11-15 double, 16-17 triple",
        "003:59-60",
        "preset `house-003` (`penalty.short_handed_tiers=player-count`: three players pay "
        "by 003:60 with the dead hand too, 13 cards = 26; `house-003+players=3,"
        "leftover=set-aside` for 17 each)",
    ),
    (
        "Three players dealt 13 each pay as four players do",
        "000:246 (with 000:340, 002:61 written for 17 cards)",
        "`penalty.short_handed_tiers=bigger-hands` (the default)",
    ),
    (
        "Three players, 17 each: 17 cards triple, 12-16 double",
        "000:340, 002:61",
        "preset `three-player-wiki`, also `standard+players=3` "
        "(`penalty.tiers_three_players=12:2/17:3`)",
    ),
    (
        "Three players, 17 each: more than 13 cards pay as 13 (3 per card), 10-12 double",
        "000:246",
        "preset `three-player` (`penalty.tiers_three_players=None`)",
    ),
    ("Da Lao Er: 1 per card to 10, 2 from 11", "000:106", "preset `bu-bu-gao-sheng`"),
    ("Flat one per card", "000:202, 003", "`penalty.tiers=` (nothing after `=`)"),
    ("Each two left doubles the penalty", "000:198, 000:340", "`penalty.twos_double=true`"),
    (
        "Only the starter pays the multiplier",
        "000:194",
        "`penalty.multiplier_only_for_starter=true`",
    ),
    (
        "Unused two / four of a kind / straight flush doubles the payment",
        "000:338",
        "`penalty.unused_power_doubles=true`",
    ),
    (
        "Winning with a two / four of a kind / straight flush doubles",
        "000:338",
        "`penalty.special_finish_doubles=true`",
    ),
    ("Winning with a play of twos only doubles", "000:204", "`penalty.finishing_twos_double=true`"),
    (
        "Card values 1/2/3/4 or 1..13 instead of a count",
        "000:206",
        "`penalty.card_values=honours` / `pip`",
    ),
    (
        "Penalty for assisting the winner: the player before the winner, who could have "
        "stopped the winning single, pays all",
        "000:95-100, 000:344-346, 002:65-67",
        "`penalty.assist_penalty=true` (refused with scoring by ranks, 002:69), "
        "`penalty.assist_reading=higher-single`",
    ),
    (
        "Money rule: before a one-card player, lead a combination if possible, else your "
        "highest card; if you ignore this and they win with their single, you pay all",
        "000:95-100",
        "`penalty.assist_penalty=true,penalty.assist_reading=precautions`",
    ),
    ("Winner collects only", "000, 001", "`settlement=winner-collects`"),
    ("Every pair settles the difference", "000, 001", "`settlement=pairwise`"),
    ("Pairwise by card-count difference (Anthony Kam)", "000", "`settlement=pairwise-difference`"),
    ("Penalty points only, lowest total wins", "001, 003", "`settlement=penalty-only`"),
    ("Taiwan: one loser pays a fixed stake", "000", "`settlement=loser-pays`"),
    ("Pusoy Dos: winner 1, doubled per two in the last play", "000", "`settlement=pusoy-dos`"),
    (
        "Pusoy Dos played until one player has cards: places 5/3/1/0",
        "000:217",
        "`settlement=places`, `play_to_end=true`",
    ),
    (
        "No points, players ranked by the order they went out (President titles, penning)",
        "000 wiki 32, 000:396, 000:409, 002:100",
        "`settlement=finishing-order` (presets `president`, `hawaii-penning`)",
    ),
    (
        "President: the players after the President must follow the President's last play",
        "002:100 ('must follow'; 000:409 'can follow')",
        "`follow_president=true` (preset `president`)",
    ),
    (
        "An honour hand dropped on a smaller play takes the round outright",
        "001:41",
        "`bomb_takes_trick=true` with `bomb_kinds`",
    ),
    (
        "Straight flushes ranked with twos low (royal on top) while A2345 is the top straight",
        "002:33, 002:37-38",
        "`straights=hong-kong,straight_flushes=ace-low`",
    ),
    (
        "Names of the game: Big Two, Big Deuce, Deuces, top dog, Choh Dai Di, Chor Dai Di, "
        "Dai Di, Choi Dai Di / Da Lao Er, Bu Bu Gao Sheng / Capsa, Cap Sa, Capsa Banting / "
        "Pusoy, Sikitcha, Chikicha",
        "000:23-27, 000:106, 000:293-295, 001:2, 002:11, 003:1",
        "aliases of `standard` (Dai Di and its spellings too) / `indonesia` / `pusoy-dos`; "
        "Da Lao Er and Bu Bu Gao Sheng name GameSky's variant (000:106), preset "
        "`bu-bu-gao-sheng`: each alias's reason is printed with its preset above",
    ),
    ("Indonesian scoring", "000", "`settlement=indonesia` (preset `indonesia`)"),
    (
        "Dealer choice, cutting, exposing a card to pick the first receiver",
        "000, 003",
        "not an option: with a uniformly random shuffle every dealing procedure gives the same "
        "hands with the same probabilities",
    ),
    (
        "Direction decided by a race between two players",
        "000 wiki 33",
        "not an option: a physical race; choose `direction` instead",
    ),
    (
        "The 2S restarts play at once since it cannot be beaten",
        "000, 002",
        "built in: the other seats are offered only a pass, and each answers it",
    ),
    (
        "Four of a kind or straight flush played out of turn to beat any combination (Da Lao Er)",
        "000",
        "`bombs_out_of_turn=true` with `bomb_targets` including 5 (preset `bu-bu-gao-sheng`)",
    ),
    (
        "Straight flush with two extra cards as a seven-card bomb (Todd Latta)",
        "000",
        "`straight_flush_plus_two=true` (preset `todd-latta`)",
    ),
    (
        "Smack-down: chop a single 2S with four of a kind or a run of pairs",
        "000 wiki 1",
        "`chop=true` (preset `smack-down`)",
    ),
    (
        "Sequences longer than five or as short as three",
        "000 wiki 8",
        "`straight_lengths=[3, 4, 6, ...]`",
    ),
    (
        "Three players: the 3D holder may trade it for the face-down spare card",
        "000 wiki 11, 002 var. 5",
        "`spare_trade=true` (a decision before play)",
    ),
    (
        "Three players: the loser gives the winner a high card for an unwanted one",
        "000",
        "`exchange=loser-to-winner` (the winner chooses the card given back)",
    ),
    (
        "When a four of a kind is dealt, twos become the lowest cards",
        "000 wiki",
        "`twos_low_after_bomb=true`",
    ),
    (
        "President variation: card passing between places",
        "000 wiki, 002",
        "`exchange=president` (preset `president`) / `president-choice`",
    ),
    (
        "Team play, opposite partners, five-card shoot-out on ties",
        "000 wiki, 002",
        "`settlement=teams` (preset `teams`)",
    ),
    (
        "Jokers; two decks and five of a kind",
        "000 wiki 29, 34",
        "**not offered**: cards are the 52 of one pack (ints 0..51) throughout the engine",
    ),
]


def _enum_member_docs() -> dict[str, dict[str, str]]:
    """``{EnumClass: {MEMBER: doc}}`` from the string literals after members in rules.py."""
    tree = ast.parse(inspect.getsource(rules_module))
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        docs: dict[str, str] = {}
        body = node.body
        for i, stmt in enumerate(body):
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and i + 1 < len(body)
                and isinstance(body[i + 1], ast.Expr)
                and isinstance(body[i + 1].value, ast.Constant)  # type: ignore[attr-defined]
                and isinstance(body[i + 1].value.value, str)  # type: ignore[attr-defined]
            ):
                text = body[i + 1].value.value  # type: ignore[attr-defined]
                docs[stmt.targets[0].id] = " ".join(text.split())
        out[node.name] = docs
    return out


def _value(v: Any) -> str:
    if v is None:
        return "`None`"
    if isinstance(v, bool):
        return "`true`" if v else "`false`"
    if isinstance(v, enum.Enum):
        return f"`{v.value}`"
    if isinstance(v, (frozenset, set)):
        return "`[" + ", ".join(sorted(str(getattr(x, "value", x)) for x in v)) + "]`"
    if isinstance(v, tuple) and all(isinstance(x, tuple) for x in v):
        return "`" + ("/".join(f"{a}:{m}" for a, m in v) or "(none)") + "`"  # tiers
    if isinstance(v, tuple):
        return "`[" + ", ".join(str(getattr(x, "value", x)) for x in v) + "]`"
    if dataclasses.is_dataclass(v):
        return "see below"
    return f"`{v}`"


def render() -> str:
    """The whole of docs/rules.md: one section function after another."""
    lines: list[str] = []
    for section in (
        _intro,
        _naming,
        _options,
        _penalty_fields,
        _enum_values,
        _sequence_orders,
        _presets,
        _coverage,
    ):
        lines += section()
    return "\n".join(lines)


def _intro() -> list[str]:
    return [
        "# Big Two rules: options and presets",
        "",
        "<!-- Generated by `python -m referee rules-doc`; do not edit by hand. -->",
        "",
        "Big Two has many house rules. Every convention that the rule texts in `shared/rules/`",
        "describe is a named option of a `RuleSet` (or is listed below with the reason it is",
        "built in or not offered). Sources: **000** Pagat-style compilation with encyclopedia",
        "text (its numbered 'var.' are the encyclopedia's variations, 'wiki N'), **001** modern",
        "summary, **002** older encyclopedia article (its numbered variations are 'var. N'),",
        "**003** one group's house rules.",
        "",
        'Use a preset by name (`find_ruleset("hong-kong")`) and derive variants with',
        '`find_ruleset("standard", players=3, pass_rule="trick")`. Bots receive the rule set\'s',
        "name and every option in each request.",
        "",
    ]


def _naming() -> list[str]:
    lines = [
        "## Naming a rule set in one string",
        "",
        "Wherever a rule set is asked for by name (the API's and the tournament forms' `ruleset`,",
        "the command line, `find_ruleset`), a preset or alias may be followed by `+` and option",
        "changes written `key=value`, separated by commas:",
        "",
        "```",
        "standard+players=3,pass_rule=trick",
        "standard+penalty.assist_penalty=true,penalty.tiers=8:2/10:3/13:4",
        "lukang+bomb_takes_trick=true",
        "```",
        "",
        "Every option below can be written this way; the penalty schedule's fields are written",
        f"`{PENALTY_PREFIX}<field>`. A derived rule set is named in this form with its changes",
        "sorted by key, so its name (in logs, standings, the arena) always reads back to the same",
        "rules. How each type of value is written:",
        "",
        "| type | written as |",
        "|---|---|",
    ]
    lines += [f"| {kind} | {how} |" for kind, how in OPTION_SYNTAX.items()]
    lines.append("")
    return lines


def _options() -> list[str]:
    lines = [
        "## Options",
        "",
        "| option | type | default | meaning | source |",
        "|---|---|---|---|---|",
    ]
    default = RuleSet()
    for f in option_fields():
        kind = OPTION_TYPES.get(f.name, "field by field, see below")
        lines.append(
            f"| `{f.name}` | {kind} | {_value(getattr(default, f.name))} | {f.metadata['doc']} | "
            f"{f.metadata['source']} |"
        )
    lines.append("")
    return lines


def _penalty_fields() -> list[str]:
    lines = [
        "### Penalty schedule (`penalty`)",
        "",
        "| field | type | default | meaning |",
        "|---|---|---|---|",
    ]
    default = RuleSet().penalty
    pdocs = _field_docs("PenaltySchedule")
    for f in dataclasses.fields(default):
        name = PENALTY_PREFIX + f.name
        lines.append(
            f"| `{name}` | {OPTION_TYPES[name]} | {_value(getattr(default, f.name))} | "
            f"{pdocs.get(f.name, '')} |"
        )
    lines.append("")
    return lines


def _enum_values() -> list[str]:
    """Every enum of rules.py with its members' docstrings."""
    lines = ["### Values of the enumerated options", ""]
    member_docs = _enum_member_docs()
    for name, obj in sorted(vars(rules_module).items()):
        if (
            isinstance(obj, type)
            and issubclass(obj, enum.Enum)
            and obj.__module__ == rules_module.__name__
        ):
            lines += [f"**{name}** ({' '.join((obj.__doc__ or '').split())})", ""]
            for m in obj:
                lines.append(f"- `{m.value}`: {member_docs.get(name, {}).get(m.name, '')}")
            lines.append("")
    return lines


def _sequence_orders() -> list[str]:
    lines = [
        "## Sequence orders (`straights`)",
        "",
        "Lowest first; `=` joins sequences of one level, which compare by the suit of their",
        "tie-break card. Straight flushes use the same order unless `straight_flushes` names",
        "another one (002:33 and 002:37-38 rank straights with A-2-3-4-5 highest but straight",
        "flushes with twos low and the royal flush on top: `straights=hong-kong,",
        "straight_flushes=ace-low`).",
        "",
        "| name | order | tie-break card | source |",
        "|---|---|---|---|",
    ]
    for o in STRAIGHT_ORDERS.values():
        tbs = ", ".join(sorted({f"{w}:{tb}" for w, _, tb in o.windows if tb != w[-1]})) or "top"
        lines.append(f"| `{o.name}` | {o.describe()} | {tbs} | {o.source} |")
    aliases = ", ".join(f"`{a}` = `{n}`" for a, n in STRAIGHT_ORDER_ALIASES.items())
    lines += ["", f"Aliases: {aliases}.", ""]
    return lines


def _presets() -> list[str]:
    lines = ["## Presets", ""]
    default = RuleSet()
    for r in PRESETS.values():
        lines += _preset(r, default)
    return lines


def _preset(r: RuleSet, default: RuleSet) -> list[str]:
    """One preset: its names (each alias with the reason it leads here), its description and
    what it changes."""
    aliases = f" (also {', '.join(f'`{a}`' for a in r.aliases)})" if r.aliases else ""
    lines = [f"### `{r.name}`{aliases}", "", r.description, ""]
    lines += [f"- `{a}`: {ALIAS_REASONS[a]}." for a in r.aliases]
    if r.aliases:
        lines.append("")
    changed = _changes(r, default)
    lines.append("Differs from standard: " + ("; ".join(changed) if changed else "nothing") + ".")
    if changed:
        lines.append(f"As options of `standard`: `{_as_options(r, default)}`.")
    lines.append("")
    return lines


def _changes(r: RuleSet, default: RuleSet) -> list[str]:
    """The options of ``r`` that differ from ``default``, the penalty schedule field by
    field."""
    changed = [
        f"`{f.name}` = {_value(getattr(r, f.name))}"
        for f in option_fields()
        if f.name != "penalty" and getattr(r, f.name) != getattr(default, f.name)
    ]
    for f in dataclasses.fields(r.penalty):
        if getattr(r.penalty, f.name) != getattr(default.penalty, f.name):
            changed.append(f"`penalty.{f.name}` = {_value(getattr(r.penalty, f.name))}")
    return changed


def _coverage() -> list[str]:
    lines = ["## Every convention in the texts", ""]
    lines += ["| convention | source | here |", "|---|---|---|"]
    lines += [f"| {conv} | {src} | {how} |" for conv, src, how in COVERAGE]
    lines.append("")
    return lines


def _as_options(r: RuleSet, default: RuleSet) -> str:
    """The preset written as ``standard+key=value,...`` (the same rules under another name)."""
    parts = {
        f.name: format_option(getattr(r, f.name), f.name)
        for f in option_fields()
        if f.name != "penalty" and getattr(r, f.name) != getattr(default, f.name)
    }
    for f in dataclasses.fields(r.penalty):
        value = getattr(r.penalty, f.name)
        if value != getattr(default.penalty, f.name):
            parts[PENALTY_PREFIX + f.name] = format_option(value, PENALTY_PREFIX + f.name)
    return "standard+" + ",".join(f"{k}={v}" for k, v in sorted(parts.items()))


def _field_docs(class_name: str) -> dict[str, str]:
    """Docstrings written after dataclass fields (read from the source)."""
    tree = ast.parse(inspect.getsource(rules_module))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            out = {}
            for i, stmt in enumerate(node.body):
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and i + 1 < len(node.body)
                    and isinstance(node.body[i + 1], ast.Expr)
                ):
                    val = node.body[i + 1].value  # type: ignore[attr-defined]
                    if isinstance(val, ast.Constant) and isinstance(val.value, str):
                        out[stmt.target.id] = " ".join(val.value.split())
            return out
    return {}


def main(argv: list[str]) -> int:
    print(render(), end="")
    return 0
