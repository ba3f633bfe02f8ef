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
	// ErrNotOwner means a store refused a commit because the instance
	// belongs to another engine now (a store shared by several engines,
	// each owning a share of the instances): the instance must leave this
	// engine's memory, and its owner continues it from the store.
	ErrNotOwner = errors.New("engine: instance owned by another engine")
	// ErrInvalidID matches every *IDError: an instance id a caller may not
	// choose (see CheckID).
	ErrInvalidID = errors.New("record: invalid instance id")
	// ErrBadCursor means a list was given a cursor its store did not
	// give: mangled, or from another store.
	ErrBadCursor = errors.New("record: not a cursor of this store")
)
