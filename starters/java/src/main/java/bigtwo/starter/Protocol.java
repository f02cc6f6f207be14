package bigtwo.starter;

import com.google.gson.JsonObject;
import com.google.gson.annotations.SerializedName;
import java.util.List;

/**
 * The Big Two Arena wire protocol, version 1, as Java records: one per message the arena sends
 * ({@link StartRequest}, {@link MoveRequest}, {@link EndRequest}) and per answer the bot gives
 * ({@link DescribeAnswer}, {@link MoveAnswer}, {@link ErrorAnswer}). They follow the JSON
 * Schemas in the arena's {@code referee/schemas/} and {@code docs/protocol.md}.
 *
 * <p>The arena may add fields within version 1: Gson ignores fields a record does not name,
 * which is what a bot must do. Fields that can be null or that only some rule sets send are
 * boxed ({@code Integer}) or objects, and null when absent.
 *
 * <p>Cards are two characters, rank ({@code 3 4 5 6 7 8 9 T J Q K A 2}) then suit ({@code D C
 * H S}): {@code "3D"}, {@code "TS"}. A move id is the card texts in card order joined by
 * {@code -} ({@code "3D-3S"}), or {@code "pass"}.
 */
public final class Protocol {
    /** The protocol version this bot speaks. */
    public static final int VERSION = 1;

    private Protocol() {}

    /**
     * The rule set in force; {@code options} holds every option by name (the arena's
     * docs/rules.md lists them), e.g. {@code options.get("suit_order").getAsString()}.
     */
    public record Rules(String name, JsonObject options) {}

    /** What {@code GET /} answers. */
    public record DescribeAnswer(int protocol, String name, String author, String version) {}

    /** Who sits where, as each bot described itself. */
    public record SeatInfo(int seat, String name, String author, String version) {}

    /** {@code POST /start}: sent once per match before the first deal. */
    public record StartRequest(
            int protocol,
            String type,
            @SerializedName("match_id") String matchId,
            int seat,
            int players,
            int deals,
            Rules rules,
            List<SeatInfo> seats,
            @SerializedName("deadline_ms") int deadlineMs,
            @SerializedName("time_bank_ms") int timeBankMs,
            /** Strikes that forfeit a seat (null: never). */
            @SerializedName("max_strikes") Integer maxStrikes) {}

    /** The play to beat and who made it; {@code type} is the five-card (or four-card) type. */
    public record TablePlay(List<String> cards, String kind, String type, int seat) {}

    /**
     * One turn of a trick or of the deal's history: a pass, the cards played, or a decision
     * before play (a card exchange; its cards are shown only to the seats involved).
     */
    public record Turn(int seat, boolean pass, List<String> cards, boolean decision) {}

    /** One legal move; {@code cards} is empty for {@code "pass"}. */
    public record LegalMove(String id, List<String> cards) {}

    /** A draw from the stock (a count only). */
    public record Draw(int turn, int seat, int count) {}

    /** Cards you drew. */
    public record OwnDraw(int turn, List<String> cards) {}

    /** The spare card(s) and who got them. */
    public record Spare(List<String> cards, int seat) {}

    /**
     * What to decide in the {@code "decision"} phase ({@code legal_moves} are the allowed
     * choices): {@code kind} is "give" ({@code cards} to give {@code to} a seat) or "trade"
     * ({@code card} offered).
     */
    public record Decision(String kind, Integer cards, Integer to, List<String> card) {}

    /** A card exchange before play that involved you. */
    public record Exchange(int from, int to, List<String> cards) {}

    /** How a deal ended. */
    public record Outcome(
            String termination,
            Integer winner,
            @SerializedName("finish_order") List<Integer> finishOrder,
            @SerializedName("cards_left") List<Integer> cardsLeft,
            List<Integer> penalties,
            List<Integer> scores,
            String detail) {}

    /** {@code POST /move}: your turn. */
    public record MoveRequest(
            int protocol,
            String type,
            @SerializedName("match_id") String matchId,
            /** {@code "<match_id>/<deal_index>"}. */
            @SerializedName("deal_id") String dealId,
            int deals,
            /** Index of this turn in the deal; echoed in the answer. */
            int turn,
            Rules rules,
            /** Every seat's match total before this deal (higher is better). */
            List<Integer> scores,
            List<Integer> strikes,
            @SerializedName("deadline_ms") int deadlineMs,
            /** Time bank left: this call may take deadlineMs + timeBankMs. */
            @SerializedName("time_bank_ms") int timeBankMs,
            @SerializedName("last_latency_ms") Integer lastLatencyMs,
            int seat,
            int players,
            @SerializedName("deal_index") int dealIndex,
            /** Your cards, low to high in the rule set's order. */
            List<String> hand,
            @SerializedName("card_counts") List<Integer> cardCounts,
            @SerializedName("to_move") Integer toMove,
            /** The play to beat; null when you lead. */
            TablePlay table,
            List<Turn> trick,
            List<Turn> history,
            List<Integer> passed,
            List<Integer> finished,
            @SerializedName("must_include") String mustInclude,
            @SerializedName("stock_count") int stockCount,
            List<Draw> draws,
            @SerializedName("own_draws") List<OwnDraw> ownDraws,
            Integer starter,
            Spare spare,
            /** Every legal move, lowest first, {@code "pass"} last when allowed. */
            @SerializedName("legal_moves") List<LegalMove> legalMoves,
            /** "play", "decision" (a choice before play) or "out-of-turn" (an offer to bomb). */
            String phase,
            Decision decision,
            List<Exchange> exchanges,
            Integer shootouts,
            Outcome outcome) {}

    /** The answer to {@code POST /move}; null fields are left out. */
    public record MoveAnswer(String move, Integer turn, String say) {}

    /** One seat's final place. */
    public record Standing(int rank, int seat, String name, int score, boolean forfeited) {}

    /** {@code POST /end}: the match is over. */
    public record EndRequest(
            int protocol,
            String type,
            @SerializedName("match_id") String matchId,
            int seat,
            List<Integer> scores,
            List<Standing> standings,
            List<Outcome> deals,
            List<Integer> strikes,
            List<Integer> forfeited) {}

    /** What the bot answers with a 4xx; {@code reason} names a refused signature. */
    public record ErrorAnswer(String error, String reason) {}
}
