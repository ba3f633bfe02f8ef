package handoff

import "time"

// Status is where a dispatched hand-off stands.
type Status string

// The statuses of a hand-off record.
const (
	// StatusPending: sent, waiting for the target to accept or reject it.
	StatusPending Status = "pending"
	// StatusAccepted: the target took the hand-off.
	StatusAccepted Status = "accepted"
	// StatusRejected: the target refused it; the sender was told.
	StatusRejected Status = "rejected"
	// StatusFailed: the transport refused the work; it never reached the
	// target.
	StatusFailed Status = "failed"
)

// Record is what one hand-off asked for, when, and how it ended, as an
// instance's history tells it.
type Record struct {
	// ID is the hand-off id.
	ID string
	// From, To, Reason and Task are the hand-off's.
	From, To string
	Reason   Reason
	Task     string
	// Payload is the hand-off's (shared, read-only).
	Payload map[string]any
	// Priority is the rank the hand-off travelled at (1 critical ... 10 low).
	Priority int
	// InstanceID, Step and IdempotencyKey place the hand-off.
	InstanceID     string
	Step           int
	IdempotencyKey string
	// Status is where the hand-off stands.
	Status Status
	// Detail explains a rejection or a failure.
	Detail string
	// Timestamp is when the hand-off was made (UTC).
	Timestamp time.Time
	// Settled is when it was accepted, rejected or failed (UTC).
	Settled time.Time
}
