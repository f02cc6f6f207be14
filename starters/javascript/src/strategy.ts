/**
 * YOUR BOT: its name and its strategy. This is the one file to edit.
 *
 * `choose` gets the whole request of the turn, typed (see protocol.ts): your hand, the table,
 * every seat's card count and score, the deal's history, the rules in force, the time you
 * have (`deadline_ms`), and `legal_moves`, the complete list of legal moves, lowest first,
 * `pass` last when passing is allowed. Answer the id of one of them, or `{ move, say }` to
 * add table talk to the log. It may be `async`.
 *
 * If `choose` throws or answers an id that is not listed, the server logs the error and plays
 * the first legal move instead (a legal move always beats a fault), so a bug costs no strike.
 */
import type { DescribeAnswer, MoveId, MoveRequest } from "./protocol.js";

/** What `GET /` answers: shown in the arena's seat maps and match logs. */
export const BOT: Omit<DescribeAnswer, "protocol"> = {
  name: "starter-js",
  author: "you",
  version: "0.1.0",
};

export type Choice = MoveId | { move: MoveId; say?: string };

export function choose(request: MoveRequest): Choice | Promise<Choice> {
  // The strategy goes here. This one plays the first legal move: the lowest play (or the
  // first choice of a decision).
  const first = request.legal_moves[0];
  if (first === undefined) throw new Error("no legal move listed");
  return first.id;
}
