package httpagent

import (
	"errors"
	"fmt"
)

// ErrTooLarge matches every body over MaxBody bytes, sent or received.
var ErrTooLarge = errors.New("httpagent: body larger than 1 MiB")

// StatusError is an agent's answer with a status the protocol does not
// accept as a report or a promise of one.
type StatusError struct {
	URL    string
	Status int
	Body   string // the start of the answer's body, for the history
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("httpagent: %s answered %d", e.URL, e.Status)
	}
	return fmt.Sprintf("httpagent: %s answered %d: %s", e.URL, e.Status, e.Body)
}

// Retryable reports whether the status is one a later call may fix: 5xx,
// 408 (request timeout) and 429 (too many requests).
func (e *StatusError) Retryable() bool {
	return e.Status >= 500 || e.Status == 408 || e.Status == 429
}

// AnswerError is a 200 whose body is not a report of the run that was sent.
type AnswerError struct {
	URL    string
	Reason string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("httpagent: %s answered 200 without a report of this run: %s", e.URL, e.Reason)
}
