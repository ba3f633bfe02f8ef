package transport

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// commError is the type of the package's sentinels. Every sentinel matches
// ErrCommunication with errors.Is, mirroring the exception hierarchy in
// which every error derives from MultiAgentCommunicationError.
type commError struct{ msg string }

// Error returns the message text.
func (e *commError) Error() string { return e.msg }

// Is reports whether target is the root of the hierarchy.
func (e *commError) Is(target error) bool { return target == ErrCommunication }

var // ErrCommunication is the root every other error of this package matches
// .
ErrCommunication = errors.New("bus: communication error")

var // ErrValidation marks a message or argument that breaks the format
// standard.
ErrValidation error = &commError{"bus: invalid message"}

var // ErrQueueFull marks a send refused because a mailbox or the bus is at
// capacity.
ErrQueueFull error = &commError{"bus: queue full"}

var // ErrRouting marks a message that cannot be routed to a receiver
// .
ErrRouting error = &commError{"bus: routing failed"}

var // ErrUnknownAgent marks a receiver or agent id that is not registered.
ErrUnknownAgent error = &commError{"bus: unknown agent"}

var // ErrHandoff marks a refused hand-off between agents (every
// handoff.RefusalError matches it).
ErrHandoff error = &commError{"bus: hand-off failed"}

var // ErrTimeout marks an operation that did not complete in time, such as a
// request without a response.
ErrTimeout error = &commError{"bus: timeout"}

var // ErrUnavailable marks a send the transport could not complete for
// now: its server did not answer in time (a replicated stream electing
// a leader, a connection being re-established). The same send may go
// through later; the engine sends the work again instead of failing
// its run.
ErrUnavailable error = &commError{"bus: transport unavailable"}

var // ErrClosed is returned by every operation on a closed bus.
ErrClosed error = &commError{"bus: closed"}

var // ErrDuplicate marks a request (feature.Requests) whose idempotency
// key was already sent; SendWork acknowledges such a duplicate with nil
// instead.
ErrDuplicate error = &commError{"bus: duplicate message"}

// ValidationError reports a message field that breaks the format standard.
// Its text names the field, for example "bus: content is required".
type ValidationError struct {
	// Field is the JSON name of the offending field ("content.action").
	Field string
	// Reason says what is wrong with it ("is required").
	Reason string
}

// Error returns the message text.
func (e *ValidationError) Error() string { return "bus: " + e.Field + " " + e.Reason }

// Unwrap makes the error match ErrValidation.
func (e *ValidationError) Unwrap() error { return ErrValidation }

// QueueFullError reports a send refused for lack of room. Its text names the
// receiving agent, for example "bus: PaymentAgent queue full".
type QueueFullError struct {
	// Agent is the receiver whose mailbox could not take the message.
	Agent string
	// Capacity is the limit that was reached.
	Capacity int
	// BusWide is true when the bus-wide capacity, not the agent's, was reached.
	BusWide bool
	// Attempts is how many times the send tried, when it retried.
	Attempts int
}

// Error returns the message text.
func (e *QueueFullError) Error() string {
	scope := "capacity"
	if e.BusWide {
		scope = "bus capacity"
	}
	if e.Attempts > 1 {
		return fmt.Sprintf("bus: %s queue full (%s %d, %d attempts)", e.Agent, scope, e.Capacity, e.Attempts)
	}
	return fmt.Sprintf("bus: %s queue full (%s %d)", e.Agent, scope, e.Capacity)
}

// Unwrap makes the error match ErrQueueFull.
func (e *QueueFullError) Unwrap() error { return ErrQueueFull }

// RoutingError reports a message that could not be routed.
type RoutingError struct {
	// To is the destination that could not be resolved.
	To string
	// Reason explains why ("receiver_not_found").
	Reason string
	// Err is the underlying sentinel, such as ErrUnknownAgent; may be nil.
	Err error
}

// Error returns the message text.
func (e *RoutingError) Error() string {
	return fmt.Sprintf("bus: cannot route to %q: %s", e.To, e.Reason)
}

// Unwrap makes the error match ErrRouting and its cause.
func (e *RoutingError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrRouting}
	}
	return []error{ErrRouting, e.Err}
}

// UnknownAgentError reports an operation on an agent id that is not
// registered.
type UnknownAgentError struct {
	// Agent is the id that was not found.
	Agent string
}

// Error returns the message text.
func (e *UnknownAgentError) Error() string { return fmt.Sprintf("bus: unknown agent %q", e.Agent) }

// Unwrap makes the error match ErrUnknownAgent.
func (e *UnknownAgentError) Unwrap() error { return ErrUnknownAgent }

// TimeoutError reports an operation that ran out of time.
type TimeoutError struct {
	// Op is the operation ("request").
	Op string
	// MessageID is the message that was waited on.
	MessageID string
	// After is how long the operation waited.
	After time.Duration
	// Cause is the context error when a context deadline ended the wait.
	Cause error
}

// Error returns the message text.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("bus: %s %s timed out after %s", e.Op, e.MessageID, e.After)
}

// Unwrap makes the error match ErrTimeout and its cause.
func (e *TimeoutError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrTimeout}
	}
	return []error{ErrTimeout, e.Cause}
}

// DuplicateError reports a request (feature.Requests) whose idempotency
// key was already sent: the request was not sent again.
type DuplicateError struct {
	// Key is the idempotency key.
	Key string
	// MessageID is the refused request; DuplicateOf the one accepted first.
	MessageID, DuplicateOf string
}

// Error returns the message text.
func (e *DuplicateError) Error() string {
	return "bus: message " + e.MessageID + " duplicates " + e.DuplicateOf + " (idempotency key " + strconv.Quote(e.Key) + ")"
}

// Unwrap makes the error match ErrDuplicate.
func (e *DuplicateError) Unwrap() error { return ErrDuplicate }
