"""Compiled rule sets: shared by equal rule sets, bounded, and never written onto the rule set."""

from __future__ import annotations

import dataclasses

from referee import Deal, find_ruleset, preset_names, tables_for
from referee.game.compiled import RuleSetMemo
from referee.game.rules import RuleSet
from referee.wire.protocol import rules_json


def test_equal_rule_sets_share_their_tables() -> None:
    a = find_ruleset("hong-kong")
    b = dataclasses.replace(a)  # an equal rule set, another instance
    assert a is not b and a == b
    assert tables_for(a) is tables_for(b)
    assert tables_for(a, twos_low=True) is not tables_for(a)
    assert tables_for(a, twos_low=True).twos_low


def test_compiling_and_dealing_leave_the_rule_set_untouched() -> None:
    for name in preset_names():
        rules = find_ruleset(name)
        before = dict(vars(rules))
        deal = Deal.new(rules, 3)
        while not deal.over:
            deal.push(deal.legal_moves()[0])
        tables_for(rules, twos_low=True)
        rules_json(rules)
        assert vars(rules) == before, name


def test_the_memo_keeps_only_the_most_recent_rule_sets() -> None:
    built: list[str] = []

    def build(rules: RuleSet) -> str:
        built.append(rules.name)
        return rules.name.upper()

    memo = RuleSetMemo(build, maxsize=3)
    names = preset_names()[:5]
    rule_sets = [find_ruleset(n) for n in names]
    for rules in rule_sets:
        assert memo(rules) == rules.name.upper()
    assert len(memo) == 3
    assert built == names
    assert memo(rule_sets[4]) == names[4].upper()  # still kept: found by identity
    assert memo(dataclasses.replace(rule_sets[3])) == names[3].upper()  # by equality
    assert built == names
    memo(rule_sets[0])  # evicted earlier: built again
    assert built == [*names, names[0]]
    assert len(memo) == 3


def test_the_identity_index_stays_bounded() -> None:
    memo = RuleSetMemo(lambda rules: rules.name, maxsize=2)
    rules = find_ruleset("standard")
    copies = [dataclasses.replace(rules) for _ in range(50)]
    for c in copies:
        assert memo(c) == "standard"
    assert len(memo) == 1
    assert len(memo._by_id) <= 4 * memo.maxsize
