package bus

import (
	"context"
	"sync"
	"time"
)

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

const numReasons = len(reasons)

func (r DeadLetterReason) index() int {
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
}

// deadLetters is the bounded dead-letter queue, oldest first.
type deadLetters struct {
	mu    sync.Mutex
	items []DeadLetter
	limit int
}

func (q *deadLetters) add(d DeadLetter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) >= q.limit {
		// Drop the oldest by moving the slice's start: append reallocates
		// now and then, so a full queue costs O(1) amortised per letter.
		q.items[0] = DeadLetter{}
		q.items = q.items[1:]
	}
	q.items = append(q.items, d)
}

// take removes and returns the oldest dead letter whose message has id.
func (q *deadLetters) take(id string) (DeadLetter, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, d := range q.items {
		if d.Message.MessageID == id {
			q.items = append(q.items[:i], q.items[i+1:]...)
			return d, true
		}
	}
	return DeadLetter{}, false
}

// DeadLetters returns a copy of the dead-letter queue, oldest first. The
// messages are the dead-lettered ones themselves: treat them as read-only.
func (b *Bus) DeadLetters() []DeadLetter {
	b.dlq.mu.Lock()
	defer b.dlq.mu.Unlock()
	return append([]DeadLetter(nil), b.dlq.items...)
}

// Requeue takes the dead letter of message id out of the queue and sends it
// again to its receiver with a fresh timestamp (so a message that expired
// gets its whole TTL again). The new attempt counts as a new acceptance; if
// it fails, the message is dead-lettered again and the error is returned.
// An id not in the queue returns an error matching ErrDeadLetterNotFound.
func (b *Bus) Requeue(id string) error {
	if b.isClosed() {
		return ErrClosed
	}
	d, ok := b.dlq.take(id)
	if !ok {
		return &DeadLetterNotFoundError{MessageID: id}
	}
	b.requeued.Add(1)
	m := d.Message
	m.Timestamp = time.Time{}
	return b.Send(context.Background(), m)
}

// Discard removes the dead letter of message id from the queue for good. The
// metrics still count it as dead-lettered. An id not in the queue returns an
// error matching ErrDeadLetterNotFound.
func (b *Bus) Discard(id string) error {
	if _, ok := b.dlq.take(id); !ok {
		return &DeadLetterNotFoundError{MessageID: id}
	}
	b.discarded.Add(1)
	return nil
}
