package main

// YOUR BOT: its name and its strategy. This is the one file to edit.
//
// Choose gets the whole request of the turn, typed (see protocol.go): your hand, the table,
// every seat's card count and score, the deal's history, the rules in force, the time you
// have (DeadlineMs), and LegalMoves, the complete list of legal moves, lowest first, "pass"
// last when passing is allowed. Return the id of one of them (and, if you like, a Say for
// the log).
//
// If Choose panics or returns an id that is not listed, the server logs it and plays the
// first legal move instead (a legal move always beats a fault), so a bug costs no strike.

// What GET / answers: shown in the arena's seat maps and match logs.
const (
	BotName    = "starter-go"
	BotAuthor  = "you"
	BotVersion = "0.1.0"
)

// Choice is a move id and optional table talk.
type Choice struct {
	Move MoveID
	Say  string
}

// Choose picks the move. The strategy goes here; this one plays the first legal move: the
// lowest play (or the first choice of a decision).
func Choose(req *MoveRequest) Choice {
	return Choice{Move: req.LegalMoves[0].ID}
}
