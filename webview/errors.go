package webview

import "errors"

// ErrNotFound means the instance or workflow asked for does not exist; the
// view answers 404.
var ErrNotFound = errors.New("webview: not found")

// RefusedError is an action the backend refused with nothing changed: a
// signal the instance is not waiting for, a selection without a run under
// way, a cancellation of a finished instance, data that is not valid. The
// view shows Reason on the instance's page with Status (409 when zero).
type RefusedError struct {
	Status int
	Reason string
}

func (e *RefusedError) Error() string { return "webview: refused: " + e.Reason }
