package main

// The bot's web server: GET /, POST /start, /move and /end as docs/protocol.md says, with
// net/http only.
//
//   - Every request is verified (signing.go) when the bot has a secret; refused ones get 401
//     with {"error", "reason"}.
//   - A body over MaxBody gets 413, a body that is not a JSON object (or a /move without
//     legal moves) 400 with {"error"}, another path 404, another method 405.
//   - Connections are kept alive (the arena reuses one per bot for a whole match).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

const (
	// MaxBody is the largest request body read (the arena's largest /move bodies are a few
	// tens of KiB).
	MaxBody = 1 << 20
	// IdleTimeout is how long an idle kept-alive connection stays open.
	IdleTimeout = 120 * time.Second
	maxSay      = 140
)

// Bot is an http.Handler that speaks the protocol.
type Bot struct {
	Name, Author, Version string
	// Choose picks moves (the strategy).
	Choose func(*MoveRequest) Choice
	// Secrets are the arena's signing secrets for this bot; none: nothing is checked.
	Secrets []string
	// PathPrefix serves the endpoints under this path only ("/s3cr3t" serves /s3cr3t/move).
	PathPrefix string
	// OnStart and OnEnd, when set, see the /start and /end requests.
	OnStart func(*StartRequest)
	OnEnd   func(*EndRequest)
	// MaxBody overrides the body limit (0: MaxBody).
	MaxBody int64

	replaysOnce sync.Once
	replays     *ReplayCache
}

// NewBot is a bot with this package's name and strategy.
func NewBot(secrets []string, pathPrefix string) *Bot {
	return &Bot{Name: BotName, Author: BotAuthor, Version: BotVersion, Choose: Choose,
		Secrets: secrets, PathPrefix: pathPrefix}
}

// NewServer is an http.Server for bot with keep-alive and header timeouts set.
func NewServer(bot *Bot) *http.Server {
	return &http.Server{
		Handler:           bot,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

type httpError struct {
	status  int
	message string
}

func writeJSON(w http.ResponseWriter, status int, payload any) {
	body, err := json.Marshal(payload)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// endpoint is the protocol path asked for ("/", "/move", ...), or "" outside the prefix.
func (b *Bot) endpoint(path string) string {
	prefix := strings.Trim(b.PathPrefix, "/")
	if prefix == "" {
		return path
	}
	prefix = "/" + prefix
	if path == prefix {
		return "/"
	}
	if strings.HasPrefix(path, prefix+"/") {
		return path[len(prefix):]
	}
	return ""
}

// decodeObject decodes a JSON object body into v, or says why it cannot.
func decodeObject(body []byte, v any) *httpError {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if !utf8.Valid(body) || len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(body, v) != nil {
		return &httpError{http.StatusBadRequest, "the body must be a JSON object"}
	}
	return nil
}

func (b *Bot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := b.serve(w, r); err != nil {
		writeJSON(w, err.status, ErrorAnswer{Error: err.message})
	}
}

func (b *Bot) serve(w http.ResponseWriter, r *http.Request) *httpError {
	limit := b.MaxBody
	if limit <= 0 {
		limit = MaxBody
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &httpError{http.StatusRequestEntityTooLarge, "body too large"}
		}
		return &httpError{http.StatusBadRequest, "could not read the body"}
	}
	if len(b.Secrets) > 0 {
		b.replaysOnce.Do(func() { b.replays = NewReplayCache(ReplayWindow, ReplayCacheMax, time.Now) })
		refusal := VerifyV2(b.Secrets, r.Method, r.RequestURI, body, SignedHeaders{
			Timestamp:  r.Header.Get(TimestampHeader),
			RequestID:  r.Header.Get(RequestIDHeader),
			Signatures: strings.Join(r.Header.Values(SignaturesHeader), ", "),
		}, b.replays, time.Now())
		if refusal != nil {
			writeJSON(w, http.StatusUnauthorized, ErrorAnswer{Error: refusal.Message, Reason: refusal.Reason})
			return nil
		}
	}
	path := b.endpoint(r.URL.Path)
	switch path {
	case "/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return &httpError{http.StatusMethodNotAllowed, "use GET /"}
		}
		writeJSON(w, http.StatusOK, DescribeAnswer{Protocol: Protocol, Name: b.Name, Author: b.Author, Version: b.Version})
		return nil
	case "/start", "/move", "/end":
		if r.Method != http.MethodPost {
			return &httpError{http.StatusMethodNotAllowed, "use POST " + path}
		}
	default:
		return &httpError{http.StatusNotFound, "not found"}
	}
	switch path {
	case "/move":
		var req MoveRequest
		if err := decodeObject(body, &req); err != nil {
			return err
		}
		if len(req.LegalMoves) == 0 {
			return &httpError{http.StatusBadRequest, "a /move body needs a non-empty legal_moves list"}
		}
		for _, m := range req.LegalMoves {
			if m.ID == "" {
				return &httpError{http.StatusBadRequest, "every entry of legal_moves needs an id"}
			}
		}
		writeJSON(w, http.StatusOK, b.answer(&req))
	case "/start":
		var req StartRequest
		if err := decodeObject(body, &req); err != nil {
			return err
		}
		if b.OnStart != nil {
			b.OnStart(&req)
		}
		writeJSON(w, http.StatusOK, struct{}{})
	case "/end":
		var req EndRequest
		if err := decodeObject(body, &req); err != nil {
			return err
		}
		if b.OnEnd != nil {
			b.OnEnd(&req)
		}
		writeJSON(w, http.StatusOK, struct{}{})
	}
	return nil
}

// answer is the /move answer: the strategy's move, or the first legal move (with a Say that
// explains) when the strategy panics or names a move that is not listed.
func (b *Bot) answer(req *MoveRequest) (answer MoveAnswer) {
	turn := req.Turn
	answer.Turn = &turn
	fallback := func(why string) {
		log.Printf("strategy: %s; playing the first legal move", why)
		answer.Move, answer.Say = req.LegalMoves[0].ID, "fallback: "+why
	}
	defer func() {
		if p := recover(); p != nil {
			fallback(fmt.Sprintf("panic: %v", p))
		}
		if say := []rune(answer.Say); len(say) > maxSay {
			answer.Say = string(say[:maxSay])
		}
	}()
	choice := b.Choose(req)
	for _, m := range req.LegalMoves {
		if m.ID == choice.Move {
			answer.Move, answer.Say = choice.Move, choice.Say
			return answer
		}
	}
	fallback(fmt.Sprintf("Choose returned %q, which is not a listed move id", choice.Move))
	return answer
}
