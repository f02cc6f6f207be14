package bigtwo.starter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import bigtwo.starter.Protocol.MoveRequest;
import bigtwo.starter.Strategy.Choice;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class BotServerTest {
    static final String SECRET = SigningTest.SECRET;
    static final AtomicLong COUNTER = new AtomicLong();
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    BotServer bot;

    record Reply(int status, String contentType, JsonObject data) {}

    @AfterEach
    void stop() {
        if (bot != null) {
            bot.stop();
        }
    }

    /** A real /move request (the arena's {@code python -m referee protocol-example}). */
    static byte[] moveBody() throws IOException {
        try (InputStream in = BotServerTest.class.getResourceAsStream("/move-request.json")) {
            return in.readAllBytes();
        }
    }

    static MoveRequest moveRequest() throws Exception {
        return Json.read(Json.parseObject(moveBody()), MoveRequest.class);
    }

    BotServer start(BotServer.Options options) throws IOException {
        bot = BotServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), options);
        return bot;
    }

    static String requestId() {
        return String.format("%032x", COUNTER.incrementAndGet());
    }

    static Map<String, String> signed(String method, String target, byte[] body, String id) {
        String stamp = String.valueOf(System.currentTimeMillis() / 1000);
        return Map.of(Signing.TIMESTAMP_HEADER, stamp, Signing.REQUEST_ID_HEADER, id,
                Signing.SIGNATURES_HEADER, "v2=" + Signing.signV2(SECRET, method, target, stamp, id, body));
    }

    Reply call(String method, String target, byte[] body, Map<String, String> headers)
            throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + bot.port() + target))
                .method(method, body.length == 0 ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofByteArray(body))
                .header("Content-Type", "application/json");
        headers.forEach(request::header);
        HttpResponse<String> response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        JsonObject data = response.body().isEmpty() ? new JsonObject()
                : Json.parseObject(response.body().getBytes(StandardCharsets.UTF_8));
        return new Reply(response.statusCode(),
                response.headers().firstValue("Content-Type").orElse(""), data);
    }

    Reply signedCall(String method, String target, byte[] body) throws Exception {
        return call(method, target, body, signed(method, target, body, requestId()));
    }

    static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void describesItselfOnASignedGet() throws Exception {
        start(BotServer.Options.defaults(List.of("old-secret", SECRET), ""));
        Reply got = signedCall("GET", "/", new byte[0]);
        assertEquals(200, got.status());
        assertEquals(1, got.data().get("protocol").getAsInt());
        assertEquals(Strategy.NAME, got.data().get("name").getAsString());
        assertEquals(Strategy.AUTHOR, got.data().get("author").getAsString());
        assertEquals(Strategy.VERSION, got.data().get("version").getAsString());
    }

    @Test
    void answersAMoveWithTheFirstLegalId() throws Exception {
        start(BotServer.Options.defaults(List.of(SECRET), ""));
        MoveRequest request = moveRequest();
        Reply got = signedCall("POST", "/move", moveBody());
        assertEquals(200, got.status());
        assertEquals("application/json", got.contentType());
        assertEquals(request.legalMoves().get(0).id(), got.data().get("move").getAsString());
        assertEquals(request.turn(), got.data().get("turn").getAsInt());
        assertTrue(!got.data().has("say"));
    }

    @Test
    void readsEveryFieldOfARealRequest() throws Exception {
        MoveRequest request = moveRequest();
        assertEquals("standard", request.rules().name());
        assertEquals("DCHS", request.rules().options().get("suit_order").getAsString());
        assertEquals("play", request.phase());
        assertEquals(request.turn(), request.history().size());
        assertTrue(request.hand().size() > 0);
    }

    @Test
    void startAndEndAnswerAnEmptyObject() throws Exception {
        start(BotServer.Options.defaults(List.of(SECRET), ""));
        for (String path : List.of("/start", "/end")) {
            Reply got = signedCall("POST", path, utf8("{\"protocol\":1,\"type\":\"x\",\"max_strikes\":null}"));
            assertEquals(200, got.status(), path);
            assertEquals(0, got.data().size(), path);
        }
    }

    @Test
    void refusesAReplayedRequest() throws Exception {
        start(BotServer.Options.defaults(List.of(SECRET), ""));
        byte[] body = moveBody();
        Map<String, String> headers = signed("POST", "/move", body, requestId());
        assertEquals(200, call("POST", "/move", body, headers).status());
        Reply again = call("POST", "/move", body, headers);
        assertEquals(401, again.status());
        assertEquals("replayed", again.data().get("reason").getAsString());
        assertTrue(again.data().has("error"));
    }

    @Test
    void refusesUnsignedAndWronglySignedRequests() throws Exception {
        start(BotServer.Options.defaults(List.of(SECRET), ""));
        byte[] body = moveBody();
        Reply unsigned = call("POST", "/move", body, Map.of());
        assertEquals(401, unsigned.status());
        assertEquals("signature_missing", unsigned.data().get("reason").getAsString());
        Reply elsewhere = call("POST", "/move", body, signed("POST", "/end", body, requestId()));
        assertEquals(401, elsewhere.status());
        assertEquals("bad_signature", elsewhere.data().get("reason").getAsString());
    }

    @Test
    void malformedJsonIs400() throws Exception {
        start(BotServer.Options.defaults(List.of(SECRET), ""));
        List<byte[]> bodies = List.of(utf8("{not json"), utf8("[1, 2]"), utf8("null"),
                utf8("\"move\""), new byte[] {0x7b, (byte) 0xff, 0x7d}, utf8("{\"a\": NaN}"),
                utf8("{} {}"), utf8("{'a': 1}"), utf8("{\"legal_moves\": \"3D\"}"),
                utf8("{\"legal_moves\": []}"), utf8("{\"legal_moves\": [{\"cards\": []}]}"));
        for (byte[] body : bodies) {
            Reply got = signedCall("POST", "/move", body);
            String shown = new String(body, StandardCharsets.UTF_8);
            assertEquals(400, got.status(), shown);
            assertTrue(got.data().has("error"), shown);
        }
    }

    @Test
    void aBodyOverTheLimitIs413() throws Exception {
        start(BotServer.Options.defaults(List.of(), "").withMaxBody(64));
        assertEquals(413, call("POST", "/move", " ".repeat(65).getBytes(StandardCharsets.UTF_8), Map.of()).status());
    }

    @Test
    void otherPathsAndMethods() throws Exception {
        start(BotServer.Options.defaults(List.of(SECRET), ""));
        assertEquals(404, signedCall("POST", "/nowhere", utf8("{}")).status());
        assertEquals(405, signedCall("POST", "/", utf8("{}")).status());
        assertEquals(405, signedCall("GET", "/move", new byte[0]).status());
    }

    @Test
    void pathPrefixAndStrategyFallback() throws Exception {
        start(BotServer.Options.defaults(List.of(), "/s3cr3t").withChooser(request -> {
            throw new IllegalStateException("a bug in the strategy");
        }));
        assertEquals(200, call("GET", "/s3cr3t", new byte[0], Map.of()).status());
        assertEquals(404, call("GET", "/", new byte[0], Map.of()).status());
        Reply got = call("POST", "/s3cr3t/move?key=x", moveBody(), Map.of());
        assertEquals(200, got.status());
        assertEquals(moveRequest().legalMoves().get(0).id(), got.data().get("move").getAsString());
        assertEquals("fallback: IllegalStateException", got.data().get("say").getAsString());
    }

    @Test
    void anUnlistedMoveFallsBackToTheFirstLegalMove() throws Exception {
        start(BotServer.Options.defaults(List.of(), "").withChooser(request -> Choice.of("2S-2H")));
        Reply got = call("POST", "/move", moveBody(), Map.of());
        assertEquals(moveRequest().legalMoves().get(0).id(), got.data().get("move").getAsString());
    }
}
