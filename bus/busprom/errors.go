package busprom

import "errors"

var (
	// ErrNoRegistry is returned by Register when it is given no registry.
	ErrNoRegistry = errors.New("busprom: registry is required")
	// ErrNoSource is returned by Register when it is given no bus to read.
	ErrNoSource = errors.New("busprom: source is required")
)
