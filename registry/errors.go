package registry

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors of the registry, matched with errors.Is.
var (
	// ErrUnknownAgent reports a look-up of an id that is not registered.
	ErrUnknownAgent = errors.New("registry: unknown agent")
	// ErrDuplicateAgent reports an Add of an id that is already registered.
	ErrDuplicateAgent = errors.New("registry: duplicate agent")
	// ErrInvalidAgent reports an agent whose fields break a rule.
	ErrInvalidAgent = errors.New("registry: invalid agent")
	// ErrRejected reports that an agent refused a hand-off.
	ErrRejected = errors.New("registry: hand-off rejected")
)

// UnknownAgentError is returned for an id that is not registered. Suggestion
// holds the nearest registered id when one is close enough, else "".
type UnknownAgentError struct {
	ID         string
	Suggestion string
}

// Error reports the id and, when there is one, the suggestion.
func (e *UnknownAgentError) Error() string {
	msg := "registry: unknown agent " + strconv.Quote(e.ID)
	if e.Suggestion != "" {
		msg += " (did you mean " + strconv.Quote(e.Suggestion) + "?)"
	}
	return msg
}

// Unwrap returns ErrUnknownAgent.
func (e *UnknownAgentError) Unwrap() error { return ErrUnknownAgent }

// DuplicateAgentError is returned when an id is registered twice.
type DuplicateAgentError struct {
	ID string
}

// Error names the duplicated id.
func (e *DuplicateAgentError) Error() string {
	return "registry: duplicate agent " + strconv.Quote(e.ID)
}

// Unwrap returns ErrDuplicateAgent.
func (e *DuplicateAgentError) Unwrap() error { return ErrDuplicateAgent }

// AgentError reports an agent field that breaks a rule.
type AgentError struct {
	ID     string // the agent's id, possibly empty
	Field  string // the offending field: "id", "queue", "capabilities", ...
	Reason string // what is wrong with it
}

// Error names the agent, the field and the problem.
func (e *AgentError) Error() string {
	return fmt.Sprintf("registry: agent %q: %s %s", e.ID, e.Field, e.Reason)
}

// Unwrap returns ErrInvalidAgent.
func (e *AgentError) Unwrap() error { return ErrInvalidAgent }

// RejectError is what a handler returns to refuse a hand-off; Reject builds
// it. A rejection is never retried.
type RejectError struct {
	Reason string
}

// Error quotes the agent's reason.
func (e *RejectError) Error() string {
	if e.Reason == "" {
		return "registry: hand-off rejected"
	}
	return "registry: hand-off rejected: " + e.Reason
}

// Unwrap returns ErrRejected.
func (e *RejectError) Unwrap() error { return ErrRejected }

// Reject returns the error a handler reports to refuse the hand-off it was
// given, with the reason the sender will see.
func Reject(reason string) error { return &RejectError{Reason: reason} }

// PermanentError wraps a handler failure that retrying cannot fix.
type PermanentError struct {
	Err error
}

// Error returns the wrapped error's text.
func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as not retryable; it returns nil for a nil err.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsRetryable reports whether a failed run that returned err may be retried:
// true unless err is nil, was marked with Permanent, or is a rejection.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var p *PermanentError
	if errors.As(err, &p) {
		return false
	}
	return !errors.Is(err, ErrRejected)
}

// KindError gives a handler failure a kind that retry policies and
// conditions (error.kind) can tell apart; Kind builds it.
type KindError struct {
	Kind string
	Err  error
}

// Error returns the wrapped error's text.
func (e *KindError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *KindError) Unwrap() error { return e.Err }

// Kind marks err with an error kind ("rate_limited", say); it returns nil
// for a nil err. Permanent and Kind combine in either order.
func Kind(err error, kind string) error {
	if err == nil {
		return nil
	}
	return &KindError{Kind: kind, Err: err}
}

// KindOf returns the kind err was marked with, or "error" when it has none
// ("" for a nil err).
func KindOf(err error) string {
	if err == nil {
		return ""
	}
	var k *KindError
	if errors.As(err, &k) && k.Kind != "" {
		return k.Kind
	}
	if errors.Is(err, ErrRejected) {
		return "rejected"
	}
	return "error"
}

// ErrDeferred is what a handler returns (through Deferred) when the run's
// outcome will be reported later, through the engine's report API, rather
// than by its return: an HTTP agent that answered 202, say. The run stays
// under way until that report or the state's timeout.
var ErrDeferred = errors.New("registry: the outcome will be reported later")

// Deferred returns ErrDeferred.
func Deferred() error { return ErrDeferred }

// ErrInvalidUsage is matched by every *UsageError.
var ErrInvalidUsage = errors.New("registry: invalid usage")

// UsageError reports a usage field that is negative or not a number.
type UsageError struct {
	Field  string // input_tokens, output_tokens or cost
	Reason string
}

// Error names the field and the problem.
func (e *UsageError) Error() string { return "registry: usage." + e.Field + " " + e.Reason }

// Unwrap returns ErrInvalidUsage.
func (e *UsageError) Unwrap() error { return ErrInvalidUsage }
