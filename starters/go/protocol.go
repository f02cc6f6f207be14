package main

// The Big Two Arena wire protocol, version 1, as Go types: one per message the arena sends
// (StartRequest, MoveRequest, EndRequest) and per answer the bot gives (DescribeAnswer,
// MoveAnswer, ErrorAnswer). They follow the JSON Schemas in the arena's referee/schemas/ and
// docs/protocol.md.
//
// The arena may add fields within version 1: encoding/json ignores fields a struct does not
// name, which is what a bot must do. Fields that can be null are pointers; fields that only
// some rule sets send are pointers or omitted-when-empty.

// Protocol is the protocol version this bot speaks.
const Protocol = 1

// A Card is rank (3 4 5 6 7 8 9 T J Q K A 2) then suit (D C H S): "3D", "TS", "2S".
type Card = string

// A MoveID is the card texts in card order joined by "-" ("3D-3S"), or "pass".
type MoveID = string

// Rules is the rule set in force. Options holds every option by name (the arena's
// docs/rules.md lists them), e.g. Options["suit_order"] is "DCHS" under standard rules.
type Rules struct {
	Name    string         `json:"name"`
	Options map[string]any `json:"options"`
}

// DescribeAnswer is what GET / answers.
type DescribeAnswer struct {
	Protocol int    `json:"protocol"`
	Name     string `json:"name"`    // non-empty, at most 64 characters
	Author   string `json:"author"`  // at most 64 characters
	Version  string `json:"version"` // at most 64 characters
}

// SeatInfo is who sits where, as each bot described itself.
type SeatInfo struct {
	Seat    int    `json:"seat"`
	Name    string `json:"name"`
	Author  string `json:"author"`
	Version string `json:"version"`
}

// StartRequest is the body of POST /start, sent once per match. Any JSON object answers it.
type StartRequest struct {
	Protocol   int        `json:"protocol"`
	Type       string     `json:"type"` // "start"
	MatchID    string     `json:"match_id"`
	Seat       int        `json:"seat"`
	Players    int        `json:"players"`
	Deals      int        `json:"deals"`
	Rules      Rules      `json:"rules"`
	Seats      []SeatInfo `json:"seats"`
	DeadlineMs int        `json:"deadline_ms"`
	TimeBankMs int        `json:"time_bank_ms"`
	MaxStrikes *int       `json:"max_strikes"` // nil: never forfeits
}

// TablePlay is the play to beat and who made it.
type TablePlay struct {
	Cards []Card `json:"cards"`
	Kind  string `json:"kind"`           // single, pair, triple, four, five, dragon, ...
	Type  string `json:"type,omitempty"` // five-card (or four-card) type: "straight", ...
	Seat  int    `json:"seat"`
}

// Turn is one turn of a trick or of the deal's history: a pass, cards played, or a decision
// before play (a card exchange; its cards are shown only to the seats involved).
type Turn struct {
	Seat     int    `json:"seat"`
	Pass     bool   `json:"pass,omitempty"`
	Cards    []Card `json:"cards,omitempty"`
	Decision bool   `json:"decision,omitempty"`
}

// LegalMove is one legal move; Cards is empty for "pass".
type LegalMove struct {
	ID    MoveID `json:"id"`
	Cards []Card `json:"cards"`
}

// Draw is a draw from the stock (a count only).
type Draw struct {
	Turn  int `json:"turn"`
	Seat  int `json:"seat"`
	Count int `json:"count"`
}

// OwnDraw is the cards you drew.
type OwnDraw struct {
	Turn  int    `json:"turn"`
	Cards []Card `json:"cards"`
}

// Spare is the spare card(s) and who got them.
type Spare struct {
	Cards []Card `json:"cards"`
	Seat  int    `json:"seat"`
}

// Decision is what to decide in the "decision" phase (LegalMoves are the allowed choices).
type Decision struct {
	Kind  string `json:"kind"`            // "give" or "trade"
	Cards int    `json:"cards,omitempty"` // give: how many cards
	To    *int   `json:"to,omitempty"`    // give: who receives them
	Card  []Card `json:"card,omitempty"`  // trade: the card offered
}

