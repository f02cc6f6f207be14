package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

var requestCounter int64

func newRequestID() string {
	return fmt.Sprintf("%032x", atomic.AddInt64(&requestCounter, 1))
}

// moveBody is a real /move request (the arena's `python -m referee protocol-example`).
func moveBody(t *testing.T) []byte {
	t.Helper()
	body, err := os.ReadFile("testdata/move-request.json")
	if err != nil {
		t.Fatal(err)
	}
	return body
}

type reply struct {
	status int
	header http.Header
	data   map[string]any
}

func call(t *testing.T, server *httptest.Server, method, target string, body []byte, headers map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(method, server.URL+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := reply{status: resp.StatusCode, header: resp.Header, data: map[string]any{}}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.data); err != nil {
			t.Fatalf("answer is not a JSON object: %q", raw)
		}
	}
	return out
}

func signedHeaders(method, target string, body []byte, id string) map[string]string {
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	return map[string]string{
		TimestampHeader:  stamp,
		RequestIDHeader:  id,
		SignaturesHeader: "v2=" + SignV2(secret, method, target, stamp, id, body),
	}
}

func signedCall(t *testing.T, server *httptest.Server, method, target string, body []byte) reply {
	t.Helper()
	return call(t, server, method, target, body, signedHeaders(method, target, body, newRequestID()))
}

func startBot(t *testing.T, bot *Bot) *httptest.Server {
	server := httptest.NewServer(bot)
	t.Cleanup(server.Close)
	return server
}

func TestDescribesItselfOnASignedGet(t *testing.T) {
	server := startBot(t, NewBot([]string{"old-secret", secret}, ""))
	got := signedCall(t, server, "GET", "/", nil)
	if got.status != 200 || got.data["protocol"] != 1.0 || got.data["name"] != BotName ||
		got.data["author"] != BotAuthor || got.data["version"] != BotVersion {
		t.Fatalf("got %d %v", got.status, got.data)
	}
}

func TestAnswersAMoveWithTheFirstLegalID(t *testing.T) {
	server := startBot(t, NewBot([]string{secret}, ""))
	body := moveBody(t)
	var req MoveRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	got := signedCall(t, server, "POST", "/move", body)
	if got.status != 200 || got.header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %v", got.status, got.data)
	}
	if got.data["move"] != req.LegalMoves[0].ID || got.data["turn"] != float64(req.Turn) {
		t.Fatalf("got %v, want move %s turn %d", got.data, req.LegalMoves[0].ID, req.Turn)
	}
}

func TestStartAndEndAnswerAnEmptyObject(t *testing.T) {
	server := startBot(t, NewBot([]string{secret}, ""))
	for _, path := range []string{"/start", "/end"} {
		got := signedCall(t, server, "POST", path, []byte(`{"protocol":1,"type":"x","max_strikes":null}`))
		if got.status != 200 || len(got.data) != 0 {
			t.Errorf("%s: got %d %v", path, got.status, got.data)
		}
	}
}

func TestRefusesAReplayedRequest(t *testing.T) {
	server := startBot(t, NewBot([]string{secret}, ""))
	body := moveBody(t)
	headers := signedHeaders("POST", "/move", body, newRequestID())
	if got := call(t, server, "POST", "/move", body, headers); got.status != 200 {
		t.Fatalf("first: %d %v", got.status, got.data)
	}
	got := call(t, server, "POST", "/move", body, headers)
	if got.status != 401 || got.data["reason"] != "replayed" || got.data["error"] == nil {
		t.Fatalf("replay: %d %v", got.status, got.data)
	}
}

func TestRefusesUnsignedAndWronglySignedRequests(t *testing.T) {
	server := startBot(t, NewBot([]string{secret}, ""))
	body := moveBody(t)
	if got := call(t, server, "POST", "/move", body, nil); got.status != 401 || got.data["reason"] != "signature_missing" {
		t.Errorf("unsigned: %d %v", got.status, got.data)
	}
	elsewhere := signedHeaders("POST", "/end", body, newRequestID())
	if got := call(t, server, "POST", "/move", body, elsewhere); got.status != 401 || got.data["reason"] != "bad_signature" {
		t.Errorf("signed for /end: %d %v", got.status, got.data)
	}
}

func TestMalformedJSONIs400(t *testing.T) {
	server := startBot(t, NewBot([]string{secret}, ""))
	for _, body := range []string{"{not json", "[1, 2]", "null", `"move"`, "{\xff}", `{"legal_moves": "3D"}`, `{"legal_moves": []}`, `{"legal_moves": [{"cards": []}]}`} {
		got := signedCall(t, server, "POST", "/move", []byte(body))
		if got.status != 400 || got.data["error"] == nil {
			t.Errorf("%q: got %d %v", body, got.status, got.data)
		}
	}
}

func TestABodyOverTheLimitIs413(t *testing.T) {
	bot := NewBot(nil, "")
	bot.MaxBody = 64
	server := startBot(t, bot)
	got := call(t, server, "POST", "/move", bytes.Repeat([]byte(" "), 65), nil)
	if got.status != 413 {
		t.Fatalf("got %d %v", got.status, got.data)
	}
}

func TestOtherPathsAndMethods(t *testing.T) {
	server := startBot(t, NewBot([]string{secret}, ""))
	for _, c := range []struct {
		method, target string
		want           int
	}{{"POST", "/nowhere", 404}, {"POST", "/", 405}, {"GET", "/move", 405}} {
		if got := signedCall(t, server, c.method, c.target, []byte("{}")); got.status != c.want {
			t.Errorf("%s %s: got %d", c.method, c.target, got.status)
		}
	}
}

func TestPathPrefixAndStrategyFallback(t *testing.T) {
	bot := NewBot(nil, "/s3cr3t")
	bot.Choose = func(*MoveRequest) Choice { panic("a bug in the strategy") }
	server := startBot(t, bot)
	if got := call(t, server, "GET", "/s3cr3t", nil, nil); got.status != 200 {
		t.Errorf("prefix: %d", got.status)
	}
	if got := call(t, server, "GET", "/", nil, nil); got.status != 404 {
		t.Errorf("outside the prefix: %d", got.status)
	}
	body := moveBody(t)
	var req MoveRequest
	_ = json.Unmarshal(body, &req)
	got := call(t, server, "POST", "/s3cr3t/move?key=x", body, nil)
	if got.status != 200 || got.data["move"] != req.LegalMoves[0].ID || got.data["say"] != "fallback: panic: a bug in the strategy" {
		t.Fatalf("got %d %v", got.status, got.data)
	}
	bot.Choose = func(*MoveRequest) Choice { return Choice{Move: "2S-2H"} }
	if got := call(t, server, "POST", "/s3cr3t/move", body, nil); got.data["move"] != req.LegalMoves[0].ID {
		t.Fatalf("an unlisted id: %v", got.data)
	}
}
