package bus

import (
	"strconv"

	"github.com/batonhq/baton/transport"
)

// busError is the type of the bus's own sentinels. Each matches
// transport.ErrCommunication, the root of every message-layer error.
type busError struct{ msg string }

// Error returns the message text.
func (e *busError) Error() string { return e.msg }

// Is reports whether target is the root of the hierarchy.
func (e *busError) Is(target error) bool { return target == transport.ErrCommunication }

// Sentinels of the bus's own failure modes (those every transport shares
// are package transport's). Match them with errors.Is; the typed errors
// below carry the details.
var (
	// ErrDuplicateAgent is returned when an agent id is registered twice.
	ErrDuplicateAgent error = &busError{"bus: agent already registered"}
	// ErrDeadLetterNotFound is returned by Requeue and Discard for an id that
	// is not in the dead-letter queue.
	ErrDeadLetterNotFound error = &busError{"bus: dead letter not found"}
	// ErrNotice marks a failure to send the ACK or ERROR that tells a
	// sender what became of its message, after the bus did what was asked
	// (see NoticeError).
	ErrNotice error = &busError{"bus: notice not sent"}
)

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