// Exchange is a card exchange before play that involved you.
type Exchange struct {
	From  int    `json:"from"`
	To    int    `json:"to"`
	Cards []Card `json:"cards"`
}

// Outcome is how a deal ended.
type Outcome struct {
	Termination string `json:"termination"` // played-out, instant-win, instant-loss, draw, stalemate
	Winner      *int   `json:"winner"`
	FinishOrder []int  `json:"finish_order"`
	CardsLeft   []int  `json:"cards_left"`
	Penalties   []int  `json:"penalties"`
	Scores      []int  `json:"scores"`
	Detail      string `json:"detail"`
}

// MoveRequest is the body of POST /move: your turn.
type MoveRequest struct {
	Protocol      int         `json:"protocol"`
	Type          string      `json:"type"` // "move"
	MatchID       string      `json:"match_id"`
	DealID        string      `json:"deal_id"` // "<match_id>/<deal_index>"
	Deals         int         `json:"deals"`
	Turn          int         `json:"turn"` // index of this turn in the deal; echoed in the answer
	Rules         Rules       `json:"rules"`
	Scores        []int       `json:"scores"` // match totals before this deal (higher is better)
	Strikes       []int       `json:"strikes"`
	DeadlineMs    int         `json:"deadline_ms"`
	TimeBankMs    int         `json:"time_bank_ms"` // this call may take DeadlineMs + TimeBankMs
	LastLatencyMs *int        `json:"last_latency_ms"`
	Seat          int         `json:"seat"`
	Players       int         `json:"players"`
	DealIndex     int         `json:"deal_index"`
	Hand          []Card      `json:"hand"` // low to high in the rule set's order
	CardCounts    []int       `json:"card_counts"`
	ToMove        *int        `json:"to_move"`
	Table         *TablePlay  `json:"table"` // nil when you lead
	Trick         []Turn      `json:"trick"`
	History       []Turn      `json:"history"`
	Passed        []int       `json:"passed"`
	Finished      []int       `json:"finished"`
	MustInclude   *Card       `json:"must_include"`
	StockCount    int         `json:"stock_count"`
	Draws         []Draw      `json:"draws"`
	OwnDraws      []OwnDraw   `json:"own_draws"`
	Starter       *int        `json:"starter"`
	Spare         *Spare      `json:"spare,omitempty"`
	LegalMoves    []LegalMove `json:"legal_moves"` // lowest first, "pass" last when allowed
	Phase         string      `json:"phase"`       // "play", "decision" or "out-of-turn"
	Decision      *Decision   `json:"decision,omitempty"`
	Exchanges     []Exchange  `json:"exchanges,omitempty"`
	Shootouts     *int        `json:"shootouts,omitempty"`
	Outcome       *Outcome    `json:"outcome,omitempty"`
}

// MoveAnswer is the answer to POST /move.
type MoveAnswer struct {
	Move MoveID `json:"move"`
	Turn *int   `json:"turn,omitempty"`
	Say  string `json:"say,omitempty"` // kept in the log (first 140 characters)
}

// Standing is one seat's final place.
type Standing struct {
	Rank      int    `json:"rank"`
	Seat      int    `json:"seat"`
	Name      string `json:"name"`
	Score     int    `json:"score"`
	Forfeited bool   `json:"forfeited"`
}

// EndRequest is the body of POST /end: the match is over. Any JSON object answers it.
type EndRequest struct {
	Protocol  int        `json:"protocol"`
	Type      string     `json:"type"` // "end"
	MatchID   string     `json:"match_id"`
	Seat      int        `json:"seat"`
	Scores    []int      `json:"scores"`
	Standings []Standing `json:"standings"`
	Deals     []Outcome  `json:"deals"`
	Strikes   []int      `json:"strikes"`
	Forfeited []int      `json:"forfeited"`
}

// ErrorAnswer is what the bot answers with a 4xx; Reason names a refused signature.
type ErrorAnswer struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
}
