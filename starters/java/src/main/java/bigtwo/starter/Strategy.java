package bigtwo.starter;

import bigtwo.starter.Protocol.MoveRequest;

/**
 * YOUR BOT: its name and its strategy. This is the one file to edit.
 *
 * <p>{@link #choose} gets the whole request of the turn, typed (see {@link Protocol}): your
 * hand, the table, every seat's card count and score, the deal's history, the rules in force,
 * the time you have ({@code deadlineMs}), and {@code legalMoves}, the complete list of legal
 * moves, lowest first, {@code "pass"} last when passing is allowed. Return the id of one of
 * them (and, if you like, something to say for the log).
 *
 * <p>If {@code choose} throws or returns an id that is not listed, the server logs it and plays
 * the first legal move instead (a legal move always beats a fault), so a bug costs no strike.
 */
public final class Strategy {
    /** What {@code GET /} answers: shown in the arena's seat maps and match logs. */
    public static final String NAME = "starter-java";
    public static final String AUTHOR = "you";
    public static final String VERSION = "0.1.0";

    private Strategy() {}

    /** A move id and optional table talk ({@code say} may be null). */
    public record Choice(String move, String say) {
        public static Choice of(String move) {
            return new Choice(move, null);
        }
    }

    /**
     * Picks the move. The strategy goes here; this one plays the first legal move: the lowest
     * play (or the first choice of a decision).
     */
    public static Choice choose(MoveRequest request) {
        return Choice.of(request.legalMoves().get(0).id());
    }
}
