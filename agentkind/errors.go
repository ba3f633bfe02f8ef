package agentkind

import (
	"errors"
	"strconv"
)

// ErrMissingEnv matches every *EnvError.
var ErrMissingEnv = errors.New("agentkind: environment variable not set")

// ErrUnavailable reports an agent of a kind this build does not include.
var ErrUnavailable = errors.New("agentkind: agent kind not available")

// EnvError names the environment variable an agent's key names that is
// not set (or empty).
type EnvError struct {
	Agent string // the agent's id
	Key   string // the workflow key naming the variable: key_env, token_env, ...
	Var   string // the variable's name
}

// Error names the agent, the key and the variable.
func (e *EnvError) Error() string {
	return "agentkind: agent " + strconv.Quote(e.Agent) + ": " + e.Key + " " + e.Var + " is not set"
}

// Unwrap returns ErrMissingEnv.
func (e *EnvError) Unwrap() error { return ErrMissingEnv }

// AgentError is an agent whose handler could not be built.
type AgentError struct {
	Agent string // the agent's id
	Kind  string // its kind: http, a2a, mcp or llm
	Err   error
}

// Error names the agent and its kind.
func (e *AgentError) Error() string {
	return "agentkind: " + e.Kind + " agent " + strconv.Quote(e.Agent) + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *AgentError) Unwrap() error { return e.Err }
