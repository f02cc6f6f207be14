"""Rule sets: every house rule in the rule texts as a named, documented option.

A :class:`RuleSet` is frozen data.  Conventions that are data (suit order, straight order, flush
comparison, penalty schedule, deal size) are settings; conventions that change the flow of play
(strict pass, honour-hand bombs, dragon wins, last-card duty) are enum/flag settings that select
small behavioural stages in :mod:`referee.game.state`.  House rules combine freely: a preset is
just a set of option values, and ``ruleset.with_options(...)`` derives a new one.

Every option names the rule text it comes from (files in ``shared/rules/``: 000 = Pagat-style
compilation with the encyclopedia text, 001 = modern summary, 002 = older encyclopedia article,
003 = one group's house rules).  ``docs/rules.md`` is generated from the same metadata.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .straights import STRAIGHT_ORDERS, StraightOrder, find_straight_order


class Leftover(StrEnum):
    """What happens to cards that do not go evenly into the hands."""

    TO_HOLDER_OF_LOWEST = "to-holder-of-lowest"
    """Spare card(s) go to whoever holds the lowest card; if a spare *is* the lowest card, to
    the holder of the next lowest (000 Three Player Game; 001 short-handed; 002 dealing)."""
    TO_HOLDER_OF_LOWEST_DIAMOND = "to-holder-of-lowest-diamond"
    """Spare card(s) go to the holder of the lowest diamond (000 wiki var. 11; 002 var. 5)."""
    TO_HOLDER_OF_TWO_OF_SPADES = "to-holder-of-2s"
    """Spare card goes to the holder of the two of spades (000 wiki var. 20)."""
    SET_ASIDE = "set-aside"
    """Spare cards are set aside unseen (000 two-player; 001; 003 '17 each, do not use')."""
    GHOST_HAND = "ghost-hand"
    """Deal 13 to each seat as if there were four; the extra hand is dead (000 wiki var. 19;
    002 var. 11; 003 'dead hand')."""
    REMOVE_LOWEST = "remove-lowest"
    """The lowest cards are removed before the deal, so the two of spades is never left out
    (000 wiki var. 11; 002 var. 5)."""
    STOCK = "stock"
    """Undealt cards form a face-down stock that passing players draw from (000 three- and
    two-player games; 000 wiki var. 18; 001 short-handed; 002 var. 10)."""


class Direction(StrEnum):
    """Order of turns.  Seats are numbered in the anticlockwise direction."""

    ANTICLOCKWISE = "anticlockwise"
    """Seat s is followed by seat s+1 (000 standard, 001)."""
    CLOCKWISE = "clockwise"
    """Seat s is followed by seat s-1 (000: America, Indonesia; 003)."""
    ALTERNATE = "alternate"
    """Anticlockwise in even deals, clockwise in odd ones (000 'alternate hands')."""


class FlushCompare(StrEnum):
    """How two flushes compare."""

    SUIT_FIRST = "suit-first"
    """Higher suit wins; in the same suit, higher cards (000 standard; 001; 002)."""
    TOP_CARD = "top-card"
    """Rank of the highest card, then its suit (000 Hong Kong; 002 var. 4; 003)."""
    POKER = "poker"
    """All ranks from the top down as in poker, then the suit of the highest card
    (000 'Some compare all the ranks first'; 002 var. 4)."""


class FiveKind(StrEnum):
    """Five-card combination types."""

    STRAIGHT = "straight"
    """Five ranks in sequence (``straights``), not all of one suit; compared by sequence, then
    the suit of its tie-break card (000:62, 001:25, 002:33)."""
    FLUSH = "flush"
    """Five cards of one suit that are no straight flush; compared by ``flush_compare``
    (000:63, 001:25, 002:34)."""
    FULL_HOUSE = "full-house"
    """A triple and a pair, compared by the triple (000:64, 001:25, 002:35)."""
    FOUR_OF_A_KIND = "four-of-a-kind"
    """Four cards of a rank and any fifth card, compared by the four (000:65, 001:25,
    002:36)."""
    STRAIGHT_FLUSH = "straight-flush"
    """Five ranks in sequence in one suit (``straight_flushes``, else ``straights``), compared
    by sequence, then suit (000:66, 001:25, 002:37)."""
    ROYAL_FLUSH = "royal-flush"
    """A straight flush 10-J-Q-K-A, as its own type only when the order lists it
    (000 'only a Royal Flush can beat a four of a kind')."""
    TWO_PAIR = "two-pair"
    """Two pairs of different ranks and an odd card, 'two pair junk' / 'butterfly'
    (000 wiki var. 6; 002 var. 2)."""
    SISTERS = "sisters"
    """Two pairs of consecutive ranks and an odd card (000 wiki var. 7; 002 var. 2)."""
    TRIPLE_JUNK = "three-of-a-kind"
    """A triple and two unmatched cards, the poker hand (000 wiki var. 7)."""


STANDARD_FIVE_ORDER = (
    FiveKind.STRAIGHT,
    FiveKind.FLUSH,
    FiveKind.FULL_HOUSE,
    FiveKind.FOUR_OF_A_KIND,
    FiveKind.STRAIGHT_FLUSH,
)


class FiveCompare(StrEnum):
    """How a five-card hand may beat another five-card hand."""

    BY_TYPE = "by-type"
    """A higher type beats any lower type; same type compares inside (000, 001, 002)."""
    SAME_TYPE_ONLY = "same-type-only"
    """Only a higher hand of the same type ('no poker rules', 000 wiki var. 30; Da Lao Er:
    'a full house cannot be used to beat a straight')."""
    HIGHEST_CARD = "highest-card"
    """Any five-card hand beats another whose highest card is lower, whatever the types
    (000 wiki var. 31)."""


class FourCard(StrEnum):
    """Four-card plays."""

    NONE = "none"
    """Four cards are never a play (000:65, 001:19; 003:36 'Four cards: Illegal')."""
    QUADS = "quads"
    """Four of a kind alone, beaten only by a higher four (000 'Playing quads without an odd
    card'; 000 wiki var. 3; 001)."""
    QUADS_AND_TWO_PAIRS = "quads-and-two-pairs"
    """Two pairs or four of a kind as four-card plays; fours beat two pairs (000 wiki var. 5;
    002 var. 1)."""


class PassRule(StrEnum):
    """What a pass costs."""

    TURN = "turn"
    """A pass gives up only that turn (000 standard; 001; 002 'jumping-back')."""
    TRICK = "trick"
    """Strict pass: a player who passed may not play again until the trick ends; the owner
    of the table may beat their own play (000 'No Play after a Pass', Indonesia; 001; 002
    var. 7)."""
    ENDS_TRICK = "ends-trick"
    """The first pass ends the trick (000 wiki: 'some variations have when 1 player has
    passed the trick is over')."""


class PassDraw(StrEnum):
    """Drawing from the stock as the price of a pass (requires ``leftover=stock``)."""

    NONE = "none"
    """A pass draws nothing (000, 001, 002 standard)."""
    ONE = "one"
    """Draw one card (000 three/two-player; 000 wiki var. 18; 001; 002 var. 10)."""
    PLAY_SIZE = "play-size"
    """Draw as many cards as the play you declined to beat (000; 001)."""


class StockEmpty(StrEnum):
    """What passing costs once the stock has run out (with ``pass_draw``)."""

    NO_DRAW = "no-draw"
    """When the stock runs out, passing costs nothing more (000)."""
    RESHUFFLE_DISCARDS = "reshuffle-discards"
    """Finished tricks are shuffled into a new stock (000 'some groups')."""


class LaterLead(StrEnum):
    """Who leads deals after the first."""

    LOWEST_CARD = "lowest-card"
    """The holder of the lowest card opens every deal (001 'opens every deal')."""
    WINNER = "winner"
    """The winner of the previous deal leads anything (000 variations, Hong Kong; 000 wiki
    var. 17; 001; 002 var. 9)."""
    LOSER = "loser"
    """The player with most cards left leads; ties go to the one whose largest combination
    is smallest, then weakest (000 'Others play that the loser ... plays first')."""


class LastCardDuty(StrEnum):
    """Duty of the player before one who has a single card left."""

    NONE = "none"
    """No duty: the player before a last card plays as they like (000:182 Indonesia 'the next
    player is not placed under any constraints'; 001; 002)."""
    HIGHEST_SINGLE = "highest-single"
    """You must play your highest single card or a combination of more than one card: a
    single you lead must be your highest card, and on a single you may not pass while your
    highest card beats it (000:180 'you must play your highest single card or a combination
    of more than one card').  With nothing that beats the table you pass as usual."""
    HIGHEST_SINGLE_NO_PASS = "highest-single-no-pass"
    """The same duty as ``highest-single``: the reading of 003:54 that stops at singles.  It
    was the ``house-003`` preset's duty before ``highest-hand``; kept so that logs made with it
    replay as they were played."""
    HIGHEST_HAND = "highest-hand"
    """003:54 'A player to the right of a player with only one card must play their highest
    hand, if they can play anything', for every size of play ('hand' is 003's word for a play
    of 1, 2, 3 or 5 cards, 003:28-37).  Following, the player may not pass while any play
    beats the table, and must play a highest one: the top single, pair or triple, the top
    five-card hand.  Leading, the player chooses the size but must lead the highest play of
    that size (003 compares hands only within one size, 003:52: no play of one size is higher
    than a play of another).  'Highest' means no other play of the player's of the same size
    beats it (with equal ranks unordered, every top play of equal rank is allowed)."""


class FinalRestriction(StrEnum):
    """Plays that may not be a player's last."""

    SINGLE_TWO = "single-2"
    """A single two (000 Hong Kong; 000 wiki var. 35)."""
    SINGLE_TWO_OF_SPADES = "single-2S"
    """A single two of spades (000 'cannot win by keeping the two of spades'; wiki var. 24)."""
    PAIR_OF_TWOS = "pair-of-2s"
    """A pair of twos (000 wiki 'ending with a single or double two is not allowed')."""
    ANY_TWO_OF_SPADES = "any-2S"
    """Any play containing the two of spades (000 wiki var. 24)."""
    ANY_TWO = "any-2"
    """Any play containing a two."""


class InstantWin(StrEnum):
    """Hands that end the deal as soon as they are dealt."""

    DRAGON = "dragon"
    """One card of every rank wins at once; others pay as if they never played
    (000 'Dragon wins', Hong Kong; 001)."""
    FOUR_TWOS = "four-twos"
    """All four twos win at once (000 wiki var. 21; 002 var. 12)."""
    FOUR_TWOS_DRAW = "four-twos-draw"
    """All four twos make the deal a draw: nobody scores (000 wiki var. 21; 002 var. 12)."""
    SIX_PAIRS = "six-pairs"
    """Malta 'dragun': six pairs and a single win at once, but with a pair of threes the
    holder loses at once (000 wiki var. 16)."""


class Redeal(StrEnum):
    """Hands that a player may throw in for a new deal (always thrown in here: the engine
    applies the declaration automatically, so every bot gets the same right)."""

    WEAK_HAND = "weak-hand"
    """3 points or fewer, counting J=1 Q=2 K=3 A=4 2=5 (000 wiki; 002 'Reshuffling')."""
    NO_FACE_CARDS = "no-face-cards"
    """No jack, queen or king (000 wiki 'Reshuffling')."""
    FOUR_TWOS = "four-twos"
    """A hand with all four twos is redealt (000 wiki 'might be mandatory')."""


class CardValues(StrEnum):
    """What each card left in hand is worth before multipliers."""

    FLAT = "flat"
    """One point per card (000, 001, 002, 003)."""
    HONOURS = "honours"
    """3-10 one point, J Q K two, A three, 2 four (000 'Scoring variations')."""
    PIP = "pip"
    """3 = 1, 4 = 2, ... K = 11, A = 12, 2 = 13 (000 'Scoring variations')."""
    TWOS_FIVE = "twos-five"
    """3..A one point, twos five points (000 Indonesian scoring)."""


class Settlement(StrEnum):
    """How penalties turn into each seat's score for a deal (higher score is better)."""

    WINNER_COLLECTS = "winner-collects"
    """Each loser pays their penalty to the winner only (000, 001 'straight payment')."""
    PAIRWISE = "pairwise"
    """Every pair settles the difference of their penalties (000 'each pair of players
    settles up'; 001)."""
    PAIRWISE_DIFFERENCE = "pairwise-difference"
    """Every pair settles by the difference in card counts, the multiplier chosen by that
    difference (000, Anthony Kam)."""
    PENALTY_ONLY = "penalty-only"
    """Score is minus the penalty; the lowest running total wins (003, 001 sessions)."""
    LOSER_PAYS = "loser-pays"
    """Taiwan: one loser, chosen by honour hands, then highest two or ace, then most cards,
    then highest card, pays a fixed stake to the winner (000, Jonathan Dushoff)."""
    PUSOY_DOS = "pusoy-dos"
    """Winner scores 1, doubled for each two in the last play; others 0 (000 Pusoy Dos)."""
    PLACES = "places"
    """With play to the end: 5, 3, 1, 0 points by finishing place (000:217, the Pusoy Dos
    version 'that goes on until only one player has cards left')."""
    FINISHING_ORDER = "finishing-order"
    """With play to the end, no points: the finishing order is the result (000 wiki var. 32
    'players are ranked according to the order they got rid of their cards'; the President
    game's titles, 000:409, 002:100).  A seat's score is the number of seats that finished
    after it (3, 2, 1, 0 with four players), so match totals rank by the finishing order."""
    INDONESIA = "indonesia"
    """Indonesian scoring: bonuses for unbeaten quads/straight flushes/four twos, winner -5
    or -10 per two, losers 1 per card and 5 per two (000, Harold Hutabarat); the score is
    minus those points."""
    TEAMS = "teams"
    """Partners sit opposite (seats 0+2 against 1+3); when a player goes out, the team holding
    fewer cards in total wins: each of its players scores +1, each opponent -1.  A tie is
    settled by five-card shoot-outs (000 wiki and 002 'Team play')."""


class Exchange(StrEnum):
    """Cards changing hands after the deal, before the first play."""

    NONE = "none"
    """Nobody exchanges cards (000, 001, 002, 003 standard)."""
    PRESIDENT = "president"
    """From the second deal, by last deal's finishing order: the first (President) gives his
    two lowest cards to the last (Scum), who gives his two highest back; second and third
    (four players) swap one card the same way (000 wiki, 002 'President'; needs
    ``play_to_end``)."""
    PRESIDENT_CHOICE = "president-choice"
    """As ``president``, but the President and Vice-President first receive, then choose which
    cards to give (000 wiki: 'president passes any 2 cards to scum, after receiving')."""
    LOSER_TO_WINNER = "loser-to-winner"
    """Three players, from the second deal: the loser (most cards) gives his highest card to
    the winner, who gives back a card of his choice (000 'Three Player Game')."""


class AssistReading(StrEnum):
    """Which turns the assistance penalty (``penalty.assist_penalty``) charges.  Player A is
    the player just before the winner, the winner went out with a single, and A had the last
    turn before it; A pays every loser's penalty."""

    HIGHER_SINGLE = "higher-single"
    """A pays when the trick was one of singles and A, at that turn, held a single higher than
    the winner's last card, whether A led or followed, played lower or passed (000:344 'Player
    A could have prevented this from happening by playing a higher card'; 002:65)."""
    PRECAUTIONS = "precautions"
    """000:95-100, the money rule's precautions: 'If single cards are being played, you should
    play your highest card.  If it is your turn to lead, you should lead a combination more
    than one card if possible; otherwise you should lead your highest card.  If you ignore
    these precautions, and as a result the person after you wins by playing their single card,
    you have to pay'.  As ``higher-single``, and also when A led a single while holding a
    combination of more than one card it could have led, whatever its singles: a combination
    would have kept the one-card player out of that trick.  A single led that was not A's
    highest is charged, as in ``higher-single``, when A's highest card beats the winner's (only
    then was the win 'a result' of it)."""


class ShortHandedTiers(StrEnum):
    """When the three- and two-player penalty steps (``penalty.tiers_three_players``,
    ``penalty.tiers_two_players``) apply instead of ``penalty.tiers``."""

    BIGGER_HANDS = "bigger-hands"
    """Only to hands dealt more than 13 cards (17 each for three players).  Three players
    dealt 13 each (dead hand, stock, cards set aside) hold four-player hands and pay by
    ``penalty.tiers``: 000:340 and 002:61 give their three-player steps for 17 cards, and
    000:246 reads 'the payment per card ... from a player holding more than 13 cards is the
    same as from a player with 13 cards'."""
    PLAYER_COUNT = "player-count"
    """To every deal of that many players, whatever the hand size: 003:59-60 gives its steps
    by the number of players ('Three Players: Players holding 11-15 cards must double their
    points'), for either of its three-player deals (003:19 13 cards each and a dead hand,
    003:20 17 each).  With the dead hand, a player who never played pays 13 x 2 = 26."""


Tiers = tuple[tuple[int, int], ...]
"""``((min_cards, multiplier), ...)``: the highest tier reached applies."""


@dataclass(frozen=True)
class PenaltySchedule:
    """Penalty for the cards a loser still holds."""

    tiers: Tiers = ((10, 2), (13, 3))
    """Card-count multipliers for four players: 1 per card, x2 from 10, x3 at 13 (000, 001)."""
    tiers_three_players: Tiers | None = ((12, 2), (17, 3))
    """Three players dealt more than 13 cards each (17): x2 from 12, x3 at 17 (000:340 and
    002:61 'more than 11 and less than 17 ... double', '17 ... triple').  None uses ``tiers``
    for them too, which is Pagat's schedule: 'the payment per card ... from a player holding
    more than 13 cards is the same as from a player with 13 cards' (000:246).  Whether three
    players dealt 13 each (dead hand, stock, cards set aside) pay by these steps or by
    ``tiers`` is ``short_handed_tiers``."""
    tiers_two_players: Tiers | None = None
    """Two players dealt more than 13 cards each; None (no text gives a two-player schedule,
    000:250 says 'the play is as in the four-player game') uses ``tiers``."""
    card_values: CardValues = CardValues.FLAT
    """What each card left is worth before the multipliers (see the values below)."""
    twos_double: bool = False
    """Each two left in hand doubles the penalty again (000 'double the penalty yet again for
    each two'; 000 wiki 'double the count for each unused 2')."""
    multiplier_only_for_starter: bool = False
    """Only the player who made the first play of the deal pays the multipliers (000)."""
    unused_power_doubles: bool = False
    """A loser holding a two, four of a kind or straight flush pays double (000 wiki)."""
    special_finish_doubles: bool = False
    """Winning with a two, four of a kind or straight flush doubles all penalties, not
    stacking with ``finishing_twos_double`` (000 wiki)."""
    finishing_twos_double: bool = False
    """Winning with a play made only of twos doubles all penalties (000)."""
    assist_penalty: bool = False
    """The player before the winner who could have stopped a winning single with a higher
    single, and did not, pays the other losers' penalties too (000 money rule; 000 wiki
    'Penalty for assistance'; 002); which turns are charged is ``assist_reading``."""
    assist_reading: AssistReading = AssistReading.HIGHER_SINGLE
    """With ``assist_penalty``: which turns of the player before the winner it charges (see
    the values below: the encyclopedia's reading, or also a single led while holding a
    combination, 000's money rule)."""
    short_handed_tiers: ShortHandedTiers = ShortHandedTiers.BIGGER_HANDS
    """When ``tiers_three_players`` and ``tiers_two_players`` apply: only to hands of more than
    13 cards, or to every deal of that many players (see the values below)."""

    def tiers_for(self, players: int, hand_size: int) -> Tiers:
        """The multipliers for a deal of ``players`` seats dealt ``hand_size`` cards each: the
        short-handed schedules are written for hands bigger than the four-player 13, unless
        ``short_handed_tiers`` applies them by the number of players."""
        if hand_size > 13 or self.short_handed_tiers is ShortHandedTiers.PLAYER_COUNT:
            if players == 3 and self.tiers_three_players is not None:
                return self.tiers_three_players
            if players == 2 and self.tiers_two_players is not None:
                return self.tiers_two_players
        return self.tiers


def _opt(doc: str, source: str, **kw: Any) -> Any:
    return field(metadata={"doc": doc, "source": source}, **kw)


@dataclass(frozen=True)
class RuleSet:
    """A complete, named set of Big Two rules.  Build with
    :func:`~referee.game.presets.find_ruleset` or ``RuleSet(name=..., ...)``; derive with
    :meth:`with_options`."""

    name: str = "standard"
    aliases: tuple[str, ...] = ()
    description: str = "Standard Big Two as described in shared/rules/README.md."

    # --- seats and deal -----------------------------------------------------------------
    players: int = _opt("Number of seats, 2 to 4.", "000, 001, 002, 003", default=4)
    cards_per_player: int | None = _opt(
        "Cards dealt to each seat; None deals the pack out as far as it goes evenly "
        "(13 for four, 17 for three, 26 for two).",
        "000 (17/21/13 for two), 001, 002, 003",
        default=None,
    )
    leftover: Leftover = _opt(
        "What happens to cards that are not dealt into hands.",
        "000, 001, 002, 003",
        default=Leftover.TO_HOLDER_OF_LOWEST,
    )
    spare_face_up: bool = _opt(
        "The spare card given to a player is shown to everyone.",
        "000 ('one report says face down'); 000 wiki var. 11",
        default=True,
    )
    direction: Direction = _opt("Order of turns.", "000, 001, 003", default=Direction.ANTICLOCKWISE)

    # --- card order ---------------------------------------------------------------------
    suit_order: str = _opt(
        "Suits from lowest to highest: DCHS standard, CDHS Taiwan/bridge, CSHD Pusoy Dos and "
        "Hawaii, CDSH 'Viet style'.",
        "000, 001, 002 var. 6, 003",
        default="DCHS",
    )
    suits_break_ties: bool = _opt(
        "Suits decide between equal ranks; if not, an equal play never beats another.",
        "000 wiki var. 13 and 23",
        default=True,
    )

    # --- combinations -------------------------------------------------------------------
    triples: bool = _opt(
        "Triples are a play.", "000 'Playing without triples and flushes'", default=True
    )
    five_card_order: tuple[FiveKind, ...] = _opt(
        "Five-card types allowed, lowest first.  Leave FLUSH out for 'no flushes'; put FLUSH "
        "before STRAIGHT for 'straight over flush'; list ROYAL_FLUSH after FOUR_OF_A_KIND for "
        "'only a royal flush beats quads'.",
        "000, 001, 002, 000 wiki var. 6, 7, 27",
        default=STANDARD_FIVE_ORDER,
    )
    five_card_compare: FiveCompare = _opt(
        "How five-card hands beat each other.", "000 wiki var. 30, 31", default=FiveCompare.BY_TYPE
    )
    straights: str = _opt(
        "Named order of sequences (see referee.game.straights).",
        "000, 001, 002 var. 3, 003",
        default="ace-low",
    )
    straight_flushes: str | None = _opt(
        "Named order of the sequences inside straight flushes, when it is not the order of "
        "straights; None uses ``straights``.  A suited run that is no sequence in this order "
        "is a flush.",
        "002:33 straights 'The highest straight is A-2-3-4-5', 002:37-38 straight flushes "
        "'twos rank low', 'Royal Flush ... the highest combination'",
        default=None,
    )
    flush_compare: FlushCompare = _opt(
        "How flushes compare.", "000, 002 var. 4, 003", default=FlushCompare.SUIT_FIRST
    )
    four_card: FourCard = _opt(
        "Four-card plays.", "000, 001, 000 wiki var. 3-5", default=FourCard.NONE
    )
    dragon_play: bool = _opt(
        "A thirteen-card sequence 3..2 is a play on a lead, beaten only by a higher one "
        "(suit of the two).",
        "000 wiki var. 15; 002 var. 8",
        default=False,
    )
    bomb_kinds: frozenset[FiveKind] = _opt(
        "Five-card types that may be played on smaller plays (honour hands).",
        "000 'Honour hands beat all combinations'; 001; 000 wiki var. 22, 25",
        default=frozenset(),
    )
    bomb_targets: frozenset[int] = _opt(
        "Sizes of play that a bomb may beat.",
        "000 (singles, pairs, triples); 000 wiki var. 22 (singles and pairs)",
        default=frozenset(),
    )
    bomb_takes_trick: bool = _opt(
        "A bomb dropped on a play of another size takes the trick at once: nobody may answer "
        "it and its player leads next (otherwise the next player may answer with a higher "
        "five-card hand).",
        "001:41 'may be dropped on a single, a pair or a triple ... and takes the round "
        "outright'",
        default=False,
    )

    # --- leading ------------------------------------------------------------------------
    opening_must_include: bool = _opt(
        "The first play of a deal opened by the lowest card must contain it.",
        "000 ('Some play that ... does not have to be included'); 001; 003",
        default=True,
    )
    later_leads: LaterLead = _opt(
        "Who leads deals after the first.", "000, 001, 002", default=LaterLead.LOWEST_CARD
    )
    lowest_card_every: int | None = _opt(
        "With later_leads != lowest-card: the lowest card still opens every Nth deal "
        "(Indonesia: rounds of ten deals).",
        "000 Indonesia",
        default=None,
    )

    # --- passing ------------------------------------------------------------------------
    pass_rule: PassRule = _opt("What a pass costs.", "000, 001, 002 var. 7", default=PassRule.TURN)
    pass_draw: PassDraw = _opt(
        "Draw from the stock when passing.", "000, 001, 002 var. 10", default=PassDraw.NONE
    )
    stock_empty: StockEmpty = _opt("When the stock runs out.", "000", default=StockEmpty.NO_DRAW)
    triple_threes_force: bool = _opt(
        "After a lead of three threes, a player holding three twos and no other beating "
        "triple may not pass.",
        "000 wiki var. 2",
        default=False,
    )

    # --- duties and restrictions ----------------------------------------------------------
    last_card_duty: LastCardDuty = _opt(
        "Duty of the player before one who holds a single card.",
        "000, 003",
        default=LastCardDuty.NONE,
    )
    forbidden_final: frozenset[FinalRestriction] = _opt(
        "Plays that may not be a player's last.",
        "000 Hong Kong, wiki var. 24, 35",
        default=frozenset(),
    )

    # --- start and end of deal ------------------------------------------------------------
    instant_wins: frozenset[InstantWin] = _opt(
        "Hands that end the deal when dealt.", "000, 001, 002 var. 12", default=frozenset()
    )
    redeal: frozenset[Redeal] = _opt(
        "Hands that are thrown in for a new deal.", "000 wiki, 002", default=frozenset()
    )
    play_to_end: bool = _opt(
        "Play on until one player has cards; finishing order is recorded.",
        "000 'Playing until only one player has cards'; 000 wiki var. 32",
        default=False,
    )
    follow_president: bool = _opt(
        "With play_to_end: while the last play of the first player out (the President) is on "
        "the table, the players after them may not pass if they can beat it.",
        "002:100 'The players next to the new President must follow the President's last play "
        "if possible' (000:409 reads 'can follow', the default)",
        default=False,
    )

    # --- scoring ------------------------------------------------------------------------
    penalty: PenaltySchedule = _opt(
        "Penalty for cards left.", "000, 001, 002, 003", default=PenaltySchedule()
    )
    settlement: Settlement = _opt(
        "How penalties become scores.", "000, 001, 003", default=Settlement.WINNER_COLLECTS
    )
    loser_stake: int = _opt("Fixed stake for settlement=loser-pays.", "000 Taiwan", default=10)

    # --- rarer conventions ------------------------------------------------------------------
    straight_flush_plus_two: bool = _opt(
        "A straight flush is played with two extra cards as a seven-card play that beats any "
        "other play; only a higher one beats it.  Leave straight-flush out of "
        "five_card_order; pair with bombs of four-of-a-kind on every size.",
        "000 'Two extra cards with a straight flush' (Todd Latta)",
        default=False,
    )
    chop: bool = _opt(
        "A single two of spades may be 'smacked down' by four of a kind (four cards) or a run "
        "of three or more consecutive pairs (threes to aces); a chop is answered only by a "
        "higher chop of the same shape.",
        "000 wiki var. 1",
        default=False,
    )
    straight_lengths: frozenset[int] = _opt(
        "Extra sequence lengths besides five (3 to 12): a run of that many consecutive ranks "
        "from three to ace, beaten only by a higher run of the same length (top card, then its "
        "suit).",
        "000 wiki var. 8",
        default=frozenset(),
    )
    twos_low_after_bomb: bool = _opt(
        "When any hand is dealt four of a kind, twos become the lowest rank for that deal (the "
        "two of diamonds lowest of all).",
        "000 wiki (Four-of-a-kind)",
        default=False,
    )
    bombs_out_of_turn: bool = _opt(
        "After every play, players holding a bomb (bomb_kinds) that beats it are offered the "
        "chance to play it out of turn.",
        "000 (Da Lao Er / Bu Bu Gao Sheng)",
        default=False,
    )
    exchange: Exchange = _opt(
        "Cards changing hands after the deal.", "000, 002", default=Exchange.NONE
    )
    spare_trade: bool = _opt(
        "Three players: the single undealt card lies face down and the holder of the lowest card "
        "may swap that card for it (the next lowest card then opens).",
        "000 wiki var. 11; 002 var. 5",
        default=False,
    )

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError(f"invalid rule set {self.name!r}: " + "; ".join(problems))

    def problems(self) -> list[str]:
        """Every inconsistency in the options (empty when the rule set is playable), in a
        fixed order: the deal, the combinations, the scoring, then options that need others."""
        return [
            *self._deal_problems(),
            *self._combination_problems(),
            *self._scoring_problems(),
            *self._dependency_problems(),
        ]

    def _deal_problems(self) -> list[str]:
        """Seats, card order, sequence orders, hand sizes and what happens to spare cards."""
        out = []
        if self.players not in (2, 3, 4):
            out.append("players must be 2, 3 or 4")
        if sorted(self.suit_order) != sorted("CDHS"):
            out.append("suit_order must be a permutation of 'DCHS'")
        for order in (self.straights, self.straight_flushes):
            if order is not None and order not in STRAIGHT_ORDERS:
                try:
                    find_straight_order(order)
                except ValueError as e:
                    out.append(str(e))
        hand = self.hand_size()
        if hand < 1:
            out.append("cards_per_player must be at least 1")
        seats = 4 if self.leftover is Leftover.GHOST_HAND else self.players
        if hand * seats > 52:
            out.append("not enough cards for that many hands")
        spare = 52 - hand * self.players
        if (
            self.leftover
            in (
                Leftover.TO_HOLDER_OF_LOWEST,
                Leftover.TO_HOLDER_OF_LOWEST_DIAMOND,
                Leftover.TO_HOLDER_OF_TWO_OF_SPADES,
            )
            and spare >= self.players
        ):
            out.append(
                f"{spare} undealt cards: spare cards go to one player only when fewer than one "
                "per player is left; choose leftover=set-aside, stock or ghost-hand"
            )
        if self.pass_draw is not PassDraw.NONE and self.leftover is not Leftover.STOCK:
            out.append("pass_draw needs leftover=stock")
        return out

    def _combination_problems(self) -> list[str]:
        """Five-card types and bombs."""
        out = []
        if len(set(self.five_card_order)) != len(self.five_card_order):
            out.append("five_card_order lists a type twice")
        if FiveKind.TWO_PAIR in self.five_card_order and FiveKind.SISTERS in self.five_card_order:
            out.append("two-pair and sisters are alternative definitions; choose one")
        if not self.bomb_kinds <= set(self.five_card_order):
            out.append("every bomb kind must be an allowed five-card type")
        if not self.bomb_targets <= {1, 2, 3, 4, 5}:
            out.append("bomb_targets are sizes 1 to 5")
        if 5 in self.bomb_targets and self.five_card_compare is FiveCompare.HIGHEST_CARD:
            out.append("bombs on five-card hands need five_card_compare by-type or same-type-only")
        if self.bomb_kinds and not self.bomb_targets:
            out.append("bomb_kinds need bomb_targets")
        return out

    def _scoring_problems(self) -> list[str]:
        """Settlements by ranks and the assistance penalty."""
        out = []
        if self.settlement in (Settlement.PLACES, Settlement.FINISHING_ORDER):
            if not self.play_to_end:
                out.append(f"settlement={self.settlement} needs play_to_end")
            if self.penalty.assist_penalty:
                # 002:69 'If the scoring system is by ranks ... then this rule doesn't apply!'
                out.append(f"the assistance penalty does not apply to settlement={self.settlement}")
        if (
            self.penalty.assist_reading is not AssistReading.HIGHER_SINGLE
            and not self.penalty.assist_penalty
        ):
            out.append("penalty.assist_reading needs penalty.assist_penalty=true")
        return out

    def _dependency_problems(self) -> list[str]:
        """Options that need another option, or a number of players, to mean anything."""
        out = []
        sf_listed = FiveKind.STRAIGHT_FLUSH in self.five_card_order
        if self.straight_flushes is not None and not sf_listed:
            # With no straight-flush type a one-suit run plays as a straight or a flush, and
            # a royal flush is one run in any order: the option would order nothing, or
            # silently reorder straights that happen to lie in one suit.
            out.append("straight_flushes needs straight-flush in five_card_order")
        if self.follow_president and not self.play_to_end:
            out.append("follow_president needs play_to_end")
        if self.bomb_takes_trick and not self.bomb_kinds:
            out.append("bomb_takes_trick needs bomb_kinds")
        if self.lowest_card_every is not None and self.lowest_card_every < 1:
            out.append("lowest_card_every must be positive")
        if self.straight_flush_plus_two and (
            FiveKind.STRAIGHT_FLUSH in self.five_card_order
            or FiveKind.ROYAL_FLUSH in self.five_card_order
        ):
            out.append("straight_flush_plus_two replaces the five-card straight flush")
        if not self.straight_lengths <= set(range(3, 13)) - {5}:
            out.append("straight_lengths are 3 to 12, other than 5")
        if self.bombs_out_of_turn and not self.bomb_kinds:
            out.append("bombs_out_of_turn needs bomb_kinds")
        if (
            self.exchange in (Exchange.PRESIDENT, Exchange.PRESIDENT_CHOICE)
            and not self.play_to_end
        ):
            out.append("the president exchange needs play_to_end")
        if self.exchange is Exchange.LOSER_TO_WINNER and self.players != 3:
            out.append("the loser-to-winner exchange is for three players")
        if self.spare_trade and (
            self.players != 3
            or self.leftover is not Leftover.SET_ASIDE
            or 52 - 3 * self.hand_size() != 1
        ):
            out.append("spare_trade needs three players, 17 cards each, leftover=set-aside")
        if self.settlement is Settlement.TEAMS and self.players != 4:
            out.append("team play needs four players")
        return out

    def hand_size(self) -> int:
        if self.cards_per_player is not None:
            return self.cards_per_player
        if self.leftover is Leftover.GHOST_HAND:
            return 13
        return 52 // self.players

    @property
    def straight_order(self) -> StraightOrder:
        return find_straight_order(self.straights)

    @property
    def straight_flush_order(self) -> StraightOrder:
        """The sequence order inside straight flushes (``straight_flushes``, else ``straights``)."""
        return find_straight_order(self.straight_flushes or self.straights)

    def penalty_tiers(self) -> Tiers:
        """The card-count multipliers that apply to this rule set's deals."""
        return self.penalty.tiers_for(self.players, self.hand_size())

    def with_options(self, **changes: Any) -> RuleSet:
        """A new rule set with some options changed (values may be given as plain strings)."""
        return dataclasses.replace(self, **_coerce(changes))

    def options(self) -> dict[str, Any]:
        """Every option as JSON-ready data (what bots receive on the wire)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in ("name", "aliases", "description"):
                continue
            out[f.name] = _jsonable(getattr(self, f.name))
        return out

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any]) -> RuleSet:
        """Rebuild a rule set from :meth:`options` output (used to replay logs)."""
        return cls(name=name, **_coerce(options))


def option_fields() -> list[dataclasses.Field[Any]]:
    """Documented option fields of :class:`RuleSet`, in declaration order."""
    return [f for f in dataclasses.fields(RuleSet) if "doc" in f.metadata]


_ENUM_FIELDS: dict[str, Any] = {
    "leftover": Leftover,
    "direction": Direction,
    "five_card_compare": FiveCompare,
    "flush_compare": FlushCompare,
    "four_card": FourCard,
    "later_leads": LaterLead,
    "pass_rule": PassRule,
    "pass_draw": PassDraw,
    "stock_empty": StockEmpty,
    "last_card_duty": LastCardDuty,
    "settlement": Settlement,
    "exchange": Exchange,
}
"""Options whose value is one member of an enum."""
_ENUM_SET_FIELDS: dict[str, Any] = {
    "bomb_kinds": FiveKind,
    "forbidden_final": FinalRestriction,
    "instant_wins": InstantWin,
    "redeal": Redeal,
}


PENALTY_ENUMS: dict[str, Any] = {
    "card_values": CardValues,
    "assist_reading": AssistReading,
    "short_handed_tiers": ShortHandedTiers,
}
"""Fields of the penalty schedule whose value is one member of an enum."""


def _coerce(values: dict[str, Any]) -> dict[str, Any]:
    """Turn JSON-ish option values (strings, lists, dicts) into the typed values."""
    out = dict(values)
    for k, v in values.items():
        if k in _ENUM_FIELDS:
            out[k] = _ENUM_FIELDS[k](v)
        elif k in _ENUM_SET_FIELDS:
            out[k] = frozenset(_ENUM_SET_FIELDS[k](x) for x in v)
        elif k == "five_card_order":
            out[k] = tuple(FiveKind(x) for x in v)
        elif k in ("bomb_targets", "straight_lengths"):
            out[k] = frozenset(int(x) for x in v)
        elif k == "penalty" and isinstance(v, dict):
            pv = dict(v)
            for tk in ("tiers", "tiers_three_players", "tiers_two_players"):
                if pv.get(tk) is not None:
                    pv[tk] = tuple((int(a), int(b)) for a, b in pv[tk])
            for ek, enum_type in PENALTY_ENUMS.items():
                if ek in pv:
                    pv[ek] = enum_type(pv[ek])
            out[k] = PenaltySchedule(**pv)
    return out


def _jsonable(v: Any) -> Any:
    if isinstance(v, StrEnum):
        return str(v)
    if isinstance(v, frozenset):
        return sorted(_jsonable(x) for x in v)
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)}
    return v
