/**
 * Request signing, version 2: how the bot knows a request comes from the arena, once.
 *
 * The arena signs every request with the bot's own secret:
 *
 *     X-BigTwo-Timestamp: <unix seconds>
 *     X-BigTwo-Request-Id: <32 lowercase hex characters, random per request>
 *     X-BigTwo-Signatures: v2=<hex HMAC-SHA256(secret, message)>[, v2=<hex> ...]
 *
 *     message = "v2\n" METHOD "\n" TARGET "\n" TIMESTAMP "\n" REQUEST_ID "\n" BODY
 *
 * TARGET is the request target as it stands on the request line (path and query), BODY the
 * exact body bytes, and the HMAC key the secret's characters themselves. A request is accepted
 * when any `v2` entry verifies under any of the bot's secrets (several during a rotation),
 * its timestamp is within 300 s of the bot's clock, and its request id was not accepted
 * before: ids are remembered for longer than a timestamp stays acceptable, so a recorded
 * request cannot be played again. Entries of other versions are ignored.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export const TIMESTAMP_HEADER = "x-bigtwo-timestamp";
export const REQUEST_ID_HEADER = "x-bigtwo-request-id";
export const SIGNATURES_HEADER = "x-bigtwo-signatures";

/** How far (seconds) a request's timestamp may be from this bot's clock, either way. */
export const MAX_SKEW_S = 300;
/** How long an accepted request id is remembered: longer than any timestamp stays fresh. */
export const REPLAY_WINDOW_S = 2 * MAX_SKEW_S + 60;
/** Request ids remembered at most (only ids of correctly signed requests are stored). */
export const REPLAY_CACHE_MAX = 200_000;

/** Why a request was refused: the same words as the arena's referee/wire/signing.py. */
export type RefusalReason =
  | "signature_missing"
  | "bad_timestamp"
  | "stale_timestamp"
  | "bad_request_id"
  | "bad_signature"
  | "replayed";

export interface Refusal {
  reason: RefusalReason;
  message: string;
}

/** The signature headers of one request, as received (undefined when absent). */
export interface SignedHeaders {
  timestamp: string | undefined;
  requestId: string | undefined;
  signatures: string | undefined;
}

/** The exact bytes a version 2 signature covers. */
export function v2Message(
  method: string,
  target: string,
  timestamp: string,
  requestId: string,
  body: Buffer,
): Buffer {
  const head = `v2\n${method.toUpperCase()}\n${target}\n${timestamp}\n${requestId}\n`;
  return Buffer.concat([Buffer.from(head, "utf8"), body]);
}

/** The hex HMAC-SHA256 of {@link v2Message} under `secret`. */
export function signV2(
  secret: string,
  method: string,
  target: string,
  timestamp: string,
  requestId: string,
  body: Buffer,
): string {
  return createHmac("sha256", Buffer.from(secret, "utf8"))
    .update(v2Message(method, target, timestamp, requestId, body))
    .digest("hex");
}

/** The secrets a setting names: one secret or a comma-separated list (`new,old`). */
export function parseSecrets(value: string | undefined): string[] {
  if (!value) return [];
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The `v2` digests of an `X-BigTwo-Signatures` value (other versions are ignored). */
export function v2Digests(value: string): string[] {
  const out: string[] = [];
  for (const entry of value.split(",")) {
    const at = entry.indexOf("=");
    if (at < 0) continue;
    const version = entry.slice(0, at).trim();
    const digest = entry.slice(at + 1).trim();
    if (version === "v2" && digest.length > 0) out.push(digest);
  }
  return out;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

const TIMESTAMP = /^[0-9]{1,12}$/;
const REQUEST_ID = /^[0-9a-f]{32}$/;

/**
 * The request ids this bot accepted in the last {@link REPLAY_WINDOW_S} seconds. A Map keeps
 * insertion order, so the oldest ids are the first ones and are forgotten first.
 */
export class ReplayCache {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly windowS: number = REPLAY_WINDOW_S,
    private readonly maxEntries: number = REPLAY_CACHE_MAX,
    private readonly clock: () => number = () => performance.now() / 1000,
  ) {}

  get size(): number {
    return this.seen.size;
  }

  /** Records `requestId`; false when it was already accepted within the window. */
  remember(requestId: string): boolean {
    const now = this.clock();
    for (const [id, at] of this.seen) {
      if (now - at <= this.windowS && this.seen.size < this.maxEntries) break;
      this.seen.delete(id);
    }
    if (this.seen.has(requestId)) return false;
    this.seen.set(requestId, now);
    return true;
  }
}

/**
 * Why a request fails version 2 verification, or null when it is accepted. The request id
 * is remembered in `cache` only once the signature verified, so strangers cannot fill it.
 */
export function verifyV2(
  secrets: readonly string[],
  method: string,
  target: string,
  body: Buffer,
  headers: SignedHeaders,
  cache: ReplayCache | null,
  nowS: number = Date.now() / 1000,
): Refusal | null {
  const { timestamp, requestId, signatures } = headers;
  if (!timestamp || !requestId || !signatures) {
    const missing = [
      ["X-BigTwo-Timestamp", timestamp],
      ["X-BigTwo-Request-Id", requestId],
      ["X-BigTwo-Signatures", signatures],
    ]
      .filter(([, v]) => !v)
      .map(([name]) => name)
      .join(" and ");
    return {
      reason: "signature_missing",
      message: `this bot only answers signed requests: ${missing} missing`,
    };
  }
  if (!TIMESTAMP.test(timestamp)) {
    return {
      reason: "bad_timestamp",
      message: "X-BigTwo-Timestamp must be unix seconds (a decimal integer)",
    };
  }
  const skew = nowS - Number(timestamp);
  if (Math.abs(skew) > MAX_SKEW_S) {
    return {
      reason: "stale_timestamp",
      message:
        `X-BigTwo-Timestamp is ${Math.abs(skew).toFixed(0)} s ` +
        `${skew > 0 ? "behind" : "ahead of"} this bot's clock (at most ${MAX_SKEW_S} s ` +
        "accepted): a replayed request, or a clock that needs fixing",
    };
  }
  if (!REQUEST_ID.test(requestId)) {
    return {
      reason: "bad_request_id",
      message: "X-BigTwo-Request-Id must be 32 lowercase hex characters",
    };
  }
  const offered = v2Digests(signatures);
  if (offered.length === 0) {
    return { reason: "signature_missing", message: "X-BigTwo-Signatures has no v2 signature" };
  }
  let ok = false;
  for (const secret of secrets) {
    const expected = signV2(secret, method, target, timestamp, requestId, body);
    for (const digest of offered) {
      // Every pair is compared (no early exit) in constant time.
      if (sameText(expected, digest)) ok = true;
    }
  }
  if (!ok) {
    return {
      reason: "bad_signature",
      message:
        "X-BigTwo-Signatures does not match: the request was not signed with this bot's " +
        "secret (rotated? set the new one), was changed on the way, or was sent to another " +
        "path or with another method than it was signed for",
    };
  }
  if (cache !== null && !cache.remember(requestId)) {
    return {
      reason: "replayed",
      message: `X-BigTwo-Request-Id ${requestId} was already accepted: a replayed request`,
    };
  }
  return null;
}
