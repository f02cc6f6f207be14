package bigtwo.starter;

import bigtwo.starter.Json.BadJson;
import bigtwo.starter.Protocol.DescribeAnswer;
import bigtwo.starter.Protocol.EndRequest;
import bigtwo.starter.Protocol.ErrorAnswer;
import bigtwo.starter.Protocol.LegalMove;
import bigtwo.starter.Protocol.MoveAnswer;
import bigtwo.starter.Protocol.MoveRequest;
import bigtwo.starter.Protocol.StartRequest;
import bigtwo.starter.Signing.Refusal;
import bigtwo.starter.Signing.SignedHeaders;
import bigtwo.starter.Strategy.Choice;
import com.google.gson.JsonObject;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;

/**
 * The bot's web server: {@code GET /}, {@code POST /start}, {@code /move} and {@code /end} as
 * docs/protocol.md says, on the JDK's {@code com.sun.net.httpserver}.
 *
 * <ul>
 *   <li>Every request is verified ({@link Signing}) when the bot has a secret; refused ones get
 *       401 with {@code {"error", "reason"}}.
 *   <li>A body over {@link #MAX_BODY} gets 413, a body that is not a JSON object (or a /move
 *       without legal moves) 400 with {@code {"error"}}, another path 404, another method 405.
 *   <li>Connections are kept alive (the arena reuses one per bot for a whole match), with
 *       Nagle's algorithm off.
 * </ul>
 */
public final class BotServer {
    /** Largest request body read (the arena's largest /move bodies are a few tens of KiB). */
    public static final int MAX_BODY = 1 << 20;
    /** How long an idle kept-alive connection stays open (seconds). */
    public static final int IDLE_TIMEOUT_S = 120;
    private static final int MAX_SAY = 140;

    static {
        // Read by the JDK's server when it starts: answers go out at once, and idle
        // connections stay open between the bot's turns.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        System.setProperty("sun.net.httpserver.idleInterval", String.valueOf(IDLE_TIMEOUT_S));
    }

    /** The strategy: a move for a request (it may throw). */
    @FunctionalInterface
    public interface Chooser {
        Choice choose(MoveRequest request) throws Exception;
    }

    /** Everything a bot server needs; see {@link #defaults}. */
    public record Options(
            String name, String author, String version, Chooser chooser, List<String> secrets,
            String pathPrefix, int maxBody, Consumer<StartRequest> onStart,
            Consumer<EndRequest> onEnd) {
        /** The bot of {@link Strategy}, with these secrets and path prefix. */
        public static Options defaults(List<String> secrets, String pathPrefix) {
            return new Options(Strategy.NAME, Strategy.AUTHOR, Strategy.VERSION, Strategy::choose,
                    secrets, pathPrefix, MAX_BODY, request -> {}, request -> {});
        }

        public Options withChooser(Chooser other) {
            return new Options(name, author, version, other, secrets, pathPrefix, maxBody, onStart,
                    onEnd);
        }

        public Options withMaxBody(int other) {
            return new Options(name, author, version, chooser, secrets, pathPrefix, other, onStart,
                    onEnd);
        }
    }

    private static final class HttpError extends Exception {
        private static final long serialVersionUID = 1L;
        final int status;

