package bigtwo.starter;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Starts the bot: {@code java -jar build/bigtwo-starter.jar [--port N] [--host H] [--secret S]
 * [--path-prefix P]}.
 *
 * <p>The port comes from {@code --port}, else the PORT environment variable, else 8000 (0: any
 * free port; the address is printed). The secret comes from {@code --secret}, else
 * BIGTWO_SECRET (several: comma-separated, e.g. {@code new,old} while you switch after a
 * rotation).
 */
public final class Main {
    private static final String USAGE = String.join("\n",
            "usage: java -jar bigtwo-starter.jar [--port N] [--host H] [--secret S] [--path-prefix P]",
            "  --port         port to listen on (default: $PORT, else 8000; 0: any free port)",
            "  --host         address to listen on (default: $HOST, else 127.0.0.1)",
            "  --secret       the arena's signing secret(s), comma-separated (default: $BIGTWO_SECRET)",
            "  --path-prefix  serve the endpoints under this path only");

    private Main() {}

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    private static void fail(String message) {
        System.err.println(Strategy.NAME + ": " + message);
        System.exit(2);
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        String port = env("PORT", "8000");
        String host = env("HOST", "127.0.0.1");
        String secret = env("BIGTWO_SECRET", "");
        String prefix = "";
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String name = arg.contains("=") ? arg.substring(0, arg.indexOf('=')) : arg;
            if (name.equals("-h") || name.equals("--help")) {
                System.out.println(USAGE);
                return;
            }
            if (!List.of("--port", "--host", "--secret", "--path-prefix").contains(name)) {
                fail("unknown option " + arg + "\n" + USAGE);
            }
            String value;
            if (arg.contains("=")) {
                value = arg.substring(arg.indexOf('=') + 1);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                fail(arg + " needs a value");
                return;
            }
            switch (name) {
                case "--port" -> port = value;
                case "--host" -> host = value;
                case "--secret" -> secret = value;
                default -> prefix = value;
            }
        }
        int portNumber = -1;
        if (port.matches("[0-9]{1,5}")) {
            portNumber = Integer.parseInt(port);
        }
        if (portNumber < 0 || portNumber > 65535) {
            fail("not a port: \"" + port + "\"");
        }
        List<String> secrets = Signing.parseSecrets(secret);
        BotServer bot = BotServer.start(new InetSocketAddress(host, portNumber),
                BotServer.Options.defaults(secrets, prefix));
        String shown = host.contains(":") ? "[" + host + "]" : host;
        System.err.println(Strategy.NAME + " listening on http://" + shown + ":" + bot.port()
                + bot.prefix() + " ("
                + (secrets.isEmpty() ? "not checking signatures" : "verifying signatures") + ")");
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            bot.stop();
            stopped.countDown();
        }));
        stopped.await();
    }
}
