package feature

import (
	"strconv"

	"github.com/batonhq/baton/transport"
)

// routingError is the type of the routing decorators' sentinels. Each
// matches transport.ErrCommunication, the root of every message-layer
// error.
type routingError struct{ msg string }

// Error returns the message text.
func (e *routingError) Error() string { return e.msg }

// Is reports whether target is the root of the hierarchy.
func (e *routingError) Is(target error) bool { return target == transport.ErrCommunication }

// ErrConversationClosed marks a message refused because its conversation
// thread is closed (see ConversationClosedError).
var ErrConversationClosed error = &routingError{"feature: conversation closed"}

// ConversationClosedError reports a message refused by Conversations
// because its thread is closed.
type ConversationClosedError struct {
	// ConversationID is the closed thread.
	ConversationID string
	// Reason is ConversationMaxDepth, ConversationMaxDuration or
	// ConversationClosedByOwner.
	Reason string
}

// Error returns the message text.
func (e *ConversationClosedError) Error() string {
	return "feature: conversation " + strconv.Quote(e.ConversationID) + " is closed (" + e.Reason + ")"
}

// Unwrap makes the error match ErrConversationClosed.
func (e *ConversationClosedError) Unwrap() error { return ErrConversationClosed }
