package bus

import (
	"context"
	"time"

	"github.com/batonhq/baton/transport"
)

// Receive removes and returns up to max messages from agentID's mailbox (all
// of them when max <= 0): the highest priority first and, within a priority,
// in send order. Expired messages are never returned: they are dead-lettered
// "ttl_expired" on the way. An empty mailbox returns an empty slice.
func (b *Bus) Receive(agentID string, max int) ([]*transport.Message, error) {
	mb, err := b.mailboxFor(agentID)
	if err != nil {
		return nil, err
	}
	now := b.tick()
	var at time.Time // read when a message expires
	var expired []*transport.Message
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return nil, &transport.UnknownAgentError{Agent: agentID}
	}
	n := mb.c.depth
	if max > 0 && max < n {
		n = max
	}
	out := make([]*transport.Message, 0, n)
	for len(out) < n {
		m, ok := b.takeLocked(mb, now, &at, &expired)
		if !ok {
			break
		}
		out = append(out, m)
	}
	if mb.c.depth > 0 {
		mb.signal()
	}
	mb.mu.Unlock()
	b.logExpired(expired)
	mb.shard.receive.record(time.Duration(b.tick() - now))
	b.flush()
	return out, nil
}

// TryReceive removes and returns the next message of agentID's mailbox, if
// there is one, without blocking and without allocating. ok is false when
// the mailbox is empty.
func (b *Bus) TryReceive(agentID string) (m *transport.Message, ok bool, err error) {
	mb, err := b.mailboxFor(agentID)
	if err != nil {
		return nil, false, err
	}
	m, ok, err = b.takeOne(mb)
	return m, ok, err
}

// ReceiveWait removes and returns the next message of agentID's mailbox,
// waiting until one arrives, ctx is done (ctx.Err() is returned), the bus
// closes (ErrClosed) or the agent is unregistered (ErrUnknownAgent).
func (b *Bus) ReceiveWait(ctx context.Context, agentID string) (*transport.Message, error) {
	if ctx == nil {
		return nil, checkCtx(ctx)
	}
	mb, err := b.mailboxFor(agentID)
	if err != nil {
		return nil, err
	}
	for {
		m, ok, err := b.takeOne(mb)
		if err != nil || ok {
			return m, err
		}
		select {
		case <-mb.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.done:
			return nil, transport.ErrClosed
		case <-mb.gone:
			return nil, &transport.UnknownAgentError{Agent: agentID}
		}
	}
}

// Ready returns a channel that receives a value when agentID's mailbox
// becomes non-empty, so that one event loop can wait on many mailboxes with
// a select and then call TryReceive or Receive. A signal may be stale (the
// mailbox was emptied meanwhile): treat it as a hint. A receive that leaves
// messages behind signals again. Ready returns nil, which blocks forever in
// a select, for an agent that is not registered.
func (b *Bus) Ready(agentID string) <-chan struct{} {
	if mb := b.lookup(agentID); mb != nil {
		return mb.ready
	}
	return nil
}

func (b *Bus) mailboxFor(agentID string) (*mailbox, error) {
	if b.isClosed() {
		return nil, transport.ErrClosed
	}
	mb := b.lookup(agentID)
	if mb == nil {
		return nil, &transport.UnknownAgentError{Agent: agentID}
	}
	return mb, nil
}

// takeOne is the receive hot path: one lock, no allocation, and no
// reading of the wall clock unless a message expired.
func (b *Bus) takeOne(mb *mailbox) (*transport.Message, bool, error) {
	now := b.tick()
	var at time.Time // read when a message expires
	var expired []*transport.Message
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return nil, false, &transport.UnknownAgentError{Agent: mb.id}
	}
	m, ok := b.takeLocked(mb, now, &at, &expired)
	if ok && mb.c.depth > 0 {
		mb.signal()
	}
	mb.mu.Unlock()
	b.logExpired(expired)
	if ok {
		mb.shard.receive.record(time.Duration(b.tick() - now))
	}
	b.flush()
	return m, ok, nil
}

// takeLocked pops the next deliverable message, dead-lettering the expired
// ones it meets on the way (at the wall time *at, which it reads from the
// clock if it is zero). A requires_ack message goes in flight instead of
// counting as delivered.
func (b *Bus) takeLocked(mb *mailbox, now int64, at *time.Time, expired *[]*transport.Message) (*transport.Message, bool) {
	for {
		e, ok := mb.popLocked()
		if !ok {
			return nil, false
		}
		b.total.Add(-1)
		if e.exp <= now {
			if at.IsZero() {
				*at = b.clock.Now()
			}
			b.expireLocked(mb, e.m, *at)
			*expired = append(*expired, e.m)
			continue
		}
		wait := now - e.enq
		mb.shard.wait.record(time.Duration(wait))
		if e.m.Type == transport.MessageHandoff {
			mb.shard.handoff.record(time.Duration(wait))
		}
		if !e.m.RequiresAck || !b.trackLocked(mb, e.m, now) {
			mb.c.delivered++
		}
		return e.m, true
	}
}

// expireLocked dead-letters a message of mb whose TTL ran out before it was
// delivered.
func (b *Bus) expireLocked(mb *mailbox, m *transport.Message, at time.Time) {
	b.deadLetterLocked(&mb.c, m, transport.ReasonTTLExpired, 1, "bus: ttl expired before delivery", at)
	if m.RequiresAck {
		b.forgetFlightLocked(mb, m)
	}
}

// purgeExpiredLocked dead-letters every expired message of mb and returns
// how many there were.
func (b *Bus) purgeExpiredLocked(mb *mailbox, now int64, at time.Time, expired *[]*transport.Message) int {
	n := mb.queue.RemoveAll(func(e entry) bool {
		if e.exp > now {
			return false
		}
		b.expireLocked(mb, e.m, at)
		*expired = append(*expired, e.m)
		return true
	})
	mb.c.depth -= n
	b.total.Add(int64(-n))
	return n
}

// PurgeExpired dead-letters every expired message in every mailbox now,
// instead of when each would be delivered, and returns how many there
// were. WithExpirySweep runs it periodically.
func (b *Bus) PurgeExpired() int {
	at := b.clock.Now()
	now := b.tickOf(at)
	total := 0
	for _, id := range b.dir.Load().ids {
		mb := b.lookup(id)
		if mb == nil {
			continue
		}
		var expired []*transport.Message
		mb.mu.Lock()
		if !mb.closed {
			total += b.purgeExpiredLocked(mb, now, at, &expired)
		}
		mb.mu.Unlock()
		b.logExpired(expired)
	}
	b.flush()
	return total
}

func (b *Bus) scheduleSweep() {
	b.timers.after(b.cfg.sweepInterval, func() {
		b.PurgeExpired()
		b.scheduleSweep()
	})
}
