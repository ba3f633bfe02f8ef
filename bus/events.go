package bus

import (
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/transport"
)

// events defers work that must not run under the bus's locks: callbacks to
// subscribers, and the notifications that go into other mailboxes. Code
// holding a lock queues a function with later; every public operation calls
// flush once its locks are released. One flusher at a time runs the queue
// in order, so events are observed in the order they were queued, and a
// function that triggers new events (a notification filling a mailbox)
// only queues them for the running flusher.
type events struct {
	mu      sync.Mutex
	q       []func()
	running bool
	n       atomic.Int32 // len(q), read without the lock on the hot path

	subMu   sync.Mutex
	nextSub int
	dead    map[int]func(transport.DeadLetter)
	ndead   atomic.Int32 // len(dead)
}

// later queues f to run, outside every lock, at the next flush.
func (b *Bus) later(f func()) {
	b.ev.mu.Lock()
	b.ev.q = append(b.ev.q, f)
	b.ev.n.Store(int32(len(b.ev.q)))
	b.ev.mu.Unlock()
}

// flush runs the queued functions unless another goroutine already does. It
// costs one atomic load, inlined, when nothing is queued.
func (b *Bus) flush() {
	if b.ev.n.Load() != 0 {
		b.runQueued()
	}
}

func (b *Bus) runQueued() {
	b.ev.mu.Lock()
	if b.ev.running {
		b.ev.mu.Unlock()
		return
	}
	b.ev.running = true
	for len(b.ev.q) > 0 {
		q := b.ev.q
		b.ev.q = nil
		b.ev.n.Store(0)
		b.ev.mu.Unlock()
		for _, f := range q {
			f()
		}
		b.ev.mu.Lock()
	}
	b.ev.running = false
	b.ev.mu.Unlock()
}

// OnDeadLetter calls f with each message the bus dead-letters, until the
// returned function is called: a durable store can keep them. f runs
// outside the bus's locks in the goroutine of whichever bus call caused or
// followed the dead letter; it may call the bus but must not block. The
// DeadLetter's Message is a copy f may keep.
func (b *Bus) OnDeadLetter(f func(transport.DeadLetter)) (cancel func()) {
	if f == nil {
		return func() {}
	}
	return subscribe(&b.ev, &b.ev.dead, &b.ev.ndead, f)
}

// subscribe adds f (not nil) to subs under ev.subMu, keeping n (when given) equal to
// len(*subs) for lock-free checks, and returns the function that removes it.
func subscribe[F any](ev *events, subs *map[int]F, n *atomic.Int32, f F) (cancel func()) {
	ev.subMu.Lock()
	defer ev.subMu.Unlock()
	if *subs == nil {
		*subs = make(map[int]F)
	}
	id := ev.nextSub
	ev.nextSub++
	(*subs)[id] = f
	if n != nil {
		n.Store(int32(len(*subs)))
	}
	return func() {
		ev.subMu.Lock()
		defer ev.subMu.Unlock()
		delete(*subs, id)
		if n != nil {
			n.Store(int32(len(*subs)))
		}
	}
}

func (b *Bus) deadLetterSubscribers() []func(transport.DeadLetter) {
	b.ev.subMu.Lock()
	defer b.ev.subMu.Unlock()
	return sortedSubs(b.ev.dead)
}

func sortedSubs[F any](m map[int]F) []F {
	out := make([]F, 0, len(m))
	for id := 0; len(out) < len(m); id++ {
		if f, ok := m[id]; ok {
			out = append(out, f)
		}
	}
	return out
}
