package natsserver

import (
	"errors"
	"fmt"
)

// ErrNotReady means the server did not become ready for connections within
// the start timeout.
var ErrNotReady = errors.New("natsserver: server not ready for connections")

// ConfigError is a Config field with a value Start cannot use.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("natsserver: config %s: %s", e.Field, e.Reason)
}
