package boltstore

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrClosed means the store has been closed.
	ErrClosed = errors.New("boltstore: closed")
	// ErrLocked means another process holds the file open and the lock was
	// not released within the open timeout (see WithTimeout).
	ErrLocked = errors.New("boltstore: file locked by another process")
	// ErrCorrupt means the file, or a record in it, cannot be read back.
	// Every *CorruptError matches it.
	ErrCorrupt = errors.New("boltstore: corrupt file")
	// ErrReadOnly is returned by every write to a store opened with
	// OpenReadOnly.
	ErrReadOnly = errors.New("boltstore: store opened read-only")
	// ErrInvalidID means an instance id cannot be stored as a key: it is
	// empty or longer than MaxIDLen bytes.
	ErrInvalidID = errors.New("boltstore: invalid instance id")
)

// OpenError is why a file could not be opened as a store.
type OpenError struct {
	Path string
	Err  error
}

func (e *OpenError) Error() string { return fmt.Sprintf("boltstore: open %s: %v", e.Path, e.Err) }

// Unwrap returns the cause.
func (e *OpenError) Unwrap() error { return e.Err }

// FormatError means the file is a bbolt database but not one this package
// wrote, or one written in a format version it does not know.
type FormatError struct {
	Path string
	Got  string // the format version found; empty when the file has none
	Want string
}

func (e *FormatError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("boltstore: %s is a bbolt file but not a baton store (no format %s marker)", e.Path, e.Want)
	}
	return fmt.Sprintf("boltstore: %s has store format %q, want %q", e.Path, e.Got, e.Want)
}

// CorruptError says where a file could not be read back: the file as a
// whole (Instance empty) or one instance's record.
type CorruptError struct {
	Path     string
	Instance string
	Err      error
}

func (e *CorruptError) Error() string {
	if e.Instance == "" {
		return fmt.Sprintf("boltstore: corrupt file %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("boltstore: corrupt file %s: instance %q: %v", e.Path, e.Instance, e.Err)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// EncodeError means a step, a dead letter or a workflow source could not be
// encoded: a value in the named field has no JSON form (a NaN, a channel, a
// function...). Nothing was written.
type EncodeError struct {
	Instance string // empty for a workflow source or a dead letter of no instance
	Field    string // "snapshot", "entries[i]", "outbox[i]", "dead_letter" or "workflow"
	Err      error
}

func (e *EncodeError) Error() string {
	if e.Instance == "" {
		return fmt.Sprintf("boltstore: encode %s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("boltstore: instance %q: encode %s: %v", e.Instance, e.Field, e.Err)
}

// Unwrap returns the cause.
func (e *EncodeError) Unwrap() error { return e.Err }

// IDError is an instance id that cannot be a key.
type IDError struct {
	ID     string
	Reason string
}

func (e *IDError) Error() string {
	id := e.ID
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	return fmt.Sprintf("boltstore: snapshot.id %q: %s", id, e.Reason)
}

// Unwrap returns ErrInvalidID.
func (e *IDError) Unwrap() error { return ErrInvalidID }

// CommitError means a step's transaction failed; nothing of the step was
// written.
type CommitError struct {
	Instance string
	Err      error
}

func (e *CommitError) Error() string {
	return fmt.Sprintf("boltstore: commit instance %q: %v", e.Instance, e.Err)
}

// Unwrap returns the cause.
func (e *CommitError) Unwrap() error { return e.Err }
