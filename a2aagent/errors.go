package a2aagent

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package, matched with errors.Is. The errors a
// run fails with also carry an error kind (registry.KindOf) and, for those
// retrying cannot fix, registry.Permanent.
var (
	// ErrClosed is returned by Handle after Close.
	ErrClosed = errors.New("a2aagent: agent closed")
	// ErrConfig matches every *ConfigError.
	ErrConfig = errors.New("a2aagent: invalid configuration")
	// ErrCard matches every *CardError: the agent card could not be read
	// or says nothing this client can speak.
	ErrCard = errors.New("a2aagent: unusable agent card")
	// ErrAnswer matches every *AnswerError: an answer that is not what the
	// protocol says it should be.
	ErrAnswer = errors.New("a2aagent: invalid answer")
	// ErrTask matches every *TaskError: a task that ended other than
	// completed or input-required.
	ErrTask = errors.New("a2aagent: task did not complete")
	// ErrTimeout is returned when the run's deadline passed while the task
	// was still under way (the task is cancelled first).
	ErrTimeout = errors.New("a2aagent: the task did not finish before the run's deadline")
)

// ConfigError reports a Config field New cannot accept.
type ConfigError struct {
	Field  string
	Reason string
}

// Error names the field and the problem.
func (e *ConfigError) Error() string { return "a2aagent: " + e.Field + " " + e.Reason }

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// CardError reports an agent card that could not be fetched or used.
type CardError struct {
	URL    string
	Reason string
}

// Error names the card and the problem.
func (e *CardError) Error() string {
	return fmt.Sprintf("a2aagent: agent card of %s: %s", e.URL, e.Reason)
}

// Unwrap returns ErrCard.
func (e *CardError) Unwrap() error { return ErrCard }

// StatusError is an HTTP answer with a status the protocol does not accept.
type StatusError struct {
	URL    string
	Status int
	Body   string // the start of the answer's body, for the history
}

// Error names the URL, the status and the start of the body.
func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("a2aagent: %s answered %d", e.URL, e.Status)
	}
	return fmt.Sprintf("a2aagent: %s answered %d: %s", e.URL, e.Status, e.Body)
}

// Retryable reports whether a later call may succeed: 5xx, 408 and 429.
func (e *StatusError) Retryable() bool {
	return e.Status >= 500 || e.Status == 408 || e.Status == 429
}

// Unauthorized reports a 401 or a 403.
func (e *StatusError) Unauthorized() bool { return e.Status == 401 || e.Status == 403 }

// RPCError is a JSON-RPC error the agent answered with.
type RPCError struct {
	Method  string
	Code    int
	Message string
}

// Error names the method, the code and the agent's message.
func (e *RPCError) Error() string {
	return fmt.Sprintf("a2aagent: %s: agent error %d: %s", e.Method, e.Code, e.Message)
}

// AnswerError reports an answer that does not decode or says nothing the
// protocol allows.
type AnswerError struct {
	Method string
	Reason string
}

// Error names the call and the problem.
func (e *AnswerError) Error() string {
	return fmt.Sprintf("a2aagent: %s: invalid answer: %s", e.Method, e.Reason)
}

// Unwrap returns ErrAnswer.
func (e *AnswerError) Unwrap() error { return ErrAnswer }

// TaskError reports a task that ended failed, canceled or needing
// authentication; Message is the text of its status message.
type TaskError struct {
	TaskID  string
	State   string // failed, canceled, auth-required
	Message string
}

// Error names the task, its state and the agent's words.
func (e *TaskError) Error() string {
	msg := fmt.Sprintf("a2aagent: task %s %s", e.TaskID, e.State)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Unwrap returns ErrTask.
func (e *TaskError) Unwrap() error { return ErrTask }
