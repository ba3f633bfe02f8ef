package mcpserver

import (
	"errors"

	"github.com/batonhq/baton/ops"
)

// ArgumentError is a tool's argument refused before any operation: the
// result is an isError answer naming Field.
type ArgumentError struct {
	// Field names the argument ("wait", "limit", "data").
	Field string
	// Reason says what is wrong ("must be a string").
	Reason string
}

func (e *ArgumentError) Error() string { return "mcpserver: argument " + e.Field + " " + e.Reason }

// apiError is an error as the HTTP API answers it, the text of an isError
// result: {"error": {"code", "message", "field"}}.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// apiErrorOf is err as the HTTP API would show it: an *ops.Error keeps its
// code and field, an *ArgumentError is an invalid_field, anything else is
// unavailable.
func apiErrorOf(err error) apiError {
	var (
		oe *ops.Error
		ae *ArgumentError
	)
	switch {
	case errors.As(err, &ae):
		return apiError{Code: ops.CodeInvalidField, Message: ae.Field + " " + ae.Reason, Field: ae.Field}
	case errors.As(err, &oe):
		code := oe.Code
		if code == "" {
			code = ops.CodeUnavailable
		}
		return apiError{Code: code, Message: oe.Message, Field: oe.Field}
	}
	return apiError{Code: ops.CodeUnavailable, Message: err.Error()}
}
