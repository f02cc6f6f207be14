package main

// Request signing, version 2: how the bot knows a request comes from the arena, once.
//
// The arena signs every request with the bot's own secret:
//
//	X-BigTwo-Timestamp: <unix seconds>
//	X-BigTwo-Request-Id: <32 lowercase hex characters, random per request>
//	X-BigTwo-Signatures: v2=<hex HMAC-SHA256(secret, message)>[, v2=<hex> ...]
//
//	message = "v2\n" METHOD "\n" TARGET "\n" TIMESTAMP "\n" REQUEST_ID "\n" BODY
//
// TARGET is the request target as it stands on the request line (path and query), BODY the
// exact body bytes, and the HMAC key the secret's characters themselves. A request is
// accepted when any v2 entry verifies under any of the bot's secrets (several during a
// rotation), its timestamp is within 300 s of the bot's clock, and its request id was not
// accepted before: ids are remembered for longer than a timestamp stays acceptable, so a
// recorded request cannot be played again. Entries of other versions are ignored.

import (
	"container/list"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	TimestampHeader  = "X-BigTwo-Timestamp"
	RequestIDHeader  = "X-BigTwo-Request-Id"
	SignaturesHeader = "X-BigTwo-Signatures"

	// MaxSkew is how far a request's timestamp may be from this bot's clock, either way.
	MaxSkew = 300 * time.Second
	// ReplayWindow is how long an accepted request id is remembered: longer than any
	// timestamp stays acceptable.
	ReplayWindow = 2*MaxSkew + 60*time.Second
	// ReplayCacheMax is how many request ids are remembered at most (only ids of correctly
	// signed requests are stored, so strangers cannot fill the cache).
	ReplayCacheMax = 200_000
)

// Refusal says why a request was refused; Reason uses the same words as the arena's
// referee/wire/signing.py: signature_missing, bad_timestamp, stale_timestamp,
// bad_request_id, bad_signature, replayed.
type Refusal struct {
	Reason  string
	Message string
}

// SignedHeaders are the signature headers of one request ("" when absent).
type SignedHeaders struct {
	Timestamp  string
	RequestID  string
	Signatures string
}

// V2Message is the exact bytes a version 2 signature covers.
func V2Message(method, target, timestamp, requestID string, body []byte) []byte {
	head := "v2\n" + strings.ToUpper(method) + "\n" + target + "\n" + timestamp + "\n" + requestID + "\n"
	return append([]byte(head), body...)
}

// SignV2 is the hex HMAC-SHA256 of V2Message under secret.
func SignV2(secret, method, target, timestamp, requestID string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(V2Message(method, target, timestamp, requestID, body))
	return hex.EncodeToString(mac.Sum(nil))
}

// ParseSecrets splits a secret setting: one secret or a comma-separated list ("new,old").
func ParseSecrets(value string) []string {
	var out []string
	for _, s := range strings.Split(value, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// V2Digests is the v2 digests of an X-BigTwo-Signatures value (other versions are ignored).
func V2Digests(value string) []string {
	var out []string
	for _, entry := range strings.Split(value, ",") {
		version, digest, found := strings.Cut(entry, "=")
		version, digest = strings.TrimSpace(version), strings.TrimSpace(digest)
		if found && version == "v2" && digest != "" {
			out = append(out, digest)
		}
	}
	return out
}

// ReplayCache remembers the request ids this bot accepted in the last ReplayWindow. It is
// safe for concurrent use; the oldest ids are forgotten first.
type ReplayCache struct {
	mu         sync.Mutex
	window     time.Duration
	maxEntries int
	now        func() time.Time
	order      *list.List // of replayEntry, oldest first
	seen       map[string]*list.Element
}

type replayEntry struct {
	id string
	at time.Time
}

// NewReplayCache makes a cache; now is the clock (time.Now, whose monotonic reading is used).
func NewReplayCache(window time.Duration, maxEntries int, now func() time.Time) *ReplayCache {
	return &ReplayCache{window: window, maxEntries: maxEntries, now: now,
		order: list.New(), seen: make(map[string]*list.Element)}
}

// Len is the number of ids remembered.
func (c *ReplayCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Remember records id; false when it was already accepted within the window.
func (c *ReplayCache) Remember(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for front := c.order.Front(); front != nil; front = c.order.Front() {
		oldest := front.Value.(replayEntry)
		if now.Sub(oldest.at) <= c.window && c.order.Len() < c.maxEntries {
			break
		}
		c.order.Remove(front)
		delete(c.seen, oldest.id)
	}
	if _, ok := c.seen[id]; ok {
		return false
	}
	c.seen[id] = c.order.PushBack(replayEntry{id: id, at: now})
	return true
}

var (
	timestampPattern = regexp.MustCompile(`^[0-9]{1,12}$`)
	requestIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// VerifyV2 says why a request fails version 2 verification, or returns nil when it is
// accepted. The request id is remembered in cache (if any) only once the signature verified.
func VerifyV2(secrets []string, method, target string, body []byte, h SignedHeaders,
	cache *ReplayCache, now time.Time) *Refusal {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{TimestampHeader, h.Timestamp}, {RequestIDHeader, h.RequestID}, {SignaturesHeader, h.Signatures},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return &Refusal{"signature_missing",
			"this bot only answers signed requests: " + strings.Join(missing, " and ") + " missing"}
	}
	if !timestampPattern.MatchString(h.Timestamp) {
		return &Refusal{"bad_timestamp", TimestampHeader + " must be unix seconds (a decimal integer)"}
	}
	stamp, _ := strconv.ParseInt(h.Timestamp, 10, 64)
	skew := float64(now.UnixNano())/1e9 - float64(stamp)
	if math.Abs(skew) > MaxSkew.Seconds() {
		direction := "ahead of"
		if skew > 0 {
			direction = "behind"
		}
		return &Refusal{"stale_timestamp", fmt.Sprintf(
			"%s is %.0f s %s this bot's clock (at most %.0f s accepted): a replayed request, "+
				"or a clock that needs fixing", TimestampHeader, math.Abs(skew), direction, MaxSkew.Seconds())}
	}
	if !requestIDPattern.MatchString(h.RequestID) {
		return &Refusal{"bad_request_id", RequestIDHeader + " must be 32 lowercase hex characters"}
	}
	offered := V2Digests(h.Signatures)
	if len(offered) == 0 {
		return &Refusal{"signature_missing", SignaturesHeader + " has no v2 signature"}
	}
	ok := false
	for _, secret := range secrets {
		expected := []byte(SignV2(secret, method, target, h.Timestamp, h.RequestID, body))
		for _, digest := range offered {
			// Every pair is compared (no early exit), each in constant time.
			if hmac.Equal(expected, []byte(digest)) {
				ok = true
			}
		}
	}
	if !ok {
		return &Refusal{"bad_signature", SignaturesHeader + " does not match: the request was not " +
			"signed with this bot's secret (rotated? set the new one), was changed on the way, or " +
			"was sent to another path or with another method than it was signed for"}
	}
	if cache != nil && !cache.Remember(h.RequestID) {
		return &Refusal{"replayed", RequestIDHeader + " " + h.RequestID + " was already accepted: a replayed request"}
	}
	return nil
}
