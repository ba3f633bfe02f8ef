package mcpagent

import (
	"errors"
	"fmt"
	"strconv"
)

// Error kinds of a failed run, as registry.KindOf reads them and rules see
// them as error.kind.
const (
	// KindTransport is a server that could not be reached or started, a
	// connection or process that ended, an answer that was not JSON-RPC,
	// or a call its context ended; retryable.
	KindTransport = "transport"
	// KindInvalidArguments is arguments that could not be built or that
	// the tool's input schema refuses; never retried.
	KindInvalidArguments = "invalid_arguments"
	// KindToolError is a tool that answered isError, or a server that
	// answered the call with a JSON-RPC error; retryable.
	KindToolError = "tool_error"
	// KindUnknownTool is a server that does not list the tool; never
	// retried.
	KindUnknownTool = "unknown_tool"
	// KindProtocol is a server whose answer breaks the protocol in a way
	// retrying cannot fix: an input schema that does not compile, a
	// refused tools/list; never retried.
	KindProtocol = "protocol"
	// KindInvalidResult is a result whose _meta.usage is not usage;
	// retryable, like the engine's own invalid_result.
	KindInvalidResult = "invalid_result"
)

// Sentinel errors of the package, matched with errors.Is.
var (
	// ErrClosed reports a call on an Agent that was closed.
	ErrClosed = errors.New("mcpagent: agent closed")
	// ErrInvalidConfig is matched by every *ConfigError.
	ErrInvalidConfig = errors.New("mcpagent: invalid config")
	// ErrUnknownTool is matched by every *UnknownToolError.
	ErrUnknownTool = errors.New("mcpagent: unknown tool")
	// ErrInvalidArguments is matched by every *ArgumentsError.
	ErrInvalidArguments = errors.New("mcpagent: invalid arguments")
	// ErrToolFailed is matched by every *ToolError.
	ErrToolFailed = errors.New("mcpagent: tool failed")
	// ErrTransport is matched by every *TransportError.
	ErrTransport = errors.New("mcpagent: transport failed")
)

// ConfigError reports a Config field that breaks a rule.
type ConfigError struct {
	Field  string // url, command, tool, token
	Reason string
}

// Error names the field and the problem.
func (e *ConfigError) Error() string { return "mcpagent: " + e.Field + " " + e.Reason }

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// UnknownToolError reports a tool the server does not list. Suggestion is
// the nearest listed name when one is close enough, else "".
type UnknownToolError struct {
	Server     string
	Tool       string
	Suggestion string
}

// Error names the tool, the server and, when there is one, the suggestion.
func (e *UnknownToolError) Error() string {
	msg := fmt.Sprintf("mcpagent: %s lists no tool %q", e.Server, e.Tool)
	if e.Suggestion != "" {
		msg += " (did you mean " + strconv.Quote(e.Suggestion) + "?)"
	}
	return msg
}

// Unwrap returns ErrUnknownTool.
func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

// ArgumentsError reports arguments that could not be built or that the
// tool's input schema refuses. Field is the JSON pointer of the first value
// refused ("" for the whole object); Err is the error of Config.Arguments
// when it failed.
type ArgumentsError struct {
	Tool   string
	Field  string
	Reason string
	Err    error
}

// Error names the tool, the field and the reason.
func (e *ArgumentsError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("mcpagent: arguments of %q: %s", e.Tool, e.Reason)
	}
	return fmt.Sprintf("mcpagent: arguments of %q at %s: %s", e.Tool, e.Field, e.Reason)
}

// Unwrap returns ErrInvalidArguments and Err when it is set.
func (e *ArgumentsError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidArguments}
	}
	return []error{ErrInvalidArguments, e.Err}
}

// ToolError is a tool that answered isError, or a call the server answered
// with a JSON-RPC error (Code is then its code, else 0). Message is the
// tool's text.
type ToolError struct {
	Tool    string
	Code    int64
	Message string
}

// Error returns the tool's message.
func (e *ToolError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("mcpagent: tool %q: error %d: %s", e.Tool, e.Code, e.Message)
	}
	return fmt.Sprintf("mcpagent: tool %q: %s", e.Tool, e.Message)
}

// Unwrap returns ErrToolFailed.
func (e *ToolError) Unwrap() error { return ErrToolFailed }

// TransportError is a failure to reach, start or keep talking to the
// server; Op says what was under way (connect, list tools, call).
type TransportError struct {
	Server string
	Op     string
	Err    error
}

// Error names the server, the operation and the cause.
func (e *TransportError) Error() string {
	return fmt.Sprintf("mcpagent: %s: %s: %v", e.Server, e.Op, e.Err)
}

// Unwrap returns the cause and ErrTransport.
func (e *TransportError) Unwrap() []error { return []error{e.Err, ErrTransport} }

// ProtocolError is a server that answered against the protocol in a way
// retrying cannot fix: a refused tools/list or initialize, a tool's input
// schema that does not compile.
type ProtocolError struct {
	Server string
	Reason string
}

// Error names the server and the reason.
func (e *ProtocolError) Error() string { return "mcpagent: " + e.Server + " " + e.Reason }

// ResultError is a tool's answer Baton cannot read: usage that is not
// usage, no result at all.
type ResultError struct {
	Tool   string
	Reason string
}

// Error names the tool and the reason.
func (e *ResultError) Error() string {
	return fmt.Sprintf("mcpagent: tool %q answered %s", e.Tool, e.Reason)
}
