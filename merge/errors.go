package merge

import (
	"errors"
	"strconv"
	"strings"
)

// ErrUnknownStrategy is matched (with errors.Is) by every *StrategyError.
var ErrUnknownStrategy = errors.New("merge: unknown strategy")

// ErrNoReplies is returned by Decide when it is given no reply to merge.
var ErrNoReplies = errors.New("merge: no replies")

// ErrInvalidReply is matched (with errors.Is) by every *ReplyError.
var ErrInvalidReply = errors.New("merge: invalid reply")

// StrategyError reports a strategy name that is none of Strategies().
type StrategyError struct {
	// Strategy is the name that was given.
	Strategy Strategy
}

// Error names the unknown strategy and the valid ones.
func (e *StrategyError) Error() string {
	var b strings.Builder
	b.WriteString("merge: unknown strategy ")
	b.WriteString(strconv.Quote(string(e.Strategy)))
	b.WriteString(": want ")
	for i, s := range strategies {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	return b.String()
}

// Unwrap lets errors.Is(err, ErrUnknownStrategy) hold.
func (e *StrategyError) Unwrap() error { return ErrUnknownStrategy }

// ReplyError reports a reply Decide cannot count: one without an agent, or a
// second reply from the same agent.
type ReplyError struct {
	// Index is the reply's position in the slice given to Decide.
	Index int
	// Agent is the reply's agent ("" when that is the problem).
	Agent string
	// Field names the offending Reply field.
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error names the reply, the field and the reason.
func (e *ReplyError) Error() string {
	s := "merge: reply " + strconv.Itoa(e.Index)
	if e.Agent != "" {
		s += " (" + strconv.Quote(e.Agent) + ")"
	}
	return s + ": " + e.Field + " " + e.Reason
}

// Unwrap lets errors.Is(err, ErrInvalidReply) hold.
func (e *ReplyError) Unwrap() error { return ErrInvalidReply }
