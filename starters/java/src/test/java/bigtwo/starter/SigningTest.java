package bigtwo.starter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import bigtwo.starter.Signing.Refusal;
import bigtwo.starter.Signing.SignedHeaders;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SigningTest {
    // The byte-exact vectors of the arena's docs (referee/wire/signing.py signs the same way).
    static final String SECRET = "DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs";
    static final String STAMP = "1767225600";
    static final byte[] START_BODY =
            "{\"protocol\":1,\"type\":\"start\",\"match_id\":\"1234\",\"seat\":2}"
                    .getBytes(StandardCharsets.UTF_8);
    static final String START_ID = "0123456789abcdef0123456789abcdef";
    static final String START_SIGNATURE =
            "f838a5484c04f5eec5692a45b07b3abf2942496bd4313ec1a05f1286e34c976b";
    static final String GET_ID = "fedcba9876543210fedcba9876543210";
    static final String GET_SIGNATURE =
            "9138c1b7c5c46d7a3588a027b26c054e0e76e353ac488664cf60697a22de66e8";
    static final double NOW = 1767225600 + 5;

    static SignedHeaders good() {
        return new SignedHeaders(STAMP, START_ID, "v2=" + START_SIGNATURE);
    }

    static String verifyStart(SignedHeaders h, ReplayCache cache, List<String> secrets) {
        Optional<Refusal> r = Signing.verifyV2(secrets, "POST", "/start", START_BODY, h, cache, NOW);
        return r.map(Refusal::reason).orElse("accepted");
    }

    static String verifyStart(SignedHeaders h) {
        return verifyStart(h, null, List.of(SECRET));
    }

    @Test
    void signsTheVectorsByteForByte() {
        assertEquals(START_SIGNATURE, Signing.signV2(SECRET, "POST", "/start", STAMP, START_ID, START_BODY));
        assertEquals(GET_SIGNATURE, Signing.signV2(SECRET, "GET", "/", STAMP, GET_ID, new byte[0]));
    }

    @Test
    void acceptsOnceThenRefusesTheReplay() {
        ReplayCache cache = new ReplayCache();
        assertEquals("accepted", verifyStart(good(), cache, List.of(SECRET)));
        assertEquals("replayed", verifyStart(good(), cache, List.of(SECRET)));
    }

    @Test
    void refusesMissingHeaders() {
        assertEquals("signature_missing", verifyStart(new SignedHeaders(null, START_ID, "v2=" + START_SIGNATURE)));
        assertEquals("signature_missing", verifyStart(new SignedHeaders(STAMP, "", "v2=" + START_SIGNATURE)));
        assertEquals("signature_missing", verifyStart(new SignedHeaders(STAMP, START_ID, null)));
        assertEquals("signature_missing", verifyStart(new SignedHeaders(STAMP, START_ID, "v9=" + START_SIGNATURE)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "1.5", "abc", "1234567890123", " 1767225600"})
    void refusesATimestampThatIsNotUnixSeconds(String stamp) {
        assertEquals("bad_timestamp", verifyStart(new SignedHeaders(stamp, START_ID, "v2=" + START_SIGNATURE)));
    }

    @Test
    void refusesAStaleTimestampEitherWay() {
        for (double now : new double[] {1767225600 + 301, 1767225600 - 301}) {
            assertEquals("stale_timestamp", Signing.verifyV2(List.of(SECRET), "POST", "/start",
                    START_BODY, good(), null, now).map(Refusal::reason).orElse("accepted"));
        }
        assertTrue(Signing.verifyV2(List.of(SECRET), "POST", "/start", START_BODY, good(), null,
                1767225600 + 300).isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {"0123456789ABCDEF0123456789ABCDEF", "123456789abcdef0123456789abcdef",
            "0123456789abcdef0123456789abcdef0", "gggggggggggggggggggggggggggggggg"})
    void refusesAMalformedRequestId(String id) {
        assertEquals("bad_request_id", verifyStart(new SignedHeaders(STAMP, id, "v2=" + START_SIGNATURE)));
    }

    @Test
    void refusesAnotherSecretPathMethodOrBody() {
        assertEquals("bad_signature", verifyStart(good(), null, List.of("another-secret")));
        assertEquals("bad_signature", Signing.verifyV2(List.of(SECRET), "POST", "/end", START_BODY,
                good(), null, NOW).map(Refusal::reason).orElse("accepted"));
        assertEquals("bad_signature", Signing.verifyV2(List.of(SECRET), "PUT", "/start", START_BODY,
                good(), null, NOW).map(Refusal::reason).orElse("accepted"));
        assertEquals("bad_signature", Signing.verifyV2(List.of(SECRET), "POST", "/start",
                "{}".getBytes(StandardCharsets.UTF_8), good(), null, NOW).map(Refusal::reason)
                .orElse("accepted"));
    }

    @Test
    void acceptsAnyListedSecretAndAnyV2Entry() {
        assertEquals("accepted", verifyStart(good(), null, List.of("old-secret", SECRET)));
        assertEquals("accepted", verifyStart(new SignedHeaders(STAMP, START_ID,
                "v3=zz, v2=" + "0".repeat(64) + ",v2=" + START_SIGNATURE)));
    }

    @Test
    void remembersAnIdOnlyOnceItsSignatureVerified() {
        ReplayCache cache = new ReplayCache();
        assertEquals("bad_signature", verifyStart(new SignedHeaders(STAMP, START_ID,
                "v2=" + "0".repeat(64)), cache, List.of(SECRET)));
        assertEquals(0, cache.size());
        assertEquals("accepted", verifyStart(good(), cache, List.of(SECRET)));
    }

    @Test
    void theCacheForgetsAfterTheWindow() {
        AtomicLong now = new AtomicLong();
        ReplayCache cache = new ReplayCache(660, 10, now::get);
        assertTrue(cache.remember("a"));
        now.set(600_000_000_000L);
        assertFalse(cache.remember("a"));
        now.set(661_000_000_000L);
        assertTrue(cache.remember("a"));
    }

    @Test
    void theCacheForgetsTheOldestWhenFull() {
        ReplayCache cache = new ReplayCache(660, 2, () -> 0L);
        cache.remember("a");
        cache.remember("b");
        cache.remember("c");
        assertEquals(2, cache.size());
        assertFalse(cache.remember("c"));
        assertTrue(cache.remember("a"));
    }

    @Test
    void parsesSecretsAndDigests() {
        assertEquals(List.of("new", "old"), Signing.parseSecrets(" new , old,,"));
        assertEquals(List.of(), Signing.parseSecrets(null));
        assertEquals(List.of("ab", "12"), Signing.v2Digests("v2=ab, v3=cd, junk, v2=, =ef, v2 = 12"));
    }
}
