package transport

import "time"

// DeadLetterReason says why the bus gave up on a message.
type DeadLetterReason string

// The reasons a message is dead-lettered.
const (
	// ReasonReceiverNotFound: the receiver is not registered, or was
	// unregistered while the message waited.
	ReasonReceiverNotFound DeadLetterReason = "receiver_not_found"
	// ReasonTTLExpired: the message's TTL ran out before delivery.
	ReasonTTLExpired DeadLetterReason = "ttl_expired"
	// ReasonQueueOverflow: the mailbox or the bus was full and the send did
	// not retry (or stopped retrying because its context ended).
	ReasonQueueOverflow DeadLetterReason = "queue_overflow"
	// ReasonMaxRetries: the mailbox stayed full through the whole retry
	// schedule.
	ReasonMaxRetries DeadLetterReason = "max_retries"
	// ReasonRejected: the receiver refused the message.
	ReasonRejected DeadLetterReason = "rejected"
)

// reasons lists every reason in a fixed order, for per-reason counters.
var reasons = [...]DeadLetterReason{
	ReasonReceiverNotFound, ReasonTTLExpired, ReasonQueueOverflow, ReasonMaxRetries, ReasonRejected,
}

// NumReasons is the number of dead-letter reasons.
const NumReasons = len(reasons)

// Reasons returns every reason in a fixed order: the order of Index.
func Reasons() [NumReasons]DeadLetterReason { return reasons }

// Index is the reason's place in Reasons, for a table with one slot per
// reason; an unknown reason counts as the last.
func (r DeadLetterReason) Index() int {
	for i, x := range reasons {
		if x == r {
			return i
		}
	}
	return len(reasons) - 1
}

// DeadLetter is a message the bus accepted but could not deliver.
type DeadLetter struct {
	// Message is the message as it was when the bus gave up.
	Message *Message
	// Reason says why it was dead-lettered.
	Reason DeadLetterReason
	// At is when it was dead-lettered.
	At time.Time
	// Attempts is how many times the bus tried to enqueue it.
	Attempts int
	// LastError is the text of the last error, if any.
	LastError string
	// Retries is how many times dead-letter processing has already sent
	// the message again (metadata "dead_letter_retries").
	Retries int
}

// Retryable reports whether dead-letter processing sends the message again:
// every reason but "rejected" (the receiver refused it for good) and
// "ttl_expired" (its sender's deadline has passed).
func (d DeadLetter) Retryable() bool {
	return d.Reason != ReasonRejected && d.Reason != ReasonTTLExpired
}
