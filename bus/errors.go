package bus

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

// Sentinels of the exception types and of the bus's own failure modes.
// Match them with errors.Is; the typed errors below carry the details.
var (
	// ErrCommunication is the root every other error of this package matches
	//.
	ErrCommunication = errors.New("bus: communication error")
	// ErrValidation marks a message or argument that breaks the format
	// standard.
	ErrValidation error = &commError{"bus: invalid message"}
	// ErrQueueFull marks a send refused because a mailbox or the bus is at
	// capacity.
	ErrQueueFull error = &commError{"bus: queue full"}
	// ErrRouting marks a message that cannot be routed to a receiver
	//.
	ErrRouting error = &commError{"bus: routing failed"}
	// ErrUnknownAgent marks a receiver or agent id that is not registered.
	ErrUnknownAgent error = &commError{"bus: unknown agent"}
	// ErrHandoff marks a refused hand-off between agents (every
	// handoff.RefusalError matches it).
	ErrHandoff error = &commError{"bus: hand-off failed"}
	// ErrTimeout marks an operation that did not complete in time, such as a
	// request without a response.
	ErrTimeout error = &commError{"bus: timeout"}
	// ErrUnavailable marks a send the transport could not complete for
	// now: its server did not answer in time (a replicated stream electing
	// a leader, a connection being re-established). The same send may go
	// through later; the engine sends the work again instead of failing
	// its run.
	ErrUnavailable error = &commError{"bus: transport unavailable"}
	// ErrClosed is returned by every operation on a closed bus.
	ErrClosed error = &commError{"bus: closed"}
	// ErrDuplicateAgent is returned when an agent id is registered twice.
	ErrDuplicateAgent error = &commError{"bus: agent already registered"}
	// ErrDeadLetterNotFound is returned by Requeue and Discard for an id that
	// is not in the dead-letter queue.
	ErrDeadLetterNotFound error = &commError{"bus: dead letter not found"}
	// ErrCircuitOpen marks a send refused because the receiver's circuit
	// breaker is open (or half-open with its trial message under way).
	ErrCircuitOpen error = &commError{"bus: circuit open"}
	// ErrConversationClosed marks a message refused because its conversation
	// thread is closed.
	ErrConversationClosed error = &commError{"bus: conversation closed"}
	// ErrDuplicate marks a Request whose idempotency key was already
	// accepted; Send acknowledges such a duplicate with nil instead.
	ErrDuplicate error = &commError{"bus: duplicate message"}
	// ErrConversationsOff is returned by the conversation queries of a bus
	// created without WithConversations.
	ErrConversationsOff error = &commError{"bus: conversations are not tracked (WithConversations)"}
	// ErrNotice marks a failure to send the ACK or ERROR that tells a
	// sender what became of its message, after the bus did what was asked
	// (see NoticeError).
	ErrNotice error = &commError{"bus: notice not sent"}
)

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

// DeadLetterNotFoundError reports a Requeue or Discard of a message id that
// is not in the dead-letter queue.
type DeadLetterNotFoundError struct {
	// MessageID is the id that was not found.
	MessageID string
}

// Error returns the message text.
func (e *DeadLetterNotFoundError) Error() string {
	return "bus: dead letter " + strconv.Quote(e.MessageID) + " not found"
}

// Unwrap makes the error match ErrDeadLetterNotFound.
func (e *DeadLetterNotFoundError) Unwrap() error { return ErrDeadLetterNotFound }

// DuplicateAgentError reports a Register of an agent id that already has a
// mailbox.
type DuplicateAgentError struct {
	// Agent is the id registered twice.
	Agent string
}

// Error returns the message text.
func (e *DuplicateAgentError) Error() string {
	return "bus: agent " + strconv.Quote(e.Agent) + " already registered"
}

// Unwrap makes the error match ErrDuplicateAgent.
func (e *DuplicateAgentError) Unwrap() error { return ErrDuplicateAgent }

// CircuitOpenError reports a send refused by the receiver's circuit
// breaker. The message was not accepted.
type CircuitOpenError struct {
	// Agent is the receiver whose breaker refused the message.
	Agent string
	// State is BreakerOpen, or BreakerHalfOpen when the one trial message
	// allowed is still under way.
	State BreakerState
}

// Error returns the message text.
func (e *CircuitOpenError) Error() string {
	return "bus: circuit breaker of " + e.Agent + " is " + string(e.State)
}

// Unwrap makes the error match ErrCircuitOpen.
func (e *CircuitOpenError) Unwrap() error { return ErrCircuitOpen }

// ConversationClosedError reports a message refused because its thread is
// closed (WithConversations).
type ConversationClosedError struct {
	// ConversationID is the closed thread.
	ConversationID string
	// Reason is ConversationMaxDepth, ConversationMaxDuration or
	// ConversationClosedByOwner.
	Reason string
}

// Error returns the message text.
func (e *ConversationClosedError) Error() string {
	return "bus: conversation " + strconv.Quote(e.ConversationID) + " is closed (" + e.Reason + ")"
}

// Unwrap makes the error match ErrConversationClosed.
func (e *ConversationClosedError) Unwrap() error { return ErrConversationClosed }

// DuplicateError reports a Request whose idempotency key the bus already
// accepted within its window: the request was not sent again.
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

// NoticeError reports that Reject rejected and dead-lettered a message but
// could not send the ERROR telling its sender: the rejection stands.
type NoticeError struct {
	// MessageID is the rejected message; To its sender, the notice's receiver.
	MessageID, To string
	// Err is why the notice was not sent.
	Err error
}

// Error returns the message text.
func (e *NoticeError) Error() string {
	return "bus: message " + e.MessageID + " rejected, but the notice to " + e.To + " failed: " + e.Err.Error()
}

// Unwrap makes the error match ErrNotice and the cause of the failure.
func (e *NoticeError) Unwrap() []error { return []error{ErrNotice, e.Err} }
