package bigtwo.starter;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Request signing, version 2: how the bot knows a request comes from the arena, once.
 *
 * <p>The arena signs every request with the bot's own secret:
 *
 * <pre>
 * X-BigTwo-Timestamp: &lt;unix seconds&gt;
 * X-BigTwo-Request-Id: &lt;32 lowercase hex characters, random per request&gt;
 * X-BigTwo-Signatures: v2=&lt;hex HMAC-SHA256(secret, message)&gt;[, v2=&lt;hex&gt; ...]
 *
 * message = "v2\n" METHOD "\n" TARGET "\n" TIMESTAMP "\n" REQUEST_ID "\n" BODY
 * </pre>
 *
 * <p>TARGET is the request target as it stands on the request line (path and query), BODY the
 * exact body bytes, and the HMAC key the secret's characters themselves. A request is accepted
 * when any v2 entry verifies under any of the bot's secrets (several during a rotation), its
 * timestamp is within 300 s of the bot's clock, and its request id was not accepted before:
 * ids are remembered for longer than a timestamp stays acceptable, so a recorded request cannot
 * be played again. Entries of other versions are ignored.
 */
public final class Signing {
    public static final String TIMESTAMP_HEADER = "X-BigTwo-Timestamp";
    public static final String REQUEST_ID_HEADER = "X-BigTwo-Request-Id";
    public static final String SIGNATURES_HEADER = "X-BigTwo-Signatures";
    /** How far (seconds) a request's timestamp may be from this bot's clock, either way. */
    public static final long MAX_SKEW_S = 300;
    /** How long an accepted request id is remembered: longer than a timestamp stays fresh. */
    public static final long REPLAY_WINDOW_S = 2 * MAX_SKEW_S + 60;
    /** Request ids remembered at most. */
    public static final int REPLAY_CACHE_MAX = 200_000;

    private static final Pattern TIMESTAMP = Pattern.compile("[0-9]{1,12}");
    private static final Pattern REQUEST_ID = Pattern.compile("[0-9a-f]{32}");

    private Signing() {}

    /**
     * Why a request was refused; {@code reason} uses the same words as the arena's
     * referee/wire/signing.py: signature_missing, bad_timestamp, stale_timestamp,
     * bad_request_id, bad_signature, replayed.
     */
    public record Refusal(String reason, String message) {}

    /** The signature headers of one request (null when absent). */
    public record SignedHeaders(String timestamp, String requestId, String signatures) {}

    /** The exact bytes a version 2 signature covers. */
    public static byte[] v2Message(
            String method, String target, String timestamp, String requestId, byte[] body) {
        String head = "v2\n" + method.toUpperCase(Locale.ROOT) + "\n" + target + "\n" + timestamp
                + "\n" + requestId + "\n";
        byte[] headBytes = head.getBytes(StandardCharsets.UTF_8);
        byte[] message = new byte[headBytes.length + body.length];
        System.arraycopy(headBytes, 0, message, 0, headBytes.length);
        System.arraycopy(body, 0, message, headBytes.length, body.length);
        return message;
    }

    /** The hex HMAC-SHA256 of {@link #v2Message} under {@code secret}. */
    public static String signV2(
            String secret, String method, String target, String timestamp, String requestId,
            byte[] body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return HexFormat.of().formatHex(
                    mac.doFinal(v2Message(method, target, timestamp, requestId, body)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    /** The secrets a setting names: one secret or a comma-separated list ({@code new,old}). */
    public static List<String> parseSecrets(String value) {
        List<String> out = new ArrayList<>();
        if (value == null) {
            return out;
        }
        for (String part : value.split(",")) {
            if (!part.isBlank()) {
                out.add(part.strip());
            }
        }
        return out;
    }

    /** The v2 digests of an X-BigTwo-Signatures value (other versions are ignored). */
    public static List<String> v2Digests(String value) {
        List<String> out = new ArrayList<>();
        for (String entry : value.split(",", -1)) {
            int at = entry.indexOf('=');
            if (at < 0) {
                continue;
            }
            String version = entry.substring(0, at).strip();
            String digest = entry.substring(at + 1).strip();
            if (version.equals("v2") && !digest.isEmpty()) {
                out.add(digest);
            }
        }
        return out;
    }

    private static boolean isBlank(String s) {
        return s == null || s.isEmpty();
    }

    /**
     * Why a request fails version 2 verification, or empty when it is accepted. The request id
     * is remembered in {@code cache} (if not null) only once the signature verified.
     */
    public static Optional<Refusal> verifyV2(
            List<String> secrets, String method, String target, byte[] body, SignedHeaders h,
            ReplayCache cache, double nowSeconds) {
        List<String> missing = new ArrayList<>();
        if (isBlank(h.timestamp())) {
            missing.add(TIMESTAMP_HEADER);
        }
        if (isBlank(h.requestId())) {
            missing.add(REQUEST_ID_HEADER);
        }
        if (isBlank(h.signatures())) {
            missing.add(SIGNATURES_HEADER);
        }
        if (!missing.isEmpty()) {
            return refuse("signature_missing", "this bot only answers signed requests: "
                    + String.join(" and ", missing) + " missing");
        }
        if (!TIMESTAMP.matcher(h.timestamp()).matches()) {
            return refuse("bad_timestamp",
                    TIMESTAMP_HEADER + " must be unix seconds (a decimal integer)");
        }
        double skew = nowSeconds - Long.parseLong(h.timestamp());
        if (Math.abs(skew) > MAX_SKEW_S) {
            return refuse("stale_timestamp", String.format(Locale.ROOT,
                    "%s is %.0f s %s this bot's clock (at most %d s accepted): a replayed "
                            + "request, or a clock that needs fixing",
                    TIMESTAMP_HEADER, Math.abs(skew), skew > 0 ? "behind" : "ahead of",
                    MAX_SKEW_S));
        }
        if (!REQUEST_ID.matcher(h.requestId()).matches()) {
            return refuse("bad_request_id", REQUEST_ID_HEADER + " must be 32 lowercase hex characters");
        }
        List<String> offered = v2Digests(h.signatures());
        if (offered.isEmpty()) {
            return refuse("signature_missing", SIGNATURES_HEADER + " has no v2 signature");
        }
        boolean ok = false;
        for (String secret : secrets) {
            byte[] expected = signV2(secret, method, target, h.timestamp(), h.requestId(), body)
                    .getBytes(StandardCharsets.US_ASCII);
            for (String digest : offered) {
                // Every pair is compared (no early exit), each in constant time.
                ok |= MessageDigest.isEqual(expected, digest.getBytes(StandardCharsets.UTF_8));
            }
        }
        if (!ok) {
            return refuse("bad_signature", SIGNATURES_HEADER + " does not match: the request was "
                    + "not signed with this bot's secret (rotated? set the new one), was changed on "
                    + "the way, or was sent to another path or with another method than it was "
                    + "signed for");
        }
        if (cache != null && !cache.remember(h.requestId())) {
            return refuse("replayed", REQUEST_ID_HEADER + " " + h.requestId()
                    + " was already accepted: a replayed request");
        }
        return Optional.empty();
    }

    private static Optional<Refusal> refuse(String reason, String message) {
        return Optional.of(new Refusal(reason, message));
    }
}
