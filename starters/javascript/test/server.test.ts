import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";

import type { MoveRequest } from "../src/protocol.js";
import { createBotServer, type BotOptions } from "../src/server.js";
import { signV2 } from "../src/signing.js";
import { BOT, choose } from "../src/strategy.js";

const SECRET = "DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs";
/** A real /move request (the arena's `python -m referee protocol-example`). */
const MOVE: MoveRequest = JSON.parse(
  readFileSync(new URL("../../test/fixtures/move-request.json", import.meta.url), "utf8"),
);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  data: Record<string, unknown>;
}

let counter = 0;
function requestId(): string {
  counter += 1;
  return counter.toString(16).padStart(32, "0");
}

function signed(method: string, target: string, body: Buffer, id = requestId()): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return {
    "X-BigTwo-Timestamp": timestamp,
    "X-BigTwo-Request-Id": id,
    "X-BigTwo-Signatures": `v2=${signV2(SECRET, method, target, timestamp, id, body)}`,
  };
}

class Bot {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private port = 0;
  readonly server;

  constructor(options: Partial<BotOptions> = {}) {
    this.server = createBotServer({ ...BOT, choose, ...options });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  call(method: string, target: string, body: Buffer | string = "", headers: Record<string, string> = {}): Promise<Answer> {
    const payload = typeof body === "string" ? Buffer.from(body, "utf8") : body;
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: "127.0.0.1",
          port: this.port,
          method,
          path: target,
          agent: this.agent,
          headers: { "Content-Type": "application/json", "Content-Length": payload.length, ...headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            resolve({ status: res.statusCode ?? 0, headers: res.headers, data: text ? JSON.parse(text) : {} });
          });
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  signedCall(method: string, target: string, body: Buffer | string = "", id?: string): Promise<Answer> {
    const payload = typeof body === "string" ? Buffer.from(body, "utf8") : body;
    return this.call(method, target, payload, signed(method, target, payload, id));
  }
}

describe("a bot with a secret", () => {
  const bot = new Bot({ secrets: ["old-secret", SECRET] });
  before(() => bot.start());
  after(() => bot.stop());

  it("describes itself on a signed GET /", async () => {
    const got = await bot.signedCall("GET", "/");
    assert.equal(got.status, 200);
    assert.deepEqual(got.data, { protocol: 1, ...BOT });
  });

  it("answers a signed /move with the first legal move and echoes the turn", async () => {
    const got = await bot.signedCall("POST", "/move", JSON.stringify(MOVE));
    assert.equal(got.status, 200);
    assert.equal(got.headers["content-type"], "application/json");
    const ids = MOVE.legal_moves.map((m) => m.id);
    assert.ok(ids.includes(got.data["move"] as string));
    assert.equal(got.data["move"], ids[0]);
    assert.equal(got.data["turn"], MOVE.turn);
  });

  it("answers /start and /end with an empty object", async () => {
    for (const path of ["/start", "/end"]) {
      const got = await bot.signedCall("POST", path, JSON.stringify({ protocol: 1, type: path.slice(1) }));
      assert.equal(got.status, 200, path);
      assert.deepEqual(got.data, {});
    }
  });

  it("refuses a replayed request", async () => {
    const id = requestId();
    const body = JSON.stringify(MOVE);
    const first = await bot.signedCall("POST", "/move", body, id);
    assert.equal(first.status, 200);
    const again = await bot.signedCall("POST", "/move", body, id);
    assert.equal(again.status, 401);
    assert.equal(again.data["reason"], "replayed");
    assert.equal(typeof again.data["error"], "string");
  });

  it("refuses unsigned and wrongly signed requests", async () => {
    const unsigned = await bot.call("POST", "/move", JSON.stringify(MOVE));
    assert.equal(unsigned.status, 401);
    assert.equal(unsigned.data["reason"], "signature_missing");
    const body = Buffer.from(JSON.stringify(MOVE), "utf8");
    const elsewhere = await bot.call("POST", "/move", body, signed("POST", "/end", body));
    assert.equal(elsewhere.status, 401);
    assert.equal(elsewhere.data["reason"], "bad_signature");
  });

  it("answers malformed JSON with 400", async () => {
    for (const body of ["{not json", "[1, 2]", "null", "\"move\"", Buffer.from([0x7b, 0xff, 0x7d])]) {
      const got = await bot.signedCall("POST", "/move", body);
      assert.equal(got.status, 400, String(body));
      assert.equal(typeof got.data["error"], "string");
    }
    const noMoves = await bot.signedCall("POST", "/move", JSON.stringify({ ...MOVE, legal_moves: [] }));
    assert.equal(noMoves.status, 400);
  });

  it("answers 404 on another path and 405 on another method", async () => {
    assert.equal((await bot.signedCall("POST", "/nowhere", "{}")).status, 404);
    assert.equal((await bot.signedCall("POST", "/", "{}")).status, 405);
    assert.equal((await bot.signedCall("GET", "/move")).status, 405);
  });
});

describe("a bot without a secret", () => {
  const bot = new Bot({
    choose: () => {
      throw new TypeError("a bug in the strategy");
    },
    pathPrefix: "/s3cr3t",
  });
  before(() => bot.start());
  after(() => bot.stop());

  it("answers unsigned requests under its path prefix only", async () => {
    assert.equal((await bot.call("GET", "/s3cr3t")).status, 200);
    assert.equal((await bot.call("GET", "/")).status, 404);
  });

  it("plays the first legal move when the strategy throws", async () => {
    const got = await bot.call("POST", "/s3cr3t/move?key=x", JSON.stringify(MOVE));
    assert.equal(got.status, 200);
    assert.equal(got.data["move"], MOVE.legal_moves[0]?.id);
    assert.equal(got.data["say"], "fallback: TypeError");
  });
});

describe("a bot with a small body limit", () => {
  const bot = new Bot({ maxBodyBytes: 64 });
  before(() => bot.start());
  after(() => bot.stop());

  it("refuses a body over the limit with 413", async () => {
    const got = await bot.call("POST", "/move", Buffer.alloc(65, 0x20));
    assert.equal(got.status, 413);
    assert.equal(got.data["error"], "body too large");
  });
});
