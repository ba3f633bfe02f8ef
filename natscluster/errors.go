package natscluster

import (
	"errors"
	"fmt"
)

// ErrClosed means the node has been closed.
var ErrClosed = errors.New("natscluster: closed")

// ConfigError is a Config field with a value Start cannot use.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("natscluster: config %s: %s", e.Field, e.Reason)
}
