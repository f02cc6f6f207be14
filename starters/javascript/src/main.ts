/**
 * Starts the bot: `node dist/src/main.js [--port N] [--host H] [--secret S] [--path-prefix P]`.
 *
 * The port comes from `--port`, else the PORT environment variable, else 8000 (0: any free
 * port; the address is printed). The secret comes from `--secret`, else BIGTWO_SECRET
 * (several: comma-separated, e.g. `new,old` while you switch after a rotation).
 */
import { parseArgs } from "node:util";
import type { AddressInfo } from "node:net";

import { createBotServer } from "./server.js";
import { parseSecrets } from "./signing.js";
import { BOT, choose } from "./strategy.js";

const DEFAULT_PORT = 8000;

function fail(message: string): never {
  console.error(`${BOT.name}: ${message}`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    port: { type: "string" },
    host: { type: "string", default: process.env["HOST"] ?? "127.0.0.1" },
    secret: { type: "string", default: process.env["BIGTWO_SECRET"] ?? "" },
    "path-prefix": { type: "string", default: "" },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (values.help) {
  console.log(
    "usage: node dist/src/main.js [--port N] [--host H] [--secret S] [--path-prefix P]\n" +
      "  --port         port to listen on (default: $PORT, else 8000; 0: any free port)\n" +
      "  --host         address to listen on (default: $HOST, else 127.0.0.1)\n" +
      "  --secret       the arena's signing secret(s), comma-separated (default: $BIGTWO_SECRET)\n" +
      "  --path-prefix  serve the endpoints under this path only",
  );
  process.exit(0);
}

const portText = values.port ?? process.env["PORT"] ?? String(DEFAULT_PORT);
const port = /^[0-9]+$/.test(portText) ? Number(portText) : NaN;
if (!(port >= 0 && port <= 65535)) fail(`not a port: ${JSON.stringify(portText)}`);

const secrets = parseSecrets(values.secret);
const server = createBotServer({
  ...BOT,
  choose,
  secrets,
  pathPrefix: values["path-prefix"] ?? "",
});
server.on("error", (error) => fail(error.message));
server.listen(port, values.host, () => {
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const checking = secrets.length > 0 ? "verifying signatures" : "not checking signatures";
  console.error(`${BOT.name} listening on http://${host}:${address.port}${values["path-prefix"] ? "/" + values["path-prefix"].replace(/^\/+|\/+$/g, "") : ""} (${checking})`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
  });
}
