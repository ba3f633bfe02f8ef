package bus

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/transport"
)

// deadLetters is the bounded dead-letter queue, oldest first.
type deadLetters struct {
	mu    sync.Mutex
	items []transport.DeadLetter
	limit int
}

func newDeadLetters(limit int) deadLetters { return deadLetters{limit: limit} }

// add queues d, dropping the oldest when the queue is full.
func (q *deadLetters) add(d transport.DeadLetter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) >= q.limit {
		// Drop the oldest by moving the slice's start: append reallocates
		// now and then, so a full queue costs O(1) amortised per letter.
		q.items[0] = transport.DeadLetter{}
		q.items = q.items[1:]
	}
	q.items = append(q.items, d)
}

// take removes and returns the oldest dead letter whose message has id.
func (q *deadLetters) take(id string) (transport.DeadLetter, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, d := range q.items {
		if d.Message.MessageID == id {
			q.items = append(q.items[:i], q.items[i+1:]...)
			return d, true
		}
	}
	return transport.DeadLetter{}, false
}

// DeadLetters returns a copy of the dead-letter queue, oldest first. The
// messages are the dead-lettered ones themselves: treat them as read-only.
func (b *Bus) DeadLetters() []transport.DeadLetter {
	b.dlq.mu.Lock()
	defer b.dlq.mu.Unlock()
	return append([]transport.DeadLetter(nil), b.dlq.items...)
}

// Requeue takes the dead letter of message id out of the queue and sends it
// again to its receiver with a fresh timestamp (so a message that expired
// gets its whole TTL again). The new attempt counts as a new acceptance; if
// it fails, the message is dead-lettered again and the error is returned.
// An id not in the queue returns an error matching ErrDeadLetterNotFound.
func (b *Bus) Requeue(id string) error {
	if b.isClosed() {
		return transport.ErrClosed
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

// DeadLetterWork accepts m and dead-letters it at once with reason: a
// sender that kept m back (sender retries offering it to a full mailbox)
// gives up on it. It is counted in m.To's mailbox when there is one, and
// reaches OnDeadLetter's callbacks like any dead letter.
func (b *Bus) DeadLetterWork(ctx context.Context, m *transport.Message, reason transport.DeadLetterReason, attempts int, lastErr string) error {
	at := b.clock.Now()
	if err := b.admit(ctx, m); err != nil {
		return err
	}
	m.Fill(at, b.cfg.ids)
	attempts = max(attempts, 1)
	counted := false
	if mb := b.lookup(m.To); mb != nil {
		mb.mu.Lock()
		if !mb.closed {
			mb.c.accepted++
			b.deadLetterLocked(&mb.c, m, reason, attempts, lastErr, at)
			counted = true
		}
		mb.mu.Unlock()
	}
	if !counted {
		b.mu.Lock()
		b.extra.accepted++
		b.deadLetterLocked(&b.extra, m, reason, attempts, lastErr, at)
		b.mu.Unlock()
	}
	b.logDeadLetter(m, reason, lastErr)
	b.flush()
	return nil
}
