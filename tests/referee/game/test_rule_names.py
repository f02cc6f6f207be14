"""Rule sets named in one string (``preset+key=value,...``) and the names players use.

Every option of :class:`~referee.game.rules.RuleSet` -- the penalty schedule's fields included --
must be settable through :func:`referee.find_ruleset`'s name form and read back: the arena's API
and tournament forms take only a rule-set name, so an option without a name form is an option
the arena cannot play.  Sources: ``000:24`` = line 24 of
``shared/rules/000_011bf6f415061e38.txt`` (likewise 001, 002, 003).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from referee import PRESETS, find_ruleset
from referee.game.presets import OPTION_SYNTAX, OPTION_TYPES, PENALTY_PREFIX, format_option
from referee.game.rules import PenaltySchedule, RuleSet, option_fields
from tests.tiers import examples

# For every option: a value other than the default, and the other changes it needs to be
# playable (a draw on a pass needs a stock, a bomb that takes the trick needs bombs, ...).
SAMPLES: dict[str, tuple[Any, dict[str, Any]]] = {
    "players": (3, {}),
    "cards_per_player": (10, {"leftover": "set-aside"}),
    "leftover": ("set-aside", {}),
    "spare_face_up": (False, {}),
    "direction": ("clockwise", {}),
    "suit_order": ("CDHS", {}),
    "suits_break_ties": (False, {}),
    "triples": (False, {}),
    "five_card_order": (["straight", "full-house", "four-of-a-kind", "straight-flush"], {}),
    "five_card_compare": ("same-type-only", {}),
    "straights": ("hong-kong", {}),
    "straight_flushes": ("ace-low", {"straights": "hong-kong"}),
    "flush_compare": ("top-card", {}),
    "four_card": ("quads", {}),
    "dragon_play": (True, {}),
    "bomb_kinds": (["four-of-a-kind", "straight-flush"], {"bomb_targets": [1, 2, 3]}),
    "bomb_targets": ([1, 2, 3], {}),
    "bomb_takes_trick": (True, {"bomb_kinds": ["four-of-a-kind"], "bomb_targets": [1, 2, 3]}),
    "opening_must_include": (False, {}),
    "later_leads": ("winner", {}),
    "lowest_card_every": (10, {"later_leads": "winner"}),
    "pass_rule": ("trick", {}),
    "pass_draw": ("one", {"leftover": "stock", "players": 3, "cards_per_player": 13}),
    "stock_empty": ("reshuffle-discards", {}),
    "triple_threes_force": (True, {}),
    "last_card_duty": ("highest-single", {}),
    "forbidden_final": (["single-2", "any-2S"], {}),
    "instant_wins": (["dragon"], {}),
    "redeal": (["weak-hand"], {}),
    "play_to_end": (True, {}),
    "follow_president": (True, {"play_to_end": True}),
    "settlement": ("pairwise", {}),
    "loser_stake": (5, {}),
    "straight_flush_plus_two": (
        True,
        {"five_card_order": ["straight", "flush", "full-house", "four-of-a-kind"]},
    ),
    "chop": (True, {}),
    "straight_lengths": ([3, 10], {}),
    "twos_low_after_bomb": (True, {}),
    "bombs_out_of_turn": (True, {"bomb_kinds": ["four-of-a-kind"], "bomb_targets": [1, 5]}),
    "exchange": ("president", {"play_to_end": True}),
    "spare_trade": (True, {"players": 3, "leftover": "set-aside"}),
    "penalty.tiers": (((8, 2), (10, 3), (13, 4)), {}),
    "penalty.tiers_three_players": (None, {}),
    "penalty.tiers_two_players": (((14, 2),), {}),
    "penalty.card_values": ("honours", {}),
    "penalty.twos_double": (True, {}),
    "penalty.multiplier_only_for_starter": (True, {}),
    "penalty.unused_power_doubles": (True, {}),
    "penalty.special_finish_doubles": (True, {}),
    "penalty.finishing_twos_double": (True, {}),
    "penalty.assist_penalty": (True, {}),
    "penalty.assist_reading": ("precautions", {"penalty.assist_penalty": True}),
    "penalty.short_handed_tiers": ("player-count", {}),
}


def every_option() -> set[str]:
    """The options of a rule set, the penalty schedule field by field."""
    plain = {f.name for f in option_fields() if f.name != "penalty"}
    return plain | {PENALTY_PREFIX + f.name for f in dataclasses.fields(PenaltySchedule)}


def by_keywords(base: str, changes: dict[str, Any]) -> RuleSet:
    """The rule set the changes describe, built through keywords (not through a name)."""
    penalty = {k.removeprefix(PENALTY_PREFIX): v for k, v in changes.items() if "." in k}
    plain = {k: v for k, v in changes.items() if "." not in k}
    if penalty:
        start = PRESETS[base].penalty
        typed = RuleSet().with_options(penalty={**_jsonable(start), **penalty}).penalty
        plain["penalty"] = typed
    return find_ruleset(base, **plain)


def _jsonable(p: PenaltySchedule) -> dict[str, Any]:
    return dict(RuleSet(penalty=p).options()["penalty"])


def name_of(base: str, changes: dict[str, Any]) -> str:
    return base + "+" + ",".join(f"{k}={format_option(v, k)}" for k, v in changes.items())


def test_every_option_has_a_written_type_and_a_sample() -> None:
    assert set(OPTION_TYPES) == every_option()
    assert set(OPTION_TYPES.values()) <= set(OPTION_SYNTAX)
    assert set(SAMPLES) == every_option()


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_every_option_is_set_by_its_name_form_and_reads_back(key: str) -> None:
    value, needs = SAMPLES[key]
    changes = {**needs, key: value}
    named = find_ruleset(name_of("standard", changes))
    expected = by_keywords("standard", changes)
    assert named.options() == expected.options()
    default = RuleSet().options()
    if key.startswith(PENALTY_PREFIX):
        field = key.removeprefix(PENALTY_PREFIX)
        assert named.options()["penalty"][field] != default["penalty"][field]
    else:
        assert named.options()[key] != default[key]
    # the derived rule set's own name is in the same form and reads back to it
    assert find_ruleset(named.name) == named
    assert key in named.name


def test_the_audits_refused_names_now_work() -> None:
    """The audit found `standard+penalty=...` refused: each scoring convention by name."""
    r = find_ruleset("standard+penalty.twos_double=true,penalty.unused_power_doubles=true")
    assert r.penalty.twos_double and r.penalty.unused_power_doubles
    r = find_ruleset("standard+settlement=pairwise-difference,penalty.tiers=9:2")
    assert r.penalty.tiers == ((9, 2),)  # 000:200 Anthony Kam: 'double payments for 9-11'
    r = find_ruleset("standard+penalty.card_values=pip,penalty.multiplier_only_for_starter=true")
    assert r.penalty.card_values.value == "pip" and r.penalty.multiplier_only_for_starter
    r = find_ruleset("standard+players=3,penalty.tiers_three_players=None")
    assert r.penalty_tiers() == ((10, 2), (13, 3))  # 000:246 Pagat's three-player schedule
    assert find_ruleset("standard+penalty.tiers=").penalty.tiers == ()  # flat, 000:202


def test_a_penalty_keyword_is_named_by_the_fields_that_differ() -> None:
    r = find_ruleset("steep", penalty=PenaltySchedule(tiers=((8, 2),), assist_penalty=True))
    assert r.name == "steep+penalty.assist_penalty=true,penalty.tiers=8:2"
    assert find_ruleset(r.name) == r


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("standard+penalty=flat", "cannot read rule-set option"),
        ("standard+no_such_option=1", "cannot read rule-set option"),
        ("standard+players", "cannot read rule-set option"),
        ("standard+triples=maybe", "true or false"),
        ("standard+penalty.tiers=8x2", "cards:multiplier"),
        ("standard+players=three", "cannot read rule-set option"),
        ("standard+players=3,players=4", "given twice"),
        ("standard+penalty.card_values=gold", "gold"),
        ("standard+settlement=places", "needs play_to_end"),
        ("standard+straight_flushes=sideways", "unknown straight order"),
    ],
)
def test_bad_names_are_refused_with_the_reason(name: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        find_ruleset(name)


# Values to combine freely (each option drawn at most once; unplayable mixes are rejected).
_POOL: dict[str, list[Any]] = {
    "players": [2, 3, 4],
    "direction": ["clockwise", "alternate"],
    "suit_order": ["CDHS", "CSHD"],
    "straights": ["hong-kong", "two-high", "indonesia"],
    "straight_flushes": [None, "ace-low", "no-two"],
    "pass_rule": ["trick", "ends-trick"],
    "bomb_kinds": [["four-of-a-kind"], ["four-of-a-kind", "straight-flush"]],
    "bomb_targets": [[1], [1, 2, 3]],
    "bomb_takes_trick": [True, False],
    "forbidden_final": [[], ["single-2", "pair-of-2s"]],
    "straight_lengths": [[3, 12], [4]],
    "settlement": ["pairwise", "penalty-only", "finishing-order"],
    "play_to_end": [True],
    "follow_president": [True],
    "last_card_duty": ["highest-single", "highest-single-no-pass", "highest-hand"],
    "penalty.tiers": [(), ((7, 2), (12, 3))],
    "penalty.tiers_three_players": [None, ((11, 2), (16, 3))],
    "penalty.card_values": ["pip", "twos-five"],
    "penalty.assist_penalty": [True],
    "penalty.assist_reading": ["precautions"],
    "penalty.short_handed_tiers": ["player-count"],
    "penalty.twos_double": [True],
}


@settings(max_examples=examples(150), deadline=None)
@given(data=st.data(), base=st.sampled_from(sorted(PRESETS)))
def test_any_mix_of_options_round_trips_through_its_name(data: st.DataObject, base: str) -> None:
    keys = data.draw(st.lists(st.sampled_from(sorted(_POOL)), unique=True, max_size=6))
    changes = {k: data.draw(st.sampled_from(_POOL[k])) for k in keys}
    try:
        expected = by_keywords(base, changes)
    except ValueError:
        reject()
    named = find_ruleset(name_of(base, changes))
    assert named.options() == expected.options()
    assert find_ruleset(named.name).options() == named.options()


# --- the names players use (issue 17 §5: decided from the texts, the reason documented) ----------
@pytest.mark.parametrize(
    ("alias", "preset", "source"),
    [
        ("choh-dai-di", "standard", "000:25 'Choh Dai Di or simply Dai Di'; 001:2; 002:11"),
        ("dai-di", "standard", "001:2 names its basic game; 003:1 'It's also called Dai Di'"),
        ("chor-dai-di", "standard", "000:293 'in Cantonese ... chor dai di'; 001:2"),
        ("choi-dai-di", "standard", "000:106 GameSky's basic game 'Choi Dai Dee'"),
        ("da-lao-er", "bu-bu-gao-sheng", "000:106 'the names Da Lao Er and Bu Bu Gao Sheng'"),
        ("gamesky", "bu-bu-gao-sheng", "000:106 'One Chinese web site (GameSky ...)'"),
        ("big-deuce", "standard", "000:23 'Big Two, Big Deuce or Deuces'"),
        ("deuces", "standard", "000:23"),
        ("capsa", "indonesia", "000:293 'cap sa in Hokkien ... commonly used in Indonesia'"),
        ("pusoy", "pusoy-dos", "000:27 'Pusoy Dos is the usual name used in the Philippines'"),
        ("sikitcha", "pusoy-dos", "000:295 'chikicha (also sikitcha)'"),
    ],
)
def test_each_name_leads_to_its_own_game(alias: str, preset: str, source: str) -> None:
    assert find_ruleset(alias).name == preset, source


def test_names_given_together_lead_to_one_game() -> None:
    """000:25, 000:293, 001:2: Choh Dai Di, Chor Dai Di and Dai Di all spell 鋤大D, the name of
    Big Two itself; 000:106 gives Da Lao Er and Bu Bu Gao Sheng together to GameSky's game."""
    dai_di = {find_ruleset(n).name for n in ("choh-dai-di", "chor-dai-di", "dai-di")}
    assert dai_di == {"standard"}
    assert find_ruleset("da-lao-er").name == find_ruleset("bu-bu-gao-sheng").name
    # The Singapore preset keeps its own name: 000:258 calls its source 'Singapore Chor Dai Di'
    assert find_ruleset("singapore").name == "singapore"


def test_every_alias_says_why_and_the_rules_document_prints_it() -> None:
    """Nothing is chosen silently: each alias has its reason, printed next to it."""
    from referee.game.presets import ALIAS_REASONS
    from referee.game.rulesdoc import render

    doc = render()
    aliases = {a for r in PRESETS.values() for a in r.aliases}
    assert set(ALIAS_REASONS) == aliases
    for alias, reason in ALIAS_REASONS.items():
        assert f"- `{alias}`: {reason}." in doc


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown rule set 'choi-dai-dee'; known: standard"):
        find_ruleset("choi-dai-dee")


def test_no_alias_is_shared_or_shadows_a_preset() -> None:
    seen: dict[str, str] = {}
    for r in PRESETS.values():
        for a in r.aliases:
            assert a not in PRESETS, a
            assert a not in seen, (a, seen.get(a), r.name)
            seen[a] = r.name


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_written_as_options_is_the_same_rules(preset: str) -> None:
    """docs/rules.md writes each preset as `standard+...`: that name gives the preset's rules."""
    from referee.game.rulesdoc import _as_options

    r = PRESETS[preset]
    if r.options() == RuleSet().options():
        return
    assert find_ruleset(_as_options(r, RuleSet())).options() == r.options()
