package natsserver

import (
	"errors"
	"fmt"
)

// ErrNotReady means the server did not become ready for connections within
// the start timeout.
var ErrNotReady = errors.New("natsserver: server not ready for connections")

// ErrUnhealthy means JetStream does not take writes now. Every
// *HealthError matches it.
var ErrUnhealthy = errors.New("natsserver: JetStream does not take writes")

// ConfigError is a Config field with a value Start cannot use.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("natsserver: config %s: %s", e.Field, e.Reason)
}

// HealthError says why JetStream does not take writes now (Server.Healthy).
type HealthError struct {
	Reason string
}

func (e *HealthError) Error() string {
	return "natsserver: JetStream does not take writes: " + e.Reason
}

// Unwrap returns ErrUnhealthy.
func (e *HealthError) Unwrap() error { return ErrUnhealthy }
