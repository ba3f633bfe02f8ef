package bus

import (
	"slices"
	"sync"

	"github.com/batonhq/baton/transport"
)

// entry is a queued message with the bus's bookkeeping, stored by value in
// the rings so that queueing a message allocates nothing.
type entry struct {
	m   *transport.Message
	enq int64 // bus-clock unix nanoseconds when enqueued
	exp int64 // bus-clock unix nanoseconds when the TTL runs out
}

// ring is a FIFO of entries on a power-of-two circular buffer.
type ring struct {
	buf  []entry
	head int
	n    int
}

func (r *ring) push(e entry) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = e
	r.n++
}

// pushFront puts e before every other entry, for a redelivery that keeps
// its place at the head of its priority.
func (r *ring) pushFront(e entry) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1) & (len(r.buf) - 1)
	r.buf[r.head] = e
	r.n++
}

func (r *ring) pop() entry {
	e := r.buf[r.head]
	r.buf[r.head] = entry{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return e
}

func (r *ring) grow() {
	size := max(8, 2*len(r.buf))
	buf := make([]entry, size)
	for i := 0; i < r.n; i++ {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

// removeIf drops, in order, every entry for which drop returns true.
func (r *ring) removeIf(drop func(entry) bool) {
	kept := 0
	for i := 0; i < r.n; i++ {
		e := r.buf[(r.head+i)&(len(r.buf)-1)]
		if drop(e) {
			continue
		}
		r.buf[(r.head+kept)&(len(r.buf)-1)] = e
		kept++
	}
	for i := kept; i < r.n; i++ {
		r.buf[(r.head+i)&(len(r.buf)-1)] = entry{}
	}
	r.n = kept
}

// counts are one mailbox's accounting figures. They change only under the
// mailbox's lock, each transition keeping
// accepted = delivered + dead + depth + deferred + inflight.
type counts struct {
	accepted  uint64
	delivered uint64
	dead      uint64
	deadBy    [transport.NumReasons]uint64
	expired   uint64
	handoffs  uint64
	depth     int
	deferred  int // waiting in a sender's outbound queue for rate-limit tokens
	inflight  int // received, requires_ack, neither acked nor redelivered yet
}

// waiting reports whether messages for the mailbox are still outside it
// (rate-limited), which keeps its figures alive after Unregister.
func (c *counts) waiting() bool { return c.deferred > 0 }

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
	c.deferred += o.deferred
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

	br         *breaker // nil unless WithCircuitBreaker
	throttleAt int      // depth at which the mailbox becomes throttled
	overloadAt int      // depth at which it becomes overloaded
	recoverAt  int      // depth at or below which it has recovered

	mu     sync.Mutex
	closed bool
	rings  [transport.NumPriorities]ring
	c      counts

	// At-least-once delivery (delivery.go).
	unacked  map[string]*flight // requires_ack messages delivered and not yet acked
	due      flightHeap         // the in-flight ones, by ack deadline
	ackTimer *timer
	ackAt    int64  // deadline ackTimer is armed for
	ackGen   uint64 // bumped each time ackTimer is armed

	// Backpressure (pressure.go).
	level    transport.PressureLevel
	waitEWMA int64               // smoothed time in mailbox of delivered messages, ns
	senders  map[string]struct{} // told of the current pressure
}

func newMailbox(id string, mc mailboxConfig, sh *shard, bp Backpressure) *mailbox {
	mb := &mailbox{
		id:        id,
		agentType: mc.agentType,
		capacity:  mc.capacity,
		required:  slices.Clone(mc.required),
		shard:     sh,
		ready:     make(chan struct{}, 1),
		gone:      make(chan struct{}),
	}
	mb.throttleAt, mb.overloadAt, mb.recoverAt = bp.marks(mc.capacity)
	return mb
}

// pushLocked queues e at its priority and wakes a waiter if the mailbox was
// empty.
func (mb *mailbox) pushLocked(e entry) {
	mb.rings[e.m.Priority.Index()].push(e)
	mb.c.depth++
	if mb.c.depth == 1 {
		mb.signal()
	}
}

// popLocked takes the oldest entry of the highest non-empty priority.
func (mb *mailbox) popLocked() (entry, bool) {
	for p := transport.NumPriorities - 1; p >= 0; p-- {
		if mb.rings[p].n > 0 {
			mb.c.depth--
			return mb.rings[p].pop(), true
		}
	}
	return entry{}, false
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
