/**
 * The Big Two Arena wire protocol, version 1, as TypeScript types.
 *
 * One type per message the arena sends (`StartRequest`, `MoveRequest`, `EndRequest`) and per
 * answer the bot gives (`DescribeAnswer`, `MoveAnswer`, `ErrorAnswer`). They follow the JSON
 * Schemas in the arena's `referee/schemas/` and the prose in `docs/protocol.md`.
 *
 * The arena may add fields within version 1 (house rules add observation fields): a bot must
 * ignore fields it does not know, which plain JSON parsing does. Fields that only some rule
 * sets send are optional here.
 */

export const PROTOCOL = 1;

/** A card: rank `3 4 5 6 7 8 9 T J Q K A 2`, then suit `D C H S` (`"3D"`, `"TS"`, `"2S"`). */
export type Card = string;

/** A move id: the card texts in card order joined by `-` (`"3D-3S"`), or `"pass"`. */
export type MoveId = string;

/** A seat number, 0 to 3, in turn order. */
export type Seat = number;

/**
 * The rule set's options (every option is listed in the arena's docs/rules.md). The ones a
 * strategy most often reads are typed; the others are there under their own names.
 */
export interface RuleOptions {
  players: number;
  cards_per_player?: number | null;
  /** Suits from lowest to highest, e.g. `"DCHS"` (standard) or `"CDHS"` (Taiwan). */
  suit_order?: string;
  suits_break_ties?: boolean;
  triples?: boolean;
  five_card_order?: string[];
  straights?: string;
  pass_rule?: "turn" | "trick" | "ends-trick";
  bombs_out_of_turn?: boolean;
  exchange?: string;
  [option: string]: unknown;
}

export interface Rules {
  name: string;
  options: RuleOptions;
}

/** `GET /`: the bot describes itself. */
export interface DescribeAnswer {
  protocol: typeof PROTOCOL;
  /** Non-empty, at most 64 characters. */
  name: string;
  /** At most 64 characters. */
  author: string;
  /** At most 64 characters. */
  version: string;
}

export interface SeatInfo {
  seat: Seat;
  name: string;
  author: string;
  version: string;
}

/** `POST /start`: sent once per match before the first deal. Any JSON object answers it. */
export interface StartRequest {
  protocol: typeof PROTOCOL;
  type: "start";
  match_id: string;
  seat: Seat;
  players: number;
  deals: number;
  rules: Rules;
  seats: SeatInfo[];
  deadline_ms: number;
  time_bank_ms: number;
  /** Strikes that forfeit a seat (null: never). */
  max_strikes: number | null;
}

/** The play to beat and who made it. */
export interface TablePlay {
  cards: Card[];
  /** single, pair, triple, four, five, dragon (house rules may add more). */
  kind: string;
  /** Five-card (or four-card) type: "straight", "full-house", ... */
  type?: string;
  seat: Seat;
}

export interface PassTurn {
  seat: Seat;
  pass: true;
}

export interface PlayTurn {
  seat: Seat;
  cards: Card[];
}

/** A decision before play (a card exchange); its cards are shown only to the seats involved. */
export interface DecisionTurn {
  seat: Seat;
  decision: true;
  cards?: Card[];
}

/** One turn of a trick or of the deal's history. */
export type Turn = PassTurn | PlayTurn | DecisionTurn;

export interface LegalMove {
  id: MoveId;
  /** The cards played; `[]` for pass. */
  cards: Card[];
}

export interface Draw {
  turn: number;
  seat: Seat;
  count: number;
}

export interface OwnDraw {
  turn: number;
  cards: Card[];
}

export interface Spare {
  cards: Card[];
  seat: Seat;
}

/** In the decision phase: what to decide (the legal moves are the allowed choices). */
export interface Decision {
  kind: "give" | "trade";
  /** give: how many cards to give. */
  cards?: number;
  /** give: who receives them. */
  to?: Seat;
  /** trade: the card offered. */
  card?: Card[];
}

export interface Exchange {
  from: Seat;
  to: Seat;
  cards: Card[];
}

export interface Outcome {
  termination: "played-out" | "instant-win" | "instant-loss" | "draw" | "stalemate";
  winner: Seat | null;
  finish_order: Seat[];
  cards_left: number[];
  penalties: number[];
  scores: number[];
  detail: string;
}

/** `"play"`; `"decision"`: a choice before play; `"out-of-turn"`: an offer to bomb (pass declines). */
export type Phase = "play" | "decision" | "out-of-turn";

/** `POST /move`: your turn. */
export interface MoveRequest {
  protocol: typeof PROTOCOL;
  type: "move";
  match_id: string;
  /** `"<match_id>/<deal_index>"`. */
  deal_id: string;
  deals: number;
  /** Index of this turn in the deal (= history.length); echo it in the answer. */
  turn: number;
  rules: Rules;
  /** Every seat's match total before this deal (higher is better). */
  scores: number[];
  strikes: number[];
  /** Per-move deadline. */
  deadline_ms: number;
  /** Time bank left: this call may take deadline_ms + time_bank_ms. */
  time_bank_ms: number;
  /** How long your previous /move took, as the arena measured it. */
  last_latency_ms: number | null;
  seat: Seat;
  players: number;
  deal_index: number;
  /** Your cards, low to high in the rule set's order. */
  hand: Card[];
  card_counts: number[];
  to_move: Seat | null;
  /** The play to beat; null when you lead. */
  table: TablePlay | null;
  trick: Turn[];
  history: Turn[];
  /** Seats shut out of the current trick (strict pass rule). */
  passed: Seat[];
  /** Seats that have played out, in order. */
  finished: Seat[];
  /** A card the play must include (the opening play), or null. */
  must_include: Card | null;
  stock_count: number;
  draws: Draw[];
  own_draws: OwnDraw[];
  starter: Seat | null;
  spare?: Spare;
  /** Every legal move, lowest plays first, `{"id": "pass", "cards": []}` last when allowed. */
  legal_moves: LegalMove[];
  phase: Phase;
  decision?: Decision;
  exchanges?: Exchange[];
  shootouts?: number;
  outcome?: Outcome;
}

/** The answer to `POST /move`. */
export interface MoveAnswer {
  /** The id of one of `legal_moves`. */
  move: MoveId;
  /** Echo of the request's `turn`. */
  turn?: number;
  /** Table talk kept in the log (first 140 characters). */
  say?: string;
}

export interface Standing {
  rank: number;
  seat: Seat;
  name: string;
  score: number;
  forfeited: boolean;
}

/** `POST /end`: the match is over. Any JSON object answers it. */
export interface EndRequest {
  protocol: typeof PROTOCOL;
  type: "end";
  match_id: string;
  seat: Seat;
  scores: number[];
  standings: Standing[];
  deals: Outcome[];
  strikes: number[];
  forfeited: Seat[];
}

/** What the bot answers with a 4xx: a message, and for a refused signature the reason word. */
export interface ErrorAnswer {
  error: string;
  reason?: string;
}
