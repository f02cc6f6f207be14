"""Write ``tests/referee/game/data/golden_deals.json``: what many seeds deal, and a few whole games.

    python scripts/golden_deals.py            # rewrite the fixture
    python scripts/golden_deals.py --check    # exit 1 (naming what differs) if it is stale

Why the fixture exists: a stored match log is replayed from ``(rules, deal seed, moves)``
(``python -m referee verify``, docs/logs.md).  If the same seed ever dealt other cards, every
stored log of that rule set would stop verifying.  ``tests/referee/game/test_golden.py`` compares
the engine against this file, so a change of the shuffle (or of the Python it draws from), of
dealing, leftover placement, redeals, exchanges or move generation fails a test instead of
silently changing history.

**Do not regenerate casually.**  Rewriting the file makes the test pass again by declaring
the new deals correct; that is right only when a deal change is intended *and* stored logs
are dealt with (a new rule set name, or a log format version that says how old logs replay).
A refactor that was meant to change nothing must pass against the committed file unchanged.
If it fails, ``--check`` names the rule set / player-count combination that differs and
what of it (its options, seed 0's hands, the other seeds' deals, or the games).

What is pinned, per rule set (every preset at every player count it accepts, plus variants
for every leftover rule and every redeal and instant-win option):

* ``options``: a hash of its options (a changed preset is named as such);
* ``clear``: the hands seed 0 deals, as card texts, to see what the hashes stand for;
* per context (``first``: the first deal of a match; ``later``: deal 1 after a given finishing
  order, for exchanges and later leads):
* ``deals``: SHA-256 over one canonical line per seed (``SEEDS`` + ``EXTRA_SEEDS``), a line holding
  everything :meth:`referee.Deal.new` decides: hands as dealt and after any automatic
  exchange, stock, set-aside cards, spare card and its receiver, redeal count, seat to move,
  phase, exchanges and an instant outcome.  Cards are the engine's ints (card = 4 * rank +
  suit, bit ``card`` of a hand mask), written in hex.
* ``games_first``, ``games_spread``: SHA-256 over a few whole deals (``GAME_SEEDS``) played
  by a fixed policy that needs no random generator (the first legal move, or move
  ``(turn * 7919 + seed) % n`` of ``n``), every turn's complete legal-move list included, so
  a change of move generation is caught as well.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee import Deal, DealContext, RuleSet, find_ruleset, mask_text, preset_names  # noqa: E402
from referee.game.rules import InstantWin, Leftover, Redeal  # noqa: E402

FIXTURE = ROOT / "tests" / "referee" / "game" / "data" / "golden_deals.json"
SEEDS = 64
"""Seeds 0..SEEDS-1 per combination, plus the two below (the largest deal seed is 64 bits)."""
EXTRA_SEEDS = (7339852785675241625, 2**64 - 1)
"""``deal_seed(1, 0)`` (the documented example) and the largest seed a match derives."""
GAME_SEEDS = (0, 1, 2)
POLICIES = ("first", "spread")
FORMAT = 1
ABOUT = "Golden deals: read scripts/golden_deals.py before regenerating."


def variants() -> Iterator[tuple[str, RuleSet]]:
    """Every rule set whose deals are pinned, with a stable label."""
    for name in preset_names():
        base = find_ruleset(name)
        for players in (2, 3, 4):
            try:
                rules = base if players == base.players else base.with_options(players=players)
            except ValueError:
                continue  # the preset does not take that many seats (team play needs four)
            yield f"{name}/{players}p", rules
    std = find_ruleset("standard")
    for lo in Leftover:
        for players in (2, 3):
            yield (
                f"standard/{players}p/leftover={lo.value}",
                std.with_options(players=players, leftover=lo),
            )
    yield (
        "standard/2p/13-cards-stock",
        std.with_options(players=2, cards_per_player=13, leftover=Leftover.STOCK),
    )
    for rd in Redeal:
        yield f"standard/4p/redeal={rd.value}", std.with_options(redeal=frozenset({rd}))
    for iw in InstantWin:
        yield f"standard/4p/instant={iw.value}", std.with_options(instant_wins=frozenset({iw}))


def contexts(players: int) -> list[tuple[str, DealContext]]:
    """The first deal of a match, and a later one (exchanges and later leads depend on it)."""
    order = (*range(1, players), 0)
    return [
        ("first", DealContext()),
        (
            "later",
            DealContext(
                1, previous_winner=order[0], previous_loser=order[-1], previous_order=order
            ),
        ),
    ]


def deal_line(deal: Deal) -> str:
    """Everything the deal decided before the first play, as one canonical line."""
    out: dict[str, Any] = {
        "dealt": [f"{h:x}" for h in deal.dealt],
        "hands": [f"{h:x}" for h in deal.hands],
        "stock": deal.stock,
        "aside": f"{deal.set_aside:x}",
        "spare": [f"{deal.spare:x}", deal.spare_to],
        "redeals": deal.redeals,
        "to_move": deal.to_move,
        "phase": deal.phase,
        "exchanges": [[g, r, f"{c:x}"] for g, r, c in deal.exchanges],
        "outcome": None if deal.outcome is None else deal.outcome.to_json(),
    }
    return json.dumps(out, sort_keys=True, separators=(",", ":"))


def game_lines(rules: RuleSet, seed: int, ctx: DealContext, policy: str) -> Iterator[str]:
    """One line per turn of a whole deal: the legal list and the move chosen."""
    deal = Deal.new(rules, seed, ctx)
    yield deal_line(deal)
    turn = 0
    while deal.outcome is None:
        moves = deal.legal_moves()
        pick = 0 if policy == "first" else (turn * 7919 + seed) % len(moves)
        yield ",".join(f"{m:x}" for m in moves) + f";{moves[pick]:x}"
        deal.push(moves[pick])
        turn += 1
        if turn > 5000:
            raise RuntimeError(f"{rules.name} seed {seed}: no end after 5000 turns")
    yield json.dumps(deal.outcome.to_json(), sort_keys=True, separators=(",", ":"))


def digest(lines: Iterator[str]) -> str:
    """SHA-256 of the lines (128 bits of it in hex: enough to notice any change)."""
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()[:32]


def seeds() -> list[int]:
    return [*range(SEEDS), *EXTRA_SEEDS]


def games(rules: RuleSet, ctx: DealContext, policy: str) -> str:
    return digest(line for s in GAME_SEEDS for line in game_lines(rules, s, ctx, policy))


def entry(rules: RuleSet) -> dict[str, Any]:
    """The pinned facts of one rule set (see the module docstring)."""
    options = json.dumps(rules.options(), sort_keys=True, separators=(",", ":"))
    out: dict[str, Any] = {
        "options": digest(iter([options])),
        "clear": [mask_text(h) for h in Deal.new(rules, 0).dealt],
    }
    for cname, ctx in contexts(rules.players):
        out[cname] = {
            "deals": digest(deal_line(Deal.new(rules, s, ctx)) for s in seeds()),
            **{f"games_{policy}": games(rules, ctx, policy) for policy in POLICIES},
        }
    return out


def build() -> dict[str, Any]:
    """The whole fixture, from the engine as it is now."""
    return {label: entry(rules) for label, rules in variants()}


def dump(pinned: dict[str, Any]) -> str:
    """One rule set per line: a diff of the file shows which ones changed."""
    lines = [
        f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True, separators=(',', ':'))}"
        for k, v in pinned.items()
    ]
    head = {"format": FORMAT, "about": ABOUT, "seeds": seeds(), "game_seeds": list(GAME_SEEDS)}
    return (
        json.dumps(head, separators=(",", ": "))[:-1]
        + ', "rule_sets": {\n'
        + ",\n".join(lines)
        + "\n}}\n"
    )


def differences(stored: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """What differs, one line per rule set: which of its pinned facts."""
    out = []
    for label in sorted(set(stored) | set(fresh)):
        if label not in fresh or label not in stored:
            out.append(f"{label}: only in {'the file' if label in stored else 'the code'}")
            continue
        a, b = stored[label], fresh[label]
        what = [k for k in ("options", "clear") if a[k] != b[k]]
        what += [f"{c}.{k}" for c in ("first", "later") for k in a[c] if a[c][k] != b[c][k]]
        if what:
            out.append(f"{label}: {', '.join(what)} differ")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args(argv)
    fresh = build()
    if not args.check:
        FIXTURE.write_text(dump(fresh), encoding="utf-8")
        print(f"wrote {FIXTURE.relative_to(ROOT)}: {len(fresh)} rule sets")
        return 0
    stored = json.loads(FIXTURE.read_text(encoding="utf-8"))["rule_sets"]
    diffs = differences(stored, fresh)
    print("\n".join(diffs) or f"{len(fresh)} rule sets deal and play as pinned")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
