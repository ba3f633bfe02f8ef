package record

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrUnknownInstance means no instance has the given id.
	ErrUnknownInstance = errors.New("engine: unknown instance")
	// ErrUnknownWorkflow means a store keeps no workflow source under the
	// given hash.
	ErrUnknownWorkflow = errors.New("engine: unknown workflow source")
	// ErrNilContext is what every Store method returns when given a nil
	// context: a caller's mistake, refused without touching the store.
	ErrNilContext = errors.New("record: nil context")
)
