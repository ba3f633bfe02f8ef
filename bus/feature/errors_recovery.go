package feature

import (
	"errors"
	"fmt"
)

// ErrDeadLetterNotFound is returned by DeadLetters.Requeue and Discard for
// a message id that no dead letter held has.
var ErrDeadLetterNotFound = errors.New("feature: dead letter not found")

// DeadLetterNotFoundError reports a Requeue or Discard of a message id that
// no dead letter held has.
type DeadLetterNotFoundError struct {
	// MessageID is the id asked for.
	MessageID string
}

// Error returns the message text.
func (e *DeadLetterNotFoundError) Error() string {
	return fmt.Sprintf("feature: no dead letter held for message %q", e.MessageID)
}

// Unwrap makes the error match ErrDeadLetterNotFound.
func (e *DeadLetterNotFoundError) Unwrap() error { return ErrDeadLetterNotFound }
