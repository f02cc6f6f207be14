package main

import (
	"strings"
	"testing"
	"time"
)

// The byte-exact vectors of the arena's docs (referee/wire/signing.py signs the same way).
const (
	secret         = "DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs"
	stamp          = "1767225600"
	startBody      = `{"protocol":1,"type":"start","match_id":"1234","seat":2}`
	startID        = "0123456789abcdef0123456789abcdef"
	startSignature = "f838a5484c04f5eec5692a45b07b3abf2942496bd4313ec1a05f1286e34c976b"
	getID          = "fedcba9876543210fedcba9876543210"
	getSignature   = "9138c1b7c5c46d7a3588a027b26c054e0e76e353ac488664cf60697a22de66e8"
)

var stampTime = time.Unix(1767225600, 0)

func TestSignatureVectors(t *testing.T) {
	if got := SignV2(secret, "POST", "/start", stamp, startID, []byte(startBody)); got != startSignature {
		t.Errorf("POST /start: got %s", got)
	}
	if got := SignV2(secret, "GET", "/", stamp, getID, nil); got != getSignature {
		t.Errorf("GET /: got %s", got)
	}
}

func verifyStart(h SignedHeaders, cache *ReplayCache, secrets ...string) *Refusal {
	if len(secrets) == 0 {
		secrets = []string{secret}
	}
	return VerifyV2(secrets, "POST", "/start", []byte(startBody), h, cache, stampTime.Add(5*time.Second))
}

func reason(r *Refusal) string {
	if r == nil {
		return "accepted"
	}
	return r.Reason
}

func good() SignedHeaders {
	return SignedHeaders{Timestamp: stamp, RequestID: startID, Signatures: "v2=" + startSignature}
}

func TestVerifyAcceptsOnceThenRefusesTheReplay(t *testing.T) {
	cache := NewReplayCache(ReplayWindow, ReplayCacheMax, time.Now)
	if got := reason(verifyStart(good(), cache)); got != "accepted" {
		t.Fatalf("first: %s", got)
	}
	if got := reason(verifyStart(good(), cache)); got != "replayed" {
		t.Fatalf("again: %s", got)
	}
}

func TestVerifyRefusals(t *testing.T) {
	with := func(change func(*SignedHeaders)) SignedHeaders {
		h := good()
		change(&h)
		return h
	}
	cases := []struct {
		name    string
		headers SignedHeaders
		secrets []string
		want    string
	}{
		{"no timestamp", with(func(h *SignedHeaders) { h.Timestamp = "" }), nil, "signature_missing"},
		{"no request id", with(func(h *SignedHeaders) { h.RequestID = "" }), nil, "signature_missing"},
		{"no signatures", with(func(h *SignedHeaders) { h.Signatures = "" }), nil, "signature_missing"},
		{"no v2 entry", with(func(h *SignedHeaders) { h.Signatures = "v9=" + startSignature }), nil, "signature_missing"},
		{"negative timestamp", with(func(h *SignedHeaders) { h.Timestamp = "-1" }), nil, "bad_timestamp"},
		{"fractional timestamp", with(func(h *SignedHeaders) { h.Timestamp = "1.5" }), nil, "bad_timestamp"},
		{"13-digit timestamp", with(func(h *SignedHeaders) { h.Timestamp = "1234567890123" }), nil, "bad_timestamp"},
		{"stale timestamp", with(func(h *SignedHeaders) { h.Timestamp = "1767225294" }), nil, "stale_timestamp"},
		{"future timestamp", with(func(h *SignedHeaders) { h.Timestamp = "1767225906" }), nil, "stale_timestamp"},
		{"upper-case id", with(func(h *SignedHeaders) { h.RequestID = strings.ToUpper(startID) }), nil, "bad_request_id"},
		{"short id", with(func(h *SignedHeaders) { h.RequestID = startID[1:] }), nil, "bad_request_id"},
		{"another secret", good(), []string{"another-secret"}, "bad_signature"},
		{"altered signature", with(func(h *SignedHeaders) { h.Signatures = "v2=" + strings.Repeat("0", 64) }), nil, "bad_signature"},
		{"second secret", good(), []string{"old-secret", secret}, "accepted"},
		{"several entries", with(func(h *SignedHeaders) {
			h.Signatures = "v3=zz, v2=" + strings.Repeat("0", 64) + ",v2=" + startSignature
		}), nil, "accepted"},
	}
	for _, c := range cases {
		if got := reason(verifyStart(c.headers, nil, c.secrets...)); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestVerifyCoversMethodPathAndBody(t *testing.T) {
	now := stampTime
	for _, c := range []struct{ method, target, body string }{
		{"POST", "/end", startBody}, {"PUT", "/start", startBody}, {"POST", "/start", "{}"},
	} {
		if got := reason(VerifyV2([]string{secret}, c.method, c.target, []byte(c.body), good(), nil, now)); got != "bad_signature" {
			t.Errorf("%s %s %s: got %s", c.method, c.target, c.body, got)
		}
	}
}

func TestOnlyVerifiedIDsAreRemembered(t *testing.T) {
	cache := NewReplayCache(ReplayWindow, ReplayCacheMax, time.Now)
	bad := good()
	bad.Signatures = "v2=" + strings.Repeat("0", 64)
	verifyStart(bad, cache)
	if cache.Len() != 0 {
		t.Fatalf("a refused request's id was remembered")
	}
	if got := reason(verifyStart(good(), cache)); got != "accepted" {
		t.Fatalf("got %s", got)
	}
}

func TestReplayCacheForgetsAfterTheWindow(t *testing.T) {
	now := time.Unix(0, 0)
	cache := NewReplayCache(660*time.Second, 10, func() time.Time { return now })
	if !cache.Remember("a") {
		t.Fatal("first")
	}
	now = now.Add(600 * time.Second)
	if cache.Remember("a") {
		t.Fatal("within the window")
	}
	now = now.Add(61 * time.Second)
	if !cache.Remember("a") {
		t.Fatal("after the window")
	}
}

func TestReplayCacheForgetsTheOldestWhenFull(t *testing.T) {
	now := time.Unix(0, 0)
	cache := NewReplayCache(660*time.Second, 2, func() time.Time { return now })
	cache.Remember("a")
	cache.Remember("b")
	cache.Remember("c")
	if cache.Len() != 2 || cache.Remember("c") || !cache.Remember("a") {
		t.Fatal("the oldest id should have gone first")
	}
}

func TestParseSecretsAndDigests(t *testing.T) {
	if got := strings.Join(ParseSecrets(" new , old,,"), "|"); got != "new|old" {
		t.Errorf("secrets: %q", got)
	}
	if got := strings.Join(V2Digests("v2=ab, v3=cd, junk, v2=, =ef, v2 = 12"), "|"); got != "ab|12" {
		t.Errorf("digests: %q", got)
	}
}
