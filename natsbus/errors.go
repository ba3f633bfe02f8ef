package natsbus

import "errors"

// Sentinels of natsbus. Errors of the message layer itself are package
// bus's (*transport.QueueFullError, *transport.UnknownAgentError, *transport.ValidationError).
var (
	// ErrClosed is returned by every operation on a closed Transport or
	// Worker.
	ErrClosed = errors.New("natsbus: closed")
	// ErrNotTaken is returned by Ack, Nack, Reject and Heartbeat for a
	// message this process did not take, or whose ack wait has passed.
	ErrNotTaken = errors.New("natsbus: message not taken here (or its ack wait passed)")
)

// ConfigError reports a Config setting that cannot work.
type ConfigError struct {
	// Field is the setting ("AckWait").
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error returns the message text.
func (e *ConfigError) Error() string { return "natsbus: config " + e.Field + " " + e.Reason }

// AnswerError reports a report the engine did not take: its answer was not
// ok. A stale answer (the step is over) is one too; the worker treats it as
// settled.
type AnswerError struct {
	// Code is the answer's code: stale, invalid or unknown_instance.
	Code string
	// Message is the engine's explanation.
	Message string
}

// Error returns the message text.
func (e *AnswerError) Error() string { return "natsbus: report refused: " + e.Code + ": " + e.Message }
