package bus

import (
	"sync/atomic"

	"github.com/batonhq/baton/transport"
)

// flow holds the counters of the delivery guarantees and flow control.
type flow struct {
	redeliveries atomic.Uint64
	nacks        atomic.Uint64
	rejects      atomic.Uint64
	duplicates   atomic.Uint64
}

// Metrics returns a snapshot of the bus's metrics. It briefly locks each
// mailbox in turn; it is meant for scrapes and tests, not for a hot path.
func (b *Bus) Metrics() transport.Snapshot {
	var s transport.Snapshot
	var total counts
	b.mu.Lock()
	dir := b.dir.Load()
	s.Agents = make([]transport.AgentStats, 0, len(dir.ids))
	for _, id := range dir.ids {
		mb := dir.byID[id]
		mb.mu.Lock()
		c := mb.c
		mb.mu.Unlock()
		total.add(&c)
		s.Agents = append(s.Agents, transport.AgentStats{
			Agent: id, Type: mb.agentType, Depth: c.depth, Capacity: mb.capacity, AwaitingAck: c.inflight,
			Accepted: c.accepted, Delivered: c.delivered, DeadLettered: c.dead,
		})
	}
	total.add(&b.extra)
	b.mu.Unlock()

	s.Accepted, s.Delivered, s.DeadLettered = total.accepted, total.delivered, total.dead
	s.Queued = total.depth
	s.InFlight = total.inflight
	s.Expired = total.expired
	s.Handoffs = total.handoffs
	s.DeadLettersByReason = make(map[transport.DeadLetterReason]uint64, transport.NumReasons)
	for i, r := range transport.Reasons() {
		s.DeadLettersByReason[r] = total.deadBy[i]
	}
	b.dlq.mu.Lock()
	s.DeadLettersHeld = len(b.dlq.items)
	b.dlq.mu.Unlock()
	s.ValidationErrors = b.validationErrors.Load()
	s.Requeued = b.requeued.Load()
	s.Discarded = b.discarded.Load()
	s.Acks = b.acks.Load()
	b.flowMetrics(&s)

	var send, receive, wait, handoff histCounts
	for i := range b.shards {
		send.add(&b.shards[i].send)
		receive.add(&b.shards[i].receive)
		wait.add(&b.shards[i].wait)
		handoff.add(&b.shards[i].handoff)
	}
	s.Send, s.Receive, s.Wait, s.Handoff = send.summary(), receive.summary(), wait.summary(), handoff.summary()
	s.Ack = summarize(&b.ackLatency)
	return s
}

func summarize(h *histogram) transport.LatencySummary {
	var c histCounts
	c.add(h)
	return c.summary()
}

func (b *Bus) flowMetrics(s *transport.Snapshot) {
	s.Redeliveries = b.redeliveries.Load()
	s.Nacks = b.nacks.Load()
	s.Rejects = b.rejects.Load()
	s.Duplicates = b.duplicates.Load()
	if b.idem != nil {
		s.IdempotencyKeys = b.idem.size(b.clock.Now().UnixNano())
	}
}
