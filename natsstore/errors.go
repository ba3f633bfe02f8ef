package natsstore

import (
	"errors"
	"fmt"

	"github.com/batonhq/baton/record"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrClosed means the store has been closed.
	ErrClosed = errors.New("natsstore: closed")
	// ErrFenced means a commit was refused because the instance changed
	// since this store last read or wrote it: another engine owns it now.
	// Every *ConflictError matches it.
	ErrFenced = errors.New("natsstore: instance changed since this store read it")
	// ErrCorrupt means a record in the store cannot be read back. Every
	// *CorruptError matches it.
	ErrCorrupt = errors.New("natsstore: corrupt record")
	// ErrInvalidID means an instance id cannot be stored: it is empty.
	ErrInvalidID = errors.New("natsstore: invalid instance id")
	// ErrTooLarge means a record does not fit in one message of the server
	// (its max_payload). Every *TooLargeError matches it.
	ErrTooLarge = errors.New("natsstore: record larger than the server's max payload")
	// ErrServerTooOld means the NATS server lacks features the store uses.
	ErrServerTooOld = errors.New("natsstore: nats server too old")
	// ErrReadOnly means a write to a store opened with OpenReadOnly.
	// Nothing was sent to the server.
	ErrReadOnly = errors.New("natsstore: store opened read-only")
	// ErrNoStore means OpenReadOnly found no store under the prefix: its
	// streams or bucket are missing. Every *NoStoreError matches it.
	ErrNoStore = errors.New("natsstore: no store under this prefix")
	// ErrNoStorage means the server refuses the store's writes for want
	// of storage (its storage limit reached, its disk full): Writable
	// answers it until a write goes through again.
	ErrNoStorage = errors.New("natsstore: the server refuses writes for want of storage")
)

// NoStoreError is a prefix OpenReadOnly found no store under: Missing
// names the first stream or bucket it looked for and did not find.
type NoStoreError struct {
	Prefix  string
	Missing string // "stream <prefix>_steps_0", "bucket <prefix>_workflows"...
}

func (e *NoStoreError) Error() string {
	return fmt.Sprintf("natsstore: no store under prefix %q on this server (%s not found)", e.Prefix, e.Missing)
}

// Unwrap returns ErrNoStore.
func (e *NoStoreError) Unwrap() error { return ErrNoStore }

// ConfigError is a Config field with a value Open cannot use.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("natsstore: config %s: %s", e.Field, e.Reason)
}

// ConflictError is a commit refused because the instance is not at the
// revision this store last saw: another writer committed a step since (or
// the instance exists and this store never read it). Nothing of the step
// was written.
type ConflictError struct {
	Instance string
	Expected uint64 // the revision this store expected, 0 for "no instance yet"
	Err      error  // the server's answer
}

func (e *ConflictError) Error() string {
	if e.Expected == 0 {
		return fmt.Sprintf("natsstore: commit instance %q: the instance exists but this store has not read it: %v", e.Instance, e.Err)
	}
	return fmt.Sprintf("natsstore: commit instance %q: changed since revision %d that this store last saw: %v", e.Instance, e.Expected, e.Err)
}

// Unwrap returns ErrFenced and the server's answer.
func (e *ConflictError) Unwrap() []error { return []error{ErrFenced, e.Err} }

// NotOwnerError is a commit refused because the store does not hold the
// lease of the instance's partition: it never took it (Fence), gave it up
// (Unfence), or another store took it over since. Nothing was written.
type NotOwnerError struct {
	Instance  string // "" when Fence was refused
	Partition int
	Reason    string
}

func (e *NotOwnerError) Error() string {
	if e.Instance == "" {
		return fmt.Sprintf("natsstore: partition %d: %s", e.Partition, e.Reason)
	}
	return fmt.Sprintf("natsstore: commit instance %q: partition %d: %s", e.Instance, e.Partition, e.Reason)
}

// Unwrap returns ErrFenced and record.ErrNotOwner.
func (e *NotOwnerError) Unwrap() []error { return []error{ErrFenced, record.ErrNotOwner} }

// CorruptError says which record could not be read back: the message at
// Seq of Subject (or the key-value entry Subject).
type CorruptError struct {
	Subject  string
	Seq      uint64
	Instance string // empty when the record is not an instance's
	Err      error
}

func (e *CorruptError) Error() string {
	if e.Instance == "" {
		return fmt.Sprintf("natsstore: corrupt record %s (seq %d): %v", e.Subject, e.Seq, e.Err)
	}
	return fmt.Sprintf("natsstore: corrupt record of instance %q, %s (seq %d): %v", e.Instance, e.Subject, e.Seq, e.Err)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// EncodeError means a step, a dead letter or a workflow source could not be
// encoded: a value in the named field has no JSON form (a NaN, a channel, a
// function...). Nothing was written.
type EncodeError struct {
	Instance string // empty for a workflow source or a dead letter
	Field    string // "snapshot", "entries[i]", "outbox[i]", "dead_letter" or "workflow"
	Err      error
}

func (e *EncodeError) Error() string {
	if e.Instance == "" {
		return fmt.Sprintf("natsstore: encode %s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("natsstore: instance %q: encode %s: %v", e.Instance, e.Field, e.Err)
}

// Unwrap returns the cause.
func (e *EncodeError) Unwrap() error { return e.Err }

// TooLargeError is a record larger than the largest message the server
// takes. Raise the server's max_payload (the embedded server takes 8 MiB).
type TooLargeError struct {
	Instance string // empty for a workflow source or a dead letter
	Size     int
	Max      int64
}

func (e *TooLargeError) Error() string {
	what := "record"
	if e.Instance != "" {
		what = fmt.Sprintf("step of instance %q", e.Instance)
	}
	return fmt.Sprintf("natsstore: %s is %d bytes, the server takes at most %d (its max_payload)", what, e.Size, e.Max)
}

// Unwrap returns ErrTooLarge.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// IDError is an instance id that cannot be stored.
type IDError struct {
	ID     string
	Reason string
}

func (e *IDError) Error() string { return fmt.Sprintf("natsstore: snapshot.id %q: %s", e.ID, e.Reason) }

// Unwrap returns ErrInvalidID.
func (e *IDError) Unwrap() error { return ErrInvalidID }

// RequestError is a request to the server that failed (a timeout, a lost
// connection, a stream the server refused...). For a commit, the step may
// or may not have been written; the next commit of the instance finds out
// first, and follows that step if it was.
type RequestError struct {
	Op       string // "commit", "read", "open"...
	Instance string
	Err      error
}

func (e *RequestError) Error() string {
	if e.Instance == "" {
		return fmt.Sprintf("natsstore: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("natsstore: %s instance %q: %v", e.Op, e.Instance, e.Err)
}

// Unwrap returns the cause.
func (e *RequestError) Unwrap() error { return e.Err }
