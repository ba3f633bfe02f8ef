package bus

import (
	"slices"
	"sync"

	"github.com/batonhq/baton/internal/prioq"
	"github.com/batonhq/baton/transport"
)

// entry is a queued message with the bus's bookkeeping, stored by value in
// the mailbox's queue so that queueing a message allocates nothing.
type entry struct {
	m   *transport.Message
	enq int64 // ticks (tick.go) when enqueued
	exp int64 // ticks when the TTL runs out
}

// counts are one mailbox's accounting figures. They change only under the
// mailbox's lock, each transition keeping
// accepted = delivered + dead + depth + inflight.
type counts struct {
	accepted  uint64
	delivered uint64
	dead      uint64
	deadBy    [transport.NumReasons]uint64
	expired   uint64
	handoffs  uint64
	depth     int
	inflight  int // received, requires_ack, neither acked nor redelivered yet
}

func (c *counts) add(o *counts) {
	c.accepted += o.accepted
	c.delivered += o.delivered
	c.dead += o.dead
	for i := range c.deadBy {
		c.deadBy[i] += o.deadBy[i]
	}
	c.expired += o.expired
	c.handoffs += o.handoffs
	c.depth += o.depth
	c.inflight += o.inflight
}

// mailbox is one agent's queue: a FIFO ring per priority.
type mailbox struct {
	id        string
	agentType string
	capacity  int
	required  []string // content keys every message must carry
	shard     *shard
	ready     chan struct{} // cap 1: signalled when the mailbox becomes non-empty
	gone      chan struct{} // closed at Unregister

	mu     sync.Mutex
	closed bool
	queue  prioq.Queue[entry]
	c      counts

	// At-least-once delivery (delivery.go).
	unacked  map[string]*flight // requires_ack messages delivered and not yet acked
	spare    []*flight          // flights of acknowledged messages, for reuse
	due      flightHeap         // the in-flight ones, by ack deadline
	ackTimer *timer
	ackAt    int64  // deadline ackTimer is armed for
	ackGen   uint64 // bumped each time ackTimer is armed
}

func newMailbox(id string, mc mailboxConfig, sh *shard) *mailbox {
	mb := &mailbox{
		id:        id,
		agentType: mc.agentType,
		capacity:  mc.capacity,
		required:  slices.Clone(mc.required),
		shard:     sh,
		ready:     make(chan struct{}, 1),
		gone:      make(chan struct{}),
	}
	return mb
}

// pushLocked queues e at its priority and wakes a waiter if the mailbox was
// empty.
func (mb *mailbox) pushLocked(e entry) {
	mb.queue.Push(e.m.Priority, e)
	mb.c.depth++
	if mb.c.depth == 1 {
		mb.signal()
	}
}

// pushLocked queues e in mb. With front set (a redelivery) e goes to the
// head of its priority and, having been accepted long ago, bypasses the
// capacity checks: it counts itself in the bus's total, which reserveLocked
// does for every other push.
func (b *Bus) pushLocked(mb *mailbox, e entry, front bool) {
	if !front {
		mb.pushLocked(e)
		return
	}
	mb.queue.PushFront(e.m.Priority, e)
	mb.c.depth++
	b.total.Add(1)
	if mb.c.depth == 1 {
		mb.signal()
	}
}

// popLocked takes the oldest entry of the highest non-empty priority.
func (mb *mailbox) popLocked() (entry, bool) {
	e, ok := mb.queue.Pop()
	if ok {
		mb.c.depth--
	}
	return e, ok
}

// signal marks the mailbox ready without blocking; a pending signal is
// enough for any number of messages.
func (mb *mailbox) signal() {
	select {
	case mb.ready <- struct{}{}:
	default:
	}
}

// checkContent refuses content that lacks a key the mailbox requires.
func (mb *mailbox) checkContent(m *transport.Message) error {
	for _, k := range mb.required {
		if _, ok := m.Content[k]; !ok {
			return &transport.ValidationError{Field: "content." + k, Reason: "is required by " + mb.id}
		}
	}
	return nil
}
