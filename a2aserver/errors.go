package a2aserver

import (
	"errors"

	"github.com/batonhq/baton/ops"
)

// JSON-RPC error codes: the standard ones and A2A's.
const (
	CodeParseError           = -32700
	CodeInvalidRequest       = -32600
	CodeMethodNotFound       = -32601
	CodeInvalidParams        = -32602
	CodeInternal             = -32603
	CodeTaskNotFound         = -32001
	CodeTaskNotCancelable    = -32002
	CodeUnsupportedOperation = -32004
)

// Error is a JSON-RPC error answer: its code, its message and, when the
// error names a part of the request, that field in its data.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Data holds the field at fault ({"field": "message.parts"}) and,
	// for an error that may pass, {"retry": true}.
	Data map[string]any `json:"data,omitempty"`
}

func (e *Error) Error() string { return "a2aserver: " + e.Message }

func rpcError(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// invalidParams is a -32602 naming field.
func invalidParams(field, msg string) *Error {
	return &Error{Code: CodeInvalidParams, Message: msg, Data: map[string]any{"field": field}}
}

// fromOps turns an operation's error into its JSON-RPC error.
func fromOps(err error) *Error {
	var oe *ops.Error
	if !errors.As(err, &oe) {
		return rpcError(CodeInternal, err.Error())
	}
	var e *Error
	switch {
	case errors.Is(err, ops.ErrNotFound) && oe.Code == ops.CodeUnknownInstance:
		e = rpcError(CodeTaskNotFound, oe.Message)
	case errors.Is(err, ops.ErrInvalid):
		// The field is the operation's: input.amount for a start, data.x
		// for a signal.
		return invalidParams(oe.Field, oe.Message)
	case errors.Is(err, ops.ErrConflict) && oe.Code == ops.CodeFinished:
		e = rpcError(CodeTaskNotCancelable, oe.Message)
	case errors.Is(err, ops.ErrConflict) && oe.Code == ops.CodeNotWaiting:
		e = rpcError(CodeUnsupportedOperation, oe.Message)
	case errors.Is(err, ops.ErrConflict):
		// A messageId sent again with another message.
		return invalidParams("message.messageId", oe.Message)
	default:
		e = rpcError(CodeInternal, oe.Message)
	}
	if oe.Retry {
		e.Data = map[string]any{"retry": true}
	}
	return e
}