        HttpError(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    private final Options options;
    private final String prefix;
    private final ReplayCache replays = new ReplayCache();
    private final HttpServer server;
    private final ExecutorService executor;

    private BotServer(Options options, HttpServer server, ExecutorService executor) {
        this.options = options;
        String trimmed = options.pathPrefix() == null ? "" : options.pathPrefix().replaceAll("^/+|/+$", "");
        this.prefix = trimmed.isEmpty() ? "" : "/" + trimmed;
        this.server = server;
        this.executor = executor;
    }

    /** Binds {@code address} (port 0: any free port) and starts serving. */
    public static BotServer start(InetSocketAddress address, Options options) throws IOException {
        HttpServer server = HttpServer.create(address, 0);
        ExecutorService executor = Executors.newFixedThreadPool(16, runnable -> {
            Thread thread = new Thread(runnable, "bot-request");
            thread.setDaemon(true);
            return thread;
        });
        BotServer bot = new BotServer(options, server, executor);
        server.createContext("/", bot::handle);
        server.setExecutor(executor);
        server.start();
        return bot;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    /** The path prefix served ("" for none), e.g. "/s3cr3t". */
    public String prefix() {
        return prefix;
    }

    public void stop() {
        server.stop(0);
        executor.shutdownNow();
    }

    private void handle(HttpExchange exchange) throws IOException {
        try {
            respond(exchange);
        } catch (HttpError e) {
            send(exchange, e.status, new ErrorAnswer(e.getMessage(), null), e.status == 413);
        } catch (RuntimeException e) {
            e.printStackTrace();
            send(exchange, 500, new ErrorAnswer("internal error", null), false);
        } finally {
            exchange.close();
        }
    }

    private void respond(HttpExchange exchange) throws IOException, HttpError {
        String method = exchange.getRequestMethod().toUpperCase(Locale.ROOT);
        String target = exchange.getRequestURI().toString(); // as on the request line
        byte[] body = readBody(exchange);
        if (!options.secrets().isEmpty()) {
            var headers = exchange.getRequestHeaders();
            List<String> signatures = headers.get(Signing.SIGNATURES_HEADER);
            Optional<Refusal> refusal = Signing.verifyV2(options.secrets(), method, target, body,
                    new SignedHeaders(headers.getFirst(Signing.TIMESTAMP_HEADER),
                            headers.getFirst(Signing.REQUEST_ID_HEADER),
                            signatures == null ? null : String.join(", ", signatures)),
                    replays, System.currentTimeMillis() / 1000.0);
            if (refusal.isPresent()) {
                send(exchange, 401, new ErrorAnswer(refusal.get().message(), refusal.get().reason()),
                        false);
                return;
            }
        }
        String path = endpoint(exchange.getRequestURI().getRawPath());
        switch (path == null ? "" : path) {
            case "/" -> {
                if (!method.equals("GET") && !method.equals("HEAD")) {
                    throw new HttpError(405, "use GET /");
                }
                send(exchange, 200, new DescribeAnswer(Protocol.VERSION, options.name(),
                        options.author(), options.version()), false);
            }
            case "/start", "/move", "/end" -> {
                if (!method.equals("POST")) {
                    throw new HttpError(405, "use POST " + path);
                }
                send(exchange, 200, post(path, body), false);
            }
            default -> throw new HttpError(404, "not found");
        }
    }

    private Object post(String path, byte[] body) throws HttpError {
        try {
            JsonObject data = Json.parseObject(body);
            switch (path) {
                case "/move" -> {
                    return answer(Json.read(data, MoveRequest.class));
                }
                case "/start" -> options.onStart().accept(Json.read(data, StartRequest.class));
                default -> options.onEnd().accept(Json.read(data, EndRequest.class));
            }
            return new JsonObject();
        } catch (BadJson e) {
            throw new HttpError(400, e.getMessage());
        }
    }

    /**
     * The /move answer: the strategy's move, or the first legal move (with a {@code say} that
     * explains) when the strategy throws or names a move that is not listed.
     */
    MoveAnswer answer(MoveRequest request) throws HttpError {
        List<String> ids = new ArrayList<>();
        if (request.legalMoves() != null) {
            for (LegalMove move : request.legalMoves()) {
                if (move == null || move.id() == null) {
                    throw new HttpError(400, "every entry of legal_moves needs an id");
                }
                ids.add(move.id());
            }
        }
        if (ids.isEmpty()) {
            throw new HttpError(400, "a /move body needs a non-empty legal_moves list");
        }
        String move = ids.get(0);
        String say;
        try {
            Choice choice = options.chooser().choose(request);
            if (choice != null && ids.contains(choice.move())) {
                move = choice.move();
                say = choice.say();
            } else {
                System.err.println("strategy: choose returned "
                        + (choice == null ? "null" : "\"" + choice.move() + "\"")
                        + ", which is not a listed move id; playing the first legal move");
                say = "fallback: not a listed move id";
            }
        } catch (Exception e) {
            e.printStackTrace();
            say = "fallback: " + e.getClass().getSimpleName();
        }
        if (say != null && say.codePointCount(0, say.length()) > MAX_SAY) {
            say = say.substring(0, say.offsetByCodePoints(0, MAX_SAY));
        }
        return new MoveAnswer(move, request.turn(), say);
    }

    /** The protocol path asked for ("/", "/move", ...), or null outside the prefix. */
    private String endpoint(String path) {
        if (prefix.isEmpty()) {
            return path;
        }
        if (path.equals(prefix)) {
            return "/";
        }
        return path.startsWith(prefix + "/") ? path.substring(prefix.length()) : null;
    }

    private byte[] readBody(HttpExchange exchange) throws IOException, HttpError {
        int max = options.maxBody();
        String declared = exchange.getRequestHeaders().getFirst("Content-Length");
        if (declared != null) {
            try {
                if (Long.parseLong(declared.strip()) > max) {
                    throw new HttpError(413, "body too large");
                }
            } catch (NumberFormatException e) {
                throw new HttpError(400, "bad Content-Length");
            }
        }
        try (InputStream in = exchange.getRequestBody()) {
            byte[] body = in.readNBytes(max + 1);
            if (body.length > max) {
                throw new HttpError(413, "body too large");
            }
            return body;
        }
    }

    private static void send(HttpExchange exchange, int status, Object payload, boolean close)
            throws IOException {
        byte[] bytes = Json.GSON.toJson(payload).getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        if (close) {
            exchange.getResponseHeaders().set("Connection", "close");
        }
        if (exchange.getRequestMethod().equalsIgnoreCase("HEAD")) {
            exchange.sendResponseHeaders(status, -1);
            return;
        }
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }
}
