"""One deal of Big Two as a state machine: deal, turns, passes, tricks, end, scoring.

A deal is fully determined by ``(rule set, seed, context, moves)``: the shuffle (and any later
reshuffle of a stock) comes from one injected ``random.Random``.  :meth:`Deal.legal_moves` is
the complete list of plays for the seat to move, with ``PASS`` (0) included where a pass is
allowed; :meth:`Deal.play` checks a move and names the rule it breaks, :meth:`Deal.push` applies a
move already taken from the legal list.

Behavioural conventions are small stages chosen by the rule set's options: how a pass ends a
trick (:class:`~referee.game.rules.PassRule`), drawing on a pass, duties before a last card,
forbidden last plays, instant wins and redeals, and who leads.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import combinations
from typing import NamedTuple

from .bits import (
    ONES,
    TWOS,
    card_bits,
    has_four_of_a_kind,
    rank_counts,
    ranks_exactly_paired,
    ranks_held,
)
from .cards import (
    Card,
    CardNotInHandError,
    DoesNotBeatError,
    Mask,
    NotACombinationError,
    card_text,
)
from .combos import Play, beats, classify, kind_key_level
from .compiled import MAX_COMPILED_RULE_SETS, RuleSetMemo, Tables, five_level, tables_for
from .movegen import (
    Keyed,
    beating_plays,
    five_card_keyed,
    keyed_bombs,
    leading_plays,
    single_cards,
)
from .outcome import Outcome, Termination
from .rules import (
    Direction,
    Exchange,
    FiveCompare,
    InstantWin,
    LastCardDuty,
    LaterLead,
    Leftover,
    PassDraw,
    PassRule,
    Redeal,
    RuleSet,
    Settlement,
    StockEmpty,
)
from .scoring import settle
from .shuffling import deal_random, shuffle, shuffled_bits
from .shuffling import shuffled as shuffled  # re-exported: it used to live here

PASS = 0
"""The pass move (an empty set of cards)."""

_DECK = list(range(52))
"""The cards in the order the shuffle starts from (never modified)."""

MAX_REDEALS = 1000
"""Give up redealing after this many thrown-in deals (a rule set could otherwise loop)."""


@dataclass(frozen=True, slots=True)
class TurnFlow:
    """What a rule set makes of a pass and a play, worked out once per rule set (from ~40
    options, which would cost more than a deal's other bookkeeping): the deal reads these
    flags turn after turn, and each names the stage of :meth:`Deal.push` it selects."""

    strict_pass: bool
    """``pass_rule=trick``: a seat that passes is shut out until the trick ends."""
    pass_ends_trick: bool
    """``pass_rule=ends-trick``: one pass ends the trick."""
    pass_draws: bool
    """A pass draws from the stock (``pass_draw``)."""
    turn_duties: bool
    """Some turns carry a duty or a ban (last-card duty, forbidden last plays, the
    triple-threes force, following the President): see :meth:`Deal._turn_duties`."""
    plain_singles: bool
    """The answers to a single are just the higher singles (no bombs, chops or seven-card
    plays on a single)."""
    bomb_offers: bool
    """Seats may bomb out of turn (``bombs_out_of_turn``)."""
    exchanges: bool
    """Cards are exchanged or traded before play."""
    bomb_takes_trick: bool
    """A bomb on a play of another size ends the trick (``bomb_takes_trick``)."""
    after: dict[int, tuple[int, ...]]
    """Per direction step (1 or -1): the seat after each seat."""


def _turn_flow(rules: RuleSet) -> TurnFlow:
    strict = rules.pass_rule is PassRule.TRICK
    ends_trick = rules.pass_rule is PassRule.ENDS_TRICK
    draws = rules.pass_draw is not PassDraw.NONE
    n = rules.players
    return TurnFlow(
        strict_pass=strict,
        pass_ends_trick=ends_trick,
        pass_draws=draws,
        turn_duties=(
            rules.last_card_duty is not LastCardDuty.NONE
            or bool(rules.forbidden_final)
            or rules.triple_threes_force
            or rules.follow_president
        ),
        plain_singles=tables_for(rules).plain_singles,
        bomb_offers=rules.bombs_out_of_turn,
        exchanges=rules.exchange is not Exchange.NONE or rules.spare_trade,
        bomb_takes_trick=rules.bomb_takes_trick,
        after={step: tuple((s + step) % n for s in range(n)) for step in (1, -1)},
    )


turn_flow_for = RuleSetMemo(_turn_flow, MAX_COMPILED_RULE_SETS)
"""The :class:`TurnFlow` of a rule set (remembered like its tables)."""


def following_holders(turn: tuple[int, ...], hands: list[int]) -> list[int]:
    """Per seat, the next seat in turn order (``turn``: the seat after each seat) that holds
    cards; a seat's own number when no other seat does."""
    out = []
    for seat in range(len(turn)):
        s = turn[seat]
        while not hands[s] and s != seat:
            s = turn[s]
        out.append(s)
    return out


def next_in_turn(following: list[int], locked: int, seat: int) -> int:
    """The next seat after ``seat`` that holds cards (``following``, see
    :func:`following_holders`) and is not shut out (bit per seat in ``locked``); ``seat``
    itself when there is none."""
    s = following[seat]
    for _ in range(len(following)):
        if not locked >> s & 1:
            return s
        if s == seat:
            break
        s = following[s]
    return seat


@dataclass(frozen=True)
class DealContext:
    """What a deal needs to know about the match so far."""

    index: int = 0
    """0-based number of this deal in the match."""
    previous_winner: int | None = None
    previous_loser: int | None = None
    previous_order: tuple[int, ...] = ()
    """Finishing order of the previous deal (for the president exchange)."""


_FIRST_DEAL = DealContext()
"""The context of a deal with no match around it (shared: contexts are immutable)."""


class Decision(NamedTuple):
    """A choice made before the first play: give cards to another seat, or trade a card."""

    seat: int
    kind: str
    """``"give"``: give ``number`` cards to seat ``to``; ``"trade"``: swap the lowest card for
    the face-down spare (``PASS`` keeps it)."""
    number: int = 0
    to: int = -1


class Turn(NamedTuple):
    """One turn of a deal (a tuple, cheap to create on the hot path)."""

    seat: int
    move: int
    """Cards played (0 for a pass)."""
    drew: int = 0
    """Cards drawn from the stock after a pass (hidden from other seats)."""


@dataclass(slots=True, eq=False)
class Deal:
    """Mutable state of one deal.  Create with :meth:`Deal.new`."""

    rules: RuleSet
    t: Tables
    flow: TurnFlow
    """What the rule set makes of a pass and a play."""
    rng: random.Random
    context: DealContext
    hands: list[Mask]
    dealt: list[Mask]
    """Hands as dealt (after any spare card), for logs and scoring."""
    step: int
    to_move: int
    opening_card: Mask = 0
    """A card the first play must contain (0: none)."""
    table_kind: int = 0
    """Size of the play on the table (0: the table is empty)."""
    table_key: int = 0
    table_level: int = -1
    table_mask: Mask = 0
    table_seat: int = -1
    need: int = 0
    """Passes still to come before the trick ends (set by each play, counted down)."""
    locked: int = 0
    """Seats (bit per seat) shut out of the current trick by the strict pass rule."""
    lead_passes: int = 0
    trick_start: int = 0
    """Index into ``history`` where the current trick began."""
    log: list[tuple[int, int, int]] = field(default_factory=list)
    """Turns as plain ``(seat, move, drew)`` tuples (see :attr:`history`)."""
    stock: list[Card] = field(default_factory=list)
    discards: Mask = 0
    trick_cards: Mask = 0
    spare: Mask = 0
    spare_to: int = -1
    set_aside: Mask = 0
    finished: list[int] = field(default_factory=list)
    starter: int = -1
    trick_winners: list[tuple[int, int]] = field(default_factory=list)
    """``(seat, cards)`` of every play that won its trick, for Indonesian scoring."""
    outcome: Outcome | None = None
    redeals: int = 0
    n_active: int = 0
    """Seats still holding cards."""
    _turn: tuple[int, ...] = ()
    """The seat after each seat in turn order (whether or not it holds cards)."""
    _following: list[int] = field(default_factory=list)
    """The next seat after each seat that holds cards (:func:`following_holders`), updated
    when a seat plays out; with nobody shut out, it is who moves next."""
    phase: int = 0
    """0: play; 1: a decision before play (``decisions``); 2: an out-of-turn bomb offer
    (``interrupts``)."""
    decisions: list[Decision] = field(default_factory=list)
    exchanges: list[tuple[int, int, int]] = field(default_factory=list)
    """``(giver, receiver, cards)`` of every exchange; only those two seats see the cards."""
    play_start: int = 0
    """Index into ``log`` of the first turn of play: the turns before it are decisions."""
    interrupts: list[int] = field(default_factory=list)
    """Seats still to be offered an out-of-turn bomb, in order."""
    resume: int = -1
    """Seat whose ordinary turn follows the out-of-turn offers."""
    shootouts: list[list[int]] = field(default_factory=list)
    """Hands of each five-card shoot-out (team play ties)."""
    _fives: list[Keyed | None] = field(default_factory=list)
    """Per seat: keyed five-card plays of the hand it held when first needed.  Valid while
    the hand only loses cards (a play of a smaller hand is a play of the bigger one); cleared
    when the seat draws."""

    # --- creation -----------------------------------------------------------------------
    @classmethod
    def new(
        cls,
        rules: RuleSet,
        rng: random.Random | int,
        context: DealContext | None = None,
    ) -> Deal:
        """Shuffle and deal.  ``rng`` may be a seed; the deal replays exactly from it."""
        if not isinstance(rng, random.Random):
            rng = deal_random(rng)
        ctx = context or _FIRST_DEAL
        t = tables_for(rules)
        flow = turn_flow_for(rules)
        step = -1 if rules.direction is Direction.CLOCKWISE else 1
        if rules.direction is Direction.ALTERNATE and ctx.index % 2 == 1:
            step = -1
        d = cls(rules, t, flow, rng, ctx, [], [], step, 0)
        d._turn = flow.after[step]
        d._deal()
        return d

    def _deal(self) -> None:
        rules, t, n = self.rules, self.t, self.rules.players
        size = rules.hand_size()
        seats = 4 if rules.leftover is Leftover.GHOST_HAND else n
        base = _DECK
        removed = 0
        if rules.leftover is Leftover.REMOVE_LOWEST:
            by_order = sorted(base, key=lambda c: t.order[c])
            base = by_order[52 - size * n :]
            removed = sum(1 << c for c in by_order[: 52 - size * n])
        for _ in range(MAX_REDEALS):
            deck = shuffled_bits(self.rng, base)
            # Dealing blocks of a uniformly shuffled deck gives the same hands as dealing
            # round the table one card at a time.
            blocks = [sum(deck[s * size : (s + 1) * size]) for s in range(seats)]
            hands = blocks[:n]
            n_dealt = size * seats
            rest = [b.bit_length() - 1 for b in deck[n_dealt:]] if len(deck) > n_dealt else []
            ghost = 0
            for b in blocks[n:]:
                ghost |= b
            self.hands = hands
            self.stock, self.spare, self.spare_to, self.set_aside = [], 0, -1, ghost | removed
            self._place_leftover(rest)
            if not self._should_redeal():
                break
            self.redeals += 1
        self.dealt = list(self.hands)
        self._fives = [None] * n
        if rules.twos_low_after_bomb and any(has_four_of_a_kind(h) for h in self.hands):
            self.t = tables_for(rules, twos_low=True)
        self.n_active = n - self.hands.count(0)
        self._following = following_holders(self._turn, self.hands)
        self._start()

    def _place_leftover(self, rest: list[int]) -> None:
        rules, t = self.rules, self.t
        if not rest:
            return
        lo = rules.leftover
        if lo is Leftover.STOCK:
            self.stock = rest
            return
        if lo in (Leftover.SET_ASIDE, Leftover.GHOST_HAND, Leftover.REMOVE_LOWEST):
            self.set_aside |= sum(1 << c for c in rest)
            return
        spare = sum(1 << c for c in rest)
        if lo is Leftover.TO_HOLDER_OF_TWO_OF_SPADES:
            candidates = [51, *(c for c in reversed(t.by_order))]
        elif lo is Leftover.TO_HOLDER_OF_LOWEST_DIAMOND:
            candidates = [c for c in t.by_order if c & 3 == 0] + list(t.by_order)
        else:
            candidates = list(t.by_order)
        for c in candidates:
            for s, h in enumerate(self.hands):
                if h >> c & 1:
                    self.hands[s] |= spare
                    self.spare, self.spare_to = spare, s
                    return

    def _should_redeal(self) -> bool:
        rd = self.rules.redeal
        if not rd:
            return False
        for h in self.hands:
            if Redeal.FOUR_TWOS in rd and h & TWOS == TWOS:
                return True
            if Redeal.NO_FACE_CARDS in rd and not h & (0xFFF << 32):
                return True
            if Redeal.WEAK_HAND in rd:
                pts = sum(((h >> (4 * r)) & 15).bit_count() * v for r, v in _POINTS)
                if pts <= 3:
                    return True
        return False

    def _start(self) -> None:
        if self.rules.instant_wins and self._instant_end():
            return
        if self.flow.exchanges:
            self._plan_exchanges()
        if self.decisions:
            self.phase = 1
            self.to_move = self.decisions[0].seat
            return
        self._open()

    def _open(self) -> None:
        """Choose who makes the first play."""
        rules, t = self.rules, self.t
        self.phase = 0
        self.play_start = len(self.log)
        ctx = self.context
        first = ctx.index == 0 or rules.later_leads is LaterLead.LOWEST_CARD
        if rules.lowest_card_every and ctx.index % rules.lowest_card_every == 0:
            first = True
        if not first and ctx.previous_winner is None:
            first = True
        if first:
            in_play = self._in_hands()
            for lowest in t.by_order:
                if in_play >> lowest & 1:
                    break
            self.to_move = self._holder(1 << lowest)
            if rules.opening_must_include:
                self.opening_card = 1 << lowest
        elif rules.later_leads is LaterLead.WINNER or ctx.previous_loser is None:
            self.to_move = ctx.previous_winner or 0
        else:
            self.to_move = ctx.previous_loser

    def _in_hands(self) -> int:
        return sum(self.hands)  # the hands are disjoint, so their sum is their union

    def _holder(self, card_bit: Mask) -> int:
        for s, h in enumerate(self.hands):
            if h & card_bit:
                return s
        raise AssertionError("card not dealt")

    def _instant_end(self) -> bool:
        iw = self.rules.instant_wins
        if not iw:
            return False
        for s, h in enumerate(self.hands):
            cnt = rank_counts(h)
            ge1 = ranks_held(cnt)
            if InstantWin.FOUR_TWOS_DRAW in iw and h & TWOS == TWOS:
                self._finish(Termination.DRAW, None, "all four twos: the deal is void")
                return True
            if InstantWin.DRAGON in iw and ge1 == ONES and h.bit_count() == 13:
                self._finish(Termination.INSTANT_WIN, s, "dragon")
                return True
            if InstantWin.FOUR_TWOS in iw and h & TWOS == TWOS:
                self._finish(Termination.INSTANT_WIN, s, "four twos")
                return True
            if InstantWin.SIX_PAIRS in iw and h.bit_count() == 13:
                exact2 = ranks_exactly_paired(cnt)
                if exact2.bit_count() == 6 and ge1.bit_count() == 7:
                    if exact2 & 1:  # the pair of threes: 'dragun bla-bajd'
                        self._finish(Termination.INSTANT_LOSS, s, "six pairs with threes")
                    else:
                        self._finish(Termination.INSTANT_WIN, s, "six pairs")
                    return True
        return False

    # --- decisions before play, out-of-turn bombs, team shoot-outs ----------------------
    def _plan_exchanges(self) -> None:
        """Apply automatic exchanges and queue the decisions the rules call for."""
        rules, ctx, t = self.rules, self.context, self.t
        order = ctx.previous_order
        ex = rules.exchange
        if ex in (Exchange.PRESIDENT, Exchange.PRESIDENT_CHOICE) and ctx.index > 0 and order:
            pairs = [(order[0], order[-1], 2)]
            if len(order) >= 4:
                pairs.append((order[1], order[-2], 1))
            for top, bottom, k in pairs:
                # The lower place gives its highest cards; the higher place gives its lowest
                # (or, with president-choice, cards of its choice after receiving).
                self._give(bottom, top, self._extreme(bottom, k, highest=True))
                if ex is Exchange.PRESIDENT:
                    self._give(top, bottom, self._extreme(top, k, highest=False, skip=1))
                else:
                    self.decisions.append(Decision(top, "give", k, bottom))
        elif ex is Exchange.LOSER_TO_WINNER and ctx.index > 0:
            w, lo = ctx.previous_winner, ctx.previous_loser
            if w is not None and lo is not None and w != lo:
                self._give(lo, w, self._extreme(lo, 1, highest=True))
                self.decisions.append(Decision(w, "give", 1, lo))
        if rules.spare_trade and self.set_aside.bit_count() == 1:
            lowest = next(c for c in t.by_order if self._in_hands() >> c & 1)
            self.decisions.append(Decision(self._holder(1 << lowest), "trade"))

    def _extreme(self, seat: int, k: int, *, highest: bool, skip: int = 0) -> int:
        """The ``k`` highest or lowest cards of a seat's hand (``skip``: ignore cards it was
        just given, so a player never hands straight back what it received)."""
        received = 0
        if skip:
            for _giver, receiver, given in self.exchanges:
                if receiver == seat:
                    received |= given
        cards = sorted(
            (c for c in range(52) if (self.hands[seat] & ~received) >> c & 1),
            key=self.t.order.__getitem__,
            reverse=highest,
        )
        return sum(1 << c for c in cards[:k])

    def _give(self, giver: int, receiver: int, cards: Mask) -> None:
        self.hands[giver] &= ~cards
        self.hands[receiver] |= cards
        self.exchanges.append((giver, receiver, cards))
        self._fives[giver] = self._fives[receiver] = None

    def _special_moves(self) -> list[Mask]:
        seat = self.to_move
        h = self.hands[seat]
        if self.phase == 1:
            d = self.decisions[0]
            if d.kind == "trade":
                lowest = next(c for c in self.t.by_order if h >> c & 1)
                return [1 << lowest, PASS]
            return [sum(c) for c in combinations(card_bits(h), d.number)]
        # An out-of-turn bomb offer: bombs that beat the table, or decline.
        plays = beating_plays(h, self.t, self.table_kind, self.table_key, self._fives_of(seat, h))
        lv = self.t.bomb_levels
        out = [
            m
            for m in plays
            if m.bit_count() == 5 and (p := classify(m, self.t)) is not None and p.level in lv
        ]
        out.append(PASS)
        return out

    def _push_special(self, seat: int, move: Mask) -> bool:
        """Apply a decision or an out-of-turn offer; True when the move was consumed."""
        if self.phase == 1:
            d = self.decisions.pop(0)
            self.log.append((seat, move, 0))
            self.play_start = len(self.log)
            if d.kind == "give":
                self._give(seat, d.to, move)
            elif move:  # trade the lowest card for the face-down spare
                spare = self.set_aside
                self.hands[seat] = (self.hands[seat] & ~move) | spare
                self.set_aside = move
                self.exchanges.append((seat, -1, move))
                self._fives[seat] = None
            if self.decisions:
                self.to_move = self.decisions[0].seat
            else:
                self._open()
            return True
        # phase 2: out-of-turn bomb offers
        self.interrupts.pop(0)
        if move == PASS:
            self.log.append((seat, PASS, 0))
            self._next_offer()
            return True
        self.phase = 0
        self.interrupts = []
        return False  # an ordinary play by this seat, applied by push

    def _offer_bombs(self, player: int) -> None:
        """After ``player`` played: queue the other seats that hold a bomb beating it."""
        if self.outcome is not None or not self.table_kind:
            return
        normal = self.to_move
        turn = self._turn
        t = self.t
        table = None  # the Play on the table, built once a seat holds a bomb
        offers = []
        s = player
        for _ in range(len(self.hands) - 1):  # every other seat, in turn order
            s = turn[s]
            if s in (normal, player) or not self.hands[s] or self.locked >> s & 1:
                continue
            h = self.hands[s]
            if h.bit_count() < 5:
                continue
            for k, m in keyed_bombs(self._fives_of(s, h), h, t):
                table = table or self.table
                if beats(Play(m, 5, k, five_level(k)), table, t):
                    offers.append(s)
                    break
        if offers:
            self.interrupts = offers
            self.resume = normal
            self.phase = 2
            self.to_move = offers[0]

    def _next_offer(self) -> None:
        if self.interrupts:
            self.to_move = self.interrupts[0]
        else:
            self.phase = 0
            self.to_move = self.resume

    def _teams_tied(self, winner: int) -> bool:
        """Team play: the two teams hold equally many cards (a shoot-out follows)."""
        cards = [h.bit_count() for h in self.hands]
        mine = sum(cards[s] for s in range(4) if s % 2 == winner % 2)
        theirs = sum(cards[s] for s in range(4) if s % 2 != winner % 2)
        return mine == theirs

    def _shootout(self) -> None:
        """Team tie: everyone gets five fresh cards; the lowest card opens (000 wiki)."""
        deck = shuffled_bits(self.rng, _DECK)
        self.hands = [sum(deck[5 * s : 5 * s + 5]) for s in range(4)]
        self._following = following_holders(self._turn, self.hands)
        self.shootouts.append(list(self.hands))
        self._fives = [None] * 4
        self.n_active = 4
        self.finished = []
        self.discards |= self.trick_cards
        self.trick_cards = 0
        self.table_kind, self.table_level, self.table_mask = 0, -1, 0
        self.locked = self.lead_passes = 0
        self.trick_start = len(self.log)
        lowest = next(c for c in self.t.by_order if self._in_hands() >> c & 1)
        self.to_move = self._holder(1 << lowest)
        self.opening_card = 1 << lowest if self.rules.opening_must_include else 0

    # --- queries ------------------------------------------------------------------------
    @property
    def over(self) -> bool:
        return self.outcome is not None

    @property
    def table(self) -> Play | None:
        """The play to beat, or None when the table is empty."""
        if not self.table_kind:
            return None
        return Play(self.table_mask, self.table_kind, self.table_key, self.table_level)

    @property
    def history(self) -> list[Turn]:
        """Every turn of the deal so far."""
        return [Turn(*x) for x in self.log]

    def active(self, seat: int) -> bool:
        return self.hands[seat] != 0

    def next_seat(self, seat: int) -> int:
        """The next seat in turn order that still holds cards and is not shut out."""
        return next_in_turn(self._following, self.locked, seat)

    def legal_moves(self) -> list[Mask]:
        """Every legal move for the seat to move (``PASS`` included where allowed)."""
        if self.outcome is not None:
            return []
        if self.phase:
            return self._special_moves()
        seat = self.to_move
        h = self.hands[seat]
        kind = self.table_kind
        if kind == 1 and self.flow.plain_singles:
            # The commonest turn: answering a single, when the answers are only the higher
            # singles (beating_plays, without its dispatch on the table's kind).
            plays = single_cards(h & self.t.above[self.table_key], self.t)
            may_pass = True
        elif not kind:
            plays = leading_plays(h, self.t, self._fives_of(seat, h))
            if self.opening_card:
                oc = self.opening_card
                plays = [m for m in plays if m & oc]
            may_pass = False
        else:
            # The seat's five-card index only when the answers can include five-card plays.
            t = self.t
            fives = self._fives_of(seat, h) if kind == 5 or kind in t.bomb_targets else None
            plays = beating_plays(h, t, kind, self.table_key, fives)
            may_pass = True
        if self.flow.turn_duties:
            plays, may_pass = self._turn_duties(seat, h, plays, may_pass)
        if may_pass or not plays:
            plays.append(PASS)
        return plays

    def _turn_duties(
        self, seat: int, h: Mask, plays: list[int], may_pass: bool
    ) -> tuple[list[int], bool]:
        """Rules about this particular turn, in order: forbidden last plays, the last-card
        duty, then the rules that take away the pass (the triple-threes force, following the
        President).  The duty comes after the forbidden last plays: a player's highest play
        is the highest one they may make."""
        t, rules = self.t, self.rules
        if t.any_final_rule and h in plays and t.is_forbidden_final(h):
            plays = [m for m in plays if m != h]  # only a play of the whole hand is refused
        duty = rules.last_card_duty
        if duty is not LastCardDuty.NONE and self._before_last_card(seat):
            if duty is LastCardDuty.HIGHEST_HAND:
                # 003:54 'must play their highest hand, if they can play anything'
                plays = self._top_plays(plays)
                may_pass = may_pass and not plays
            elif self.table_kind <= 1:
                plays, may_pass = self._highest_single_duty(h, plays, may_pass)
        if may_pass and plays and self._must_answer(plays):
            may_pass = False
        return plays, may_pass

    def _before_last_card(self, seat: int) -> bool:
        """Whether the next seat holding cards after ``seat`` holds exactly one."""
        nxt = self.next_seat_any(seat)
        return nxt != seat and self.hands[nxt].bit_count() == 1

    def _highest_single_duty(
        self, h: Mask, plays: list[int], may_pass: bool
    ) -> tuple[list[int], bool]:
        """000:180 'you must play your highest single card or a combination of more than one
        card' (003:54 read for singles only): a single must be the highest card, and no pass
        while that card beats the table."""
        top = self._highest_card(h)
        plays = [m for m in plays if m.bit_count() != 1 or m == top]
        if self.table_kind and top in plays:
            may_pass = False
        return plays, may_pass

    def _top_plays(self, plays: list[int]) -> list[int]:
        """The plays that no other of these plays of the same size beats (003:54 'their
        highest hand'): one per size, or several of equal rank when suits break no ties."""
        t = self.t
        found = [p for p in (classify(m, t) for m in plays) if p is not None]
        strongest_first = sorted(found, key=lambda p: p.key, reverse=True)
        return [
            p.mask
            for p in found
            if not any(q.kind == p.kind and beats(q, p, t) for q in strongest_first)
        ]

    def _must_answer(self, plays: list[int]) -> bool:
        """Whether a seat that can beat the table with ``plays`` may not pass: after a lead of
        three threes with only three twos to answer (000 wiki var. 2), or while the
        President's last play is on the table (002:100 'The players next to the new President
        must follow the President's last play if possible')."""
        rules = self.rules
        if (
            rules.triple_threes_force
            and self.table_kind == 3
            and self.table_key == 0
            and len(self.log) == self.trick_start + 1
            and all(m & TWOS == m for m in plays)
        ):
            return True
        return bool(
            rules.follow_president
            and self.table_kind
            and self.finished
            and self.table_seat == self.finished[0]
            and not self.hands[self.table_seat]
        )

    def _fives_of(self, seat: int, h: Mask) -> Keyed:
        fives = self._fives[seat]
        if fives is None:
            fives = self._fives[seat] = five_card_keyed(h, self.t)
        return fives if h.bit_count() >= 5 else []

    def next_seat_any(self, seat: int) -> int:
        """Next seat still holding cards, ignoring the strict-pass lock (for duties)."""
        return self._following[seat]

    def _highest_card(self, h: Mask) -> int:
        order = self.t.order
        best, best_o = 0, -1
        m = h
        while m:
            low = m & -m
            o = order[low.bit_length() - 1]
            if o > best_o:
                best, best_o = low, o
            m ^= low
        return best

    # --- moves --------------------------------------------------------------------------
    def play(self, move: Mask) -> None:
        """Check ``move`` against every rule and apply it; errors name the broken rule."""
        if self.outcome is not None:
            raise DoesNotBeatError("the deal is over")
        h = self.hands[self.to_move]
        if move & ~h:
            missing = " ".join(card_text(c) for c in range(52) if (move & ~h) >> c & 1)
            raise CardNotInHandError(f"not in hand: {missing}")
        legal = self.legal_moves()
        if move in legal:
            self.push(move)
            return
        if move == PASS:
            raise DoesNotBeatError(self._why_no_pass())
        p = classify(move, self.t)
        if p is None:
            raise NotACombinationError("those cards are not a combination in this rule set")
        if not beats(p, self.table, self.t):
            raise DoesNotBeatError("that play does not beat the table")
        raise DoesNotBeatError(self._why_not(move))

    def _why_no_pass(self) -> str:
        """Name the rule that refuses a pass."""
        if not self.table_kind and not self.phase:
            return "you may not pass now: you are leading"
        if self.rules.follow_president and self.finished and self.table_seat == self.finished[0]:
            return "you may not pass: you must follow the President's last play if you can"
        duty = self.rules.last_card_duty
        if duty is not LastCardDuty.NONE and self._before_last_card(self.to_move):
            if duty is LastCardDuty.HIGHEST_HAND:
                return (
                    "you may not pass: the player before a last card must play their highest "
                    "play when they can play"
                )
            return (
                "you may not pass: the player before a last card must play their highest "
                "single when it beats the table"
            )
        return "you may not pass now"

    def _why_not(self, move: Mask) -> str:
        """Name the rule that refuses a combination which would otherwise beat the table."""
        if self.phase == 1:
            return "a decision before play is asked for, not a play"
        if self.phase == 2:
            return "only a bomb may be played out of turn"
        if self.opening_card and not move & self.opening_card:
            return f"the opening play must include {card_text(self.opening_card.bit_length() - 1)}"
        if move == self.hands[self.to_move] and self.t.is_forbidden_final(move):
            return "that play may not be your last"
        duty = self.rules.last_card_duty
        if duty is LastCardDuty.HIGHEST_HAND and self._before_last_card(self.to_move):
            return "the player before a last card must play their highest play of that size"
        if duty is not LastCardDuty.NONE and move.bit_count() == 1:
            return "the player before a last card must play their highest single"
        if not self.table_kind:
            return "that combination may not lead (it only answers certain plays)"
        return "that play may not be made now"

    def push(self, move: Mask) -> None:
        """Apply a move taken from :meth:`legal_moves` (not re-checked)."""
        seat = self.to_move
        if self.phase and self._push_special(seat, move):
            return
        if not move:
            self._pass(seat)
            return
        hands = self.hands
        h = hands[seat] ^ move
        hands[seat] = h
        answered = self.table_kind
        if move & (move - 1):
            self.table_kind, self.table_key, self.table_level = self._classified(seat, move)
        else:
            self.table_kind, self.table_key = 1, self.t.power[move.bit_length() - 1]
        self.log.append((seat, move, 0))
        if self.opening_card:
            self.opening_card = 0
        if self.starter < 0:
            self.starter = seat
        self.table_mask = move
        self.table_seat = seat
        self.trick_cards |= move
        self.lead_passes = 0
        if not h and self._out(seat, move):
            return
        flow = self.flow
        if flow.bomb_takes_trick and self.table_kind == 5 and answered not in (0, 5):
            # 001:41 an honour hand dropped on a smaller play 'takes the round outright'
            self._end_trick()
            return
        if flow.strict_pass:
            self._after_strict_play(seat, h)
            return
        self.need = self.n_active - 1 if h else self.n_active
        self.to_move = self._following[seat]
        if flow.bomb_offers:
            self._offer_bombs(seat)

    def _classified(self, seat: int, move: Mask) -> tuple[int, int, int]:
        """``(kind, key, level)`` of a legal play of two or more cards.  A five-card play came
        from the seat's index, which already holds its key (classifying it again costs more
        than finding it there)."""
        fives = self._fives[seat]
        if fives and move.bit_count() == 5 and self.t.five_compare is not FiveCompare.HIGHEST_CARD:
            for k, m in fives:
                if m == move:
                    return 5, k, five_level(k)
        found = kind_key_level(move, self.t)
        if found is None:  # pragma: no cover - push is only given legal moves
            raise NotACombinationError("not a combination")
        return found

    def _out(self, seat: int, move: Mask) -> bool:
        """``seat`` just played its last card: record it; True if that ends the deal."""
        hands = self.hands
        self.n_active -= 1
        self.finished.append(seat)
        following = self._following
        successor = following[seat]
        for s, nxt in enumerate(following):
            if nxt == seat:
                following[s] = successor
        if self.rules.play_to_end and self.n_active > 1:
            return False
        self.finished += [s for s in range(len(hands)) if hands[s]]
        self.trick_winners.append((seat, move))
        if self.rules.settlement is Settlement.TEAMS and self._teams_tied(seat):
            self._shootout()
            return True
        self._finish(Termination.PLAYED_OUT, self.finished[0], "")
        return True

    def _after_strict_play(self, seat: int, h: Mask) -> None:
        """Who moves after a play under the strict pass rule (seats that passed are out of
        the trick)."""
        locked = self.locked
        # The seats still in the trick besides the player: every shut-out seat holds cards
        # (it passed on its turn and has not played since).
        others = self.n_active - (1 if h else 0) - locked.bit_count()
        if others == 0:
            # Everyone else is shut out: the owner may beat their own play, or pass.
            if h:
                self.to_move = seat
            else:
                self._end_trick()
            return
        self.need = others
        self.to_move = next_in_turn(self._following, locked, seat)
        if self.flow.bomb_offers:
            self._offer_bombs(seat)

    def _pass(self, seat: int) -> None:
        """A pass, whatever the table and the pass rules."""
        flow = self.flow
        drew = self._draw(seat) if flow.pass_draws else 0
        self.log.append((seat, PASS, drew))
        if not self.table_kind:
            # A leader with no allowed lead gives the lead to the next seat.
            self.lead_passes += 1
            if self.lead_passes >= self.n_active:
                self._finish(Termination.STALEMATE, None, "no player may lead")
                return
            self.to_move = self.next_seat(seat)
            return
        if flow.pass_ends_trick or seat == self.table_seat:
            self._end_trick()
            return
        if flow.strict_pass:
            self.locked |= 1 << seat
            nxt = self.next_seat(seat)
            if nxt == seat or self.locked >> nxt & 1:
                self._end_trick()
            else:
                self.to_move = nxt
            return
        self.need -= 1
        if self.need <= 0:
            self._end_trick()
            return
        self.to_move = self._following[seat]

    def _draw(self, seat: int) -> int:
        pd = self.rules.pass_draw
        if pd is PassDraw.NONE or not self.table_kind:
            return 0
        k = 1 if pd is PassDraw.ONE else self.table_mask.bit_count()
        drawn = 0
        for _ in range(k):
            if not self.stock and self.rules.stock_empty is StockEmpty.RESHUFFLE_DISCARDS:
                pile = [c for c in range(52) if self.discards >> c & 1]
                shuffle(self.rng, pile)
                self.stock, self.discards = pile, 0
            if not self.stock:
                break
            c = self.stock.pop()
            drawn |= 1 << c
        if drawn:
            self.hands[seat] |= drawn
            self._fives[seat] = None
        return drawn

    def _end_trick(self) -> None:
        owner = self.table_seat
        if self.table_kind:
            self.trick_winners.append((owner, self.table_mask))
        self.discards |= self.trick_cards
        self.trick_cards = 0
        self.table_kind, self.table_level, self.table_mask = 0, -1, 0
        self.locked = 0
        self.trick_start = len(self.log)
        if self.hands[owner]:
            self.to_move = owner
        else:
            self.to_move = self.next_seat(owner)

    def _finish(self, how: Termination, winner: int | None, detail: str) -> None:
        self.outcome = settle(self, how, winner, detail)

    # --- convenience --------------------------------------------------------------------
    def cards_left(self) -> list[int]:
        return [h.bit_count() for h in self.hands]


_POINTS = ((8, 1), (9, 2), (10, 3), (11, 4), (12, 5))
"""Reshuffle point count: J=1, Q=2, K=3, A=4, 2=5 (by rank index)."""
