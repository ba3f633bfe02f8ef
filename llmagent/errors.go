package llmagent

import (
	"errors"
	"fmt"
)

// Error kinds of a failed run, as retry policies and conditions
// (error.kind) see them.
const (
	KindInvalidResult = "invalid_result"
	KindRateLimited   = "rate_limited"
	KindTransport     = "transport"
	KindLLMError      = "llm_error"
)

// ErrConfig matches every *ConfigError.
var ErrConfig = errors.New("llmagent: invalid configuration")

// ConfigError names the field of a Config that New refuses.
type ConfigError struct {
	Field  string
	Reason string
}

// Error names the field and the problem.
func (e *ConfigError) Error() string { return "llmagent: " + e.Field + " " + e.Reason }

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// StatusError is an answer of the API with a status other than 200.
type StatusError struct {
	Status int
	// Message is the error message of the answer's body, when it has one,
	// cleaned of the key.
	Message string
}

// Error reports the status and the server's message.
func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("llmagent: the model's API answered %d", e.Status)
	}
	return fmt.Sprintf("llmagent: the model's API answered %d: %s", e.Status, e.Message)
}

// AnswerError is a model answer that is not the JSON object the response
// format asks for.
type AnswerError struct {
	// Reason says what is wrong with it.
	Reason string
	// Answer is the start of the answer's text, cleaned of the key.
	Answer string
}

// Error reports the reason and the start of the answer.
func (e *AnswerError) Error() string {
	if e.Answer == "" {
		return "llmagent: the model's answer " + e.Reason
	}
	return fmt.Sprintf("llmagent: the model's answer %s: %q", e.Reason, e.Answer)
}
