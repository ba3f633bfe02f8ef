package server

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotLoopback refuses to listen on an address other than loopback
	// without tokens.
	ErrNotLoopback = errors.New("server: refusing to listen on a non-loopback address without --token-file")
	// ErrNATSNotLoopback refuses to let the embedded NATS server, which has
	// no authentication, listen on an address other than loopback.
	ErrNATSNotLoopback = errors.New("server: the embedded NATS server listens on loopback only (--nats-listen); for agents on other machines run a NATS server with authentication and pass --nats URL")
	// ErrNoTokens means the token file holds no token.
	ErrNoTokens = errors.New("server: the token file holds no token")
	// ErrNoWorkflows means the workflows directory holds no workflow file.
	ErrNoWorkflows = errors.New("server: no workflow file (*.yaml, *.yml) in the workflows directory")
	// ErrStopping means the server is stopping or closed: it reloads no
	// workflow.
	ErrStopping = errors.New("server: stopping")
)

// ConfigError names the Config field that is wrong.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("server: %s %s", e.Field, e.Reason) }

// WorkflowError is a workflow directory that cannot be served: files that
// do not load (their positioned errors joined in Err) or two files that
// claim the same workflow version.
type WorkflowError struct {
	Dir string
	Err error
}

func (e *WorkflowError) Error() string {
	return fmt.Sprintf("server: workflows in %s:\n%v", e.Dir, e.Err)
}

// Unwrap returns the load errors.
func (e *WorkflowError) Unwrap() error { return e.Err }
