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
	// StatusTimedOut: nobody took it in time; it was escalated if an
	// escalation agent is configured.
	StatusTimedOut Status = "timed_out"
	// StatusFailed: the bus refused the message; it never reached the target.
	StatusFailed Status = "failed"
)

// Record is the history entry of one hand-off: what the command asked for,
// when, and how it ended.
type Record struct {
	// ID is the hand-off id.
	ID string
	// From, To, Reason, Explanation and Task are the command's.
	From, To    string
	Reason      Reason
	Explanation string
	Task        string
	// Payload and Constraints are the command's (shared, read-only).
	Payload     map[string]any
	Constraints map[string]any
	// ReturnControl is the command's.
	ReturnControl bool
	// Priority is the rank the hand-off travelled at (1 critical ... 10 low).
	Priority int
	// WorkflowID, InstanceID, Step and IdempotencyKey place the hand-off.
	WorkflowID, InstanceID string
	Step                   int
	IdempotencyKey         string
	// ContextBytes is the JSON size of the context sent (-1 if it cannot be
	// encoded).
	ContextBytes int
	// MessageID is the id of the HANDOFF message on the bus.
	MessageID string
	// Status is where the hand-off stands.
	Status Status
	// Detail explains a rejection, a time-out or a failure.
	Detail string
	// Parent is, for an escalation, the id of the hand-off that timed out.
	Parent string
	// Escalation is, for a hand-off that timed out, the id of the
	// escalation hand-off it caused.
	Escalation string
	// Timestamp is when the hand-off was made (UTC).
	Timestamp time.Time
	// Settled is when it was accepted, rejected, timed out or failed (UTC).
	Settled time.Time
}

// ContextKB returns the context size in kilobytes, as hand-off logs show it.
func (r *Record) ContextKB() float64 { return float64(r.ContextBytes) / 1024 }

// Stats summarises the hand-offs a manager has handled since it started.
type Stats struct {
	// Total counts hand-offs sent (escalations included).
	Total int
	// Pending counts hand-offs waiting for their target.
	Pending int
	// Accepted, Rejected and TimedOut count how sent hand-offs ended.
	Accepted, Rejected, TimedOut int
	// Escalated counts escalation hand-offs sent after a time-out.
	Escalated int
	// Refused counts commands the validator refused (never sent).
	Refused int
	// Failed counts hand-offs the bus would not take.
	Failed int
	// SentBy counts sent hand-offs per handing-off agent.
	SentBy map[string]int
	// ReceivedBy counts sent hand-offs per target agent.
	ReceivedBy map[string]int
}

// Tally counts a list of hand-off records (an instance's, say) the way a
// Manager counts what it handled.
func Tally(recs []Record) Stats {
	s := Stats{SentBy: map[string]int{}, ReceivedBy: map[string]int{}}
	for _, r := range recs {
		switch r.Status {
		case StatusFailed:
			s.Failed++
			continue
		case StatusPending:
			s.Pending++
		case StatusAccepted:
			s.Accepted++
		case StatusRejected:
			s.Rejected++
		case StatusTimedOut:
			s.TimedOut++
		}
		s.Total++
		s.SentBy[r.From]++
		s.ReceivedBy[r.To]++
		if r.Parent != "" {
			s.Escalated++
		}
	}
	return s
}
