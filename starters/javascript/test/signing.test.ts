import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { ReplayCache, parseSecrets, signV2, v2Digests, verifyV2, type SignedHeaders } from "../src/signing.js";

// The byte-exact vectors of the arena's docs (referee/wire/signing.py signs the same way).
const SECRET = "DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs";
const TIMESTAMP = "1767225600";
const START_BODY = Buffer.from('{"protocol":1,"type":"start","match_id":"1234","seat":2}', "utf8");
const START_ID = "0123456789abcdef0123456789abcdef";
const START_SIGNATURE = "f838a5484c04f5eec5692a45b07b3abf2942496bd4313ec1a05f1286e34c976b";
const GET_ID = "fedcba9876543210fedcba9876543210";
const GET_SIGNATURE = "9138c1b7c5c46d7a3588a027b26c054e0e76e353ac488664cf60697a22de66e8";
const NOW = Number(TIMESTAMP) + 5;

function headers(signatures: string, requestId = START_ID, timestamp = TIMESTAMP): SignedHeaders {
  return { timestamp, requestId, signatures };
}

function verifyStart(h: SignedHeaders, cache: ReplayCache | null = new ReplayCache(), secrets = [SECRET]) {
  return verifyV2(secrets, "POST", "/start", START_BODY, h, cache, NOW);
}

describe("signature vectors", () => {
  it("signs POST /start byte for byte", () => {
    assert.equal(signV2(SECRET, "POST", "/start", TIMESTAMP, START_ID, START_BODY), START_SIGNATURE);
  });
  it("signs GET / with an empty body byte for byte", () => {
    assert.equal(signV2(SECRET, "GET", "/", TIMESTAMP, GET_ID, Buffer.alloc(0)), GET_SIGNATURE);
  });
});

describe("verifyV2", () => {
  it("accepts the vector, once", () => {
    const cache = new ReplayCache();
    assert.equal(verifyStart(headers(`v2=${START_SIGNATURE}`), cache), null);
    assert.equal(verifyStart(headers(`v2=${START_SIGNATURE}`), cache)?.reason, "replayed");
  });
  it("refuses missing headers", () => {
    assert.equal(verifyStart({ timestamp: undefined, requestId: START_ID, signatures: `v2=${START_SIGNATURE}` })?.reason, "signature_missing");
    assert.equal(verifyStart({ timestamp: TIMESTAMP, requestId: undefined, signatures: `v2=${START_SIGNATURE}` })?.reason, "signature_missing");
    assert.equal(verifyStart({ timestamp: TIMESTAMP, requestId: START_ID, signatures: undefined })?.reason, "signature_missing");
    assert.equal(verifyStart(headers(`v9=${START_SIGNATURE}`))?.reason, "signature_missing");
  });
  it("refuses a timestamp that is not unix seconds", () => {
    for (const bad of ["-1", "1.5", "abc", "1234567890123", " 1767225600"]) {
      assert.equal(verifyStart(headers(`v2=${START_SIGNATURE}`, START_ID, bad))?.reason, "bad_timestamp", bad);
    }
  });
  it("refuses a stale timestamp either way", () => {
    const h = headers(`v2=${START_SIGNATURE}`);
    assert.equal(verifyV2([SECRET], "POST", "/start", START_BODY, h, null, Number(TIMESTAMP) + 301)?.reason, "stale_timestamp");
    assert.equal(verifyV2([SECRET], "POST", "/start", START_BODY, h, null, Number(TIMESTAMP) - 301)?.reason, "stale_timestamp");
    assert.equal(verifyV2([SECRET], "POST", "/start", START_BODY, h, null, Number(TIMESTAMP) + 300), null);
  });
  it("refuses a malformed request id", () => {
    for (const bad of [START_ID.toUpperCase(), START_ID.slice(1), START_ID + "0", "g".repeat(32)]) {
      assert.equal(verifyStart(headers(`v2=${START_SIGNATURE}`, bad))?.reason, "bad_request_id", bad);
    }
  });
  it("refuses another secret, another path, another method, another body", () => {
    const h = headers(`v2=${START_SIGNATURE}`);
    assert.equal(verifyStart(h, null, ["another-secret"])?.reason, "bad_signature");
    assert.equal(verifyV2([SECRET], "POST", "/end", START_BODY, h, null, NOW)?.reason, "bad_signature");
    assert.equal(verifyV2([SECRET], "PUT", "/start", START_BODY, h, null, NOW)?.reason, "bad_signature");
    assert.equal(verifyV2([SECRET], "POST", "/start", Buffer.from("{}"), h, null, NOW)?.reason, "bad_signature");
  });
  it("accepts any listed secret and any v2 entry, ignoring other versions", () => {
    assert.equal(verifyStart(headers(`v2=${START_SIGNATURE}`), null, ["old-secret", SECRET]), null);
    assert.equal(verifyStart(headers(`v3=zz, v2=${"0".repeat(64)},v2=${START_SIGNATURE}`)), null);
  });
  it("remembers an id only once its signature verified", () => {
    const cache = new ReplayCache();
    assert.equal(verifyStart(headers(`v2=${"0".repeat(64)}`), cache)?.reason, "bad_signature");
    assert.equal(cache.size, 0);
    assert.equal(verifyStart(headers(`v2=${START_SIGNATURE}`), cache), null);
  });
});

describe("ReplayCache", () => {
  it("forgets ids after the window", () => {
    let now = 0;
    const cache = new ReplayCache(660, 10, () => now);
    assert.equal(cache.remember("a"), true);
    now = 600;
    assert.equal(cache.remember("a"), false);
    now = 661;
    assert.equal(cache.remember("a"), true);
  });
  it("forgets the oldest ids first when full", () => {
    const cache = new ReplayCache(660, 2, () => 0);
    cache.remember("a");
    cache.remember("b");
    cache.remember("c");
    assert.equal(cache.size, 2);
    assert.equal(cache.remember("c"), false);
    assert.equal(cache.remember("a"), true);
  });
});

describe("parseSecrets and v2Digests", () => {
  it("splits comma-separated secrets", () => {
    assert.deepEqual(parseSecrets(" new , old,,"), ["new", "old"]);
    assert.deepEqual(parseSecrets(undefined), []);
  });
  it("keeps only well-formed v2 entries", () => {
    assert.deepEqual(v2Digests("v2=ab, v3=cd, junk, v2=, =ef, v2 = 12"), ["ab", "12"]);
  });
});
