package ops

import "errors"

// Kinds of error, matched with errors.Is on the *Error an operation
// returns.
var (
	// ErrNotFound means the workflow, version or instance named does not
	// exist.
	ErrNotFound = errors.New("ops: not found")
	// ErrInvalid means the request names or holds something invalid; the
	// Error's Field says what.
	ErrInvalid = errors.New("ops: invalid")
	// ErrConflict means the instance is not in a state that allows the
	// operation (nothing changed), or a start reused an id with other
	// input or for another workflow.
	ErrConflict = errors.New("ops: conflict")
	// ErrUnavailable means the store or engine did not answer, or the
	// process is shutting down; Retry says whether trying again shortly
	// may succeed.
	ErrUnavailable = errors.New("ops: unavailable")
	// ErrTooLarge means the request is larger than can be passed to the
	// process that runs the instance.
	ErrTooLarge = errors.New("ops: too large")
)

// Codes of an Error: what a front door shows its client beside the kind.
const (
	CodeUnknownWorkflow = "unknown_workflow"
	CodeUnknownVersion  = "unknown_version"
	CodeUnknownInstance = "unknown_instance"
	CodeInvalidField    = "invalid_field"
	// CodeConflict is a start that reuses an id with other input.
	CodeConflict = "conflict"
	// CodeIDTaken is a start whose id another workflow's instance has.
	CodeIDTaken = "id_taken"
	// CodeNotWaiting is a signal the instance is not waiting for.
	CodeNotWaiting = "not_waiting"
	// CodeRefused is a selection the hand-off rules refuse.
	CodeRefused = "refused"
	// CodeNoActiveRun is a selection with no run under way.
	CodeNoActiveRun = "no_active_run"
	// CodeFinished is a cancel of an instance that has finished.
	CodeFinished    = "finished"
	CodeUnavailable = "unavailable"
	CodeTooLarge    = "too_large"
)

// Error is an operation refused or failed. Its message is the one a
// front door shows its client as it is.
type Error struct {
	// Kind is one of ErrNotFound, ErrInvalid, ErrConflict, ErrUnavailable,
	// ErrTooLarge.
	Kind error
	// Code says which refusal it is (the Code constants).
	Code string
	// Field names the part of the request at fault, if any ("id",
	// "input", "data.amount", "cursor").
	Field   string
	Message string
	// Retry reports that trying again shortly may succeed (overload, a
	// shutdown, an instance moving between processes).
	Retry bool
	// Err is the cause, if any.
	Err error
}

func (e *Error) Error() string { return e.Message }

// Is matches the Error's Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Invalid is an ErrInvalid naming field, for reason ("must be an object").
func Invalid(field, reason string) *Error {
	return &Error{Kind: ErrInvalid, Code: CodeInvalidField, Field: field, Message: field + " " + reason}
}

func notFound(code, field, msg string) *Error {
	return &Error{Kind: ErrNotFound, Code: code, Field: field, Message: msg}
}

func conflict(code, msg string) *Error {
	return &Error{Kind: ErrConflict, Code: code, Message: msg}
}

// Unavailable is an ErrUnavailable with message msg.
func Unavailable(msg string, cause error) *Error {
	return &Error{Kind: ErrUnavailable, Code: CodeUnavailable, Message: msg, Err: cause}
}

func storeError(err error) *Error {
	return Unavailable("the store did not answer: "+err.Error(), err)
}

func retry(e *Error) *Error {
	e.Retry = true
	return e
}
