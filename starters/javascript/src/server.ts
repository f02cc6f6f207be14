/**
 * The bot's web server: `GET /`, `POST /start`, `/move` and `/end` as docs/protocol.md says,
 * with node:http only.
 *
 * - Every request is verified (signing.ts) when the bot has a secret; refused ones get 401
 *   with `{"error", "reason"}`.
 * - A body over `maxBodyBytes` gets 413, a body that is not a JSON object (or a /move without
 *   legal moves) 400 with `{"error"}`, another path 404, another method 405.
 * - Connections are kept alive (the arena reuses one per bot for a whole match).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

import { PROTOCOL, type EndRequest, type MoveAnswer, type MoveRequest, type StartRequest } from "./protocol.js";
import {
  REQUEST_ID_HEADER,
  ReplayCache,
  SIGNATURES_HEADER,
  TIMESTAMP_HEADER,
  verifyV2,
} from "./signing.js";
import type { Choice } from "./strategy.js";

/** Largest request body read (the arena's largest /move bodies are a few tens of KiB). */
export const MAX_BODY_BYTES = 1 << 20;
/** How long an idle kept-alive connection stays open. */
export const IDLE_TIMEOUT_MS = 120_000;
/** The longest `say` the arena keeps. */
const MAX_SAY = 140;

export interface BotOptions {
  name: string;
  author: string;
  version: string;
  choose: (request: MoveRequest) => Choice | Promise<Choice>;
  /** The arena's signing secrets for this bot; none: nothing is checked. */
  secrets?: readonly string[];
  /** Serve the endpoints under this path only (`/s3cr3t` serves `/s3cr3t/move`). */
  pathPrefix?: string;
  onStart?: (request: StartRequest) => void;
  onEnd?: (request: EndRequest) => void;
  maxBodyBytes?: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, payload: unknown, close = false): void {
  const body = Buffer.from(JSON.stringify(payload), "utf8");
  const headers: Record<string, string | number> = {
    "Content-Type": "application/json",
    "Content-Length": body.length,
  };
  if (close) headers["Connection"] = "close";
  res.writeHead(status, headers);
  res.end(body);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** The whole body, or an HttpError(413) as soon as it is known to be too large. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > max) return Promise.reject(new HttpError(413, "body too large"));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.pause();
        reject(new HttpError(413, "body too large"));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The body as a JSON object, or an HttpError(400). */
function parseObject(body: Buffer): Record<string, unknown> {
  let data: unknown;
  try {
    data = JSON.parse(UTF8.decode(body));
  } catch {
    throw new HttpError(400, "the body must be a JSON object");
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new HttpError(400, "the body must be a JSON object");
  }
  return data as Record<string, unknown>;
}

/** The listed legal move ids of a /move body, or an HttpError(400). */
function legalIds(data: Record<string, unknown>): string[] {
  const moves = data["legal_moves"];
  if (!Array.isArray(moves) || moves.length === 0) {
    throw new HttpError(400, "a /move body needs a non-empty legal_moves list");
  }
  const ids = moves
    .map((m: unknown) => (typeof m === "object" && m !== null ? (m as { id?: unknown }).id : undefined))
    .filter((id): id is string => typeof id === "string");
  if (ids.length === 0) throw new HttpError(400, "legal_moves holds no move ids");
  return ids;
}

/**
 * The /move answer: the strategy's move, or the first legal move (with a `say` that explains)
 * when the strategy throws or names a move that is not listed.
 */
export async function answerFor(
  choose: BotOptions["choose"],
  request: MoveRequest,
  ids: readonly string[],
): Promise<MoveAnswer> {
  let move: string;
  let say: string | undefined;
  try {
    const got = await choose(request);
    move = typeof got === "string" ? got : got.move;
    say = typeof got === "string" ? undefined : got.say;
    if (!ids.includes(move)) throw new Error(`choose returned ${JSON.stringify(move)}, which is not a listed move id`);
  } catch (error) {
    console.error(error);
    move = ids[0] as string;
    say = `fallback: ${error instanceof Error ? error.name : "error"}`;
  }
  const answer: MoveAnswer = { move };
  if (typeof request.turn === "number") answer.turn = request.turn;
  if (say) answer.say = String(say).slice(0, MAX_SAY);
  return answer;
}

/** The protocol path asked for (`/`, `/move`, ...), or null outside the prefix. */
function endpoint(target: string, prefix: string): string | null {
  const path = target.split("?", 1)[0] ?? "/";
  if (!prefix) return path;
  if (path === prefix) return "/";
  return path.startsWith(prefix + "/") ? path.slice(prefix.length) : null;
}

export function createBotServer(options: BotOptions): Server {
  const secrets = options.secrets ?? [];
  const replays = new ReplayCache();
  const max = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const trimmed = (options.pathPrefix ?? "").replace(/^\/+|\/+$/g, "");
  const prefix = trimmed ? "/" + trimmed : "";

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = (req.method ?? "GET").toUpperCase();
    const target = req.url ?? "/";
    const body = await readBody(req, max);
    if (secrets.length > 0) {
      const refusal = verifyV2(secrets, method, target, body, {
        timestamp: header(req, TIMESTAMP_HEADER),
        requestId: header(req, REQUEST_ID_HEADER),
        signatures: header(req, SIGNATURES_HEADER),
      }, replays);
      if (refusal) {
        send(res, 401, { error: refusal.message, reason: refusal.reason });
        return;
      }
    }
    const path = endpoint(target, prefix);
    const known = path === "/" || path === "/start" || path === "/move" || path === "/end";
    if (!known) throw new HttpError(404, "not found");
    if (path === "/") {
      if (method !== "GET" && method !== "HEAD") throw new HttpError(405, "use GET /");
      send(res, 200, { protocol: PROTOCOL, name: options.name, author: options.author, version: options.version });
      return;
    }
    if (method !== "POST") throw new HttpError(405, `use POST ${path}`);
    const data = parseObject(body);
    if (path === "/move") {
      const ids = legalIds(data);
      send(res, 200, await answerFor(options.choose, data as unknown as MoveRequest, ids));
      return;
    }
    const hook = path === "/start" ? options.onStart : options.onEnd;
    try {
      hook?.(data as never);
    } catch (error) {
      console.error(error); // a hook's bug must not fail the request
    }
    send(res, 200, {});
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof HttpError) {
        send(res, error.status, { error: error.message }, error.status === 413);
      } else {
        console.error(error);
        send(res, 500, { error: "internal error" });
      }
    });
  });
  server.keepAliveTimeout = IDLE_TIMEOUT_MS;
  server.headersTimeout = IDLE_TIMEOUT_MS + 5_000;
  return server;
}
