package bus

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// numShards spreads the send/receive latency histograms over several
// cache-line-separated copies so that agents on different cores do not
// contend on one set of counters.
const numShards = 8

type shard struct {
	send, receive, wait, handoff histogram
	_                            [64]byte
}

// directory is an immutable view of the registered agents, replaced as a
// whole on Register and Unregister so that sends look agents up without a
// lock.
type directory struct {
	byID map[string]*mailbox
	ids  []string // sorted
}

// Bus is the in-memory message bus: one mailbox per registered agent,
// acknowledgements and a dead-letter queue. It is safe for concurrent use. Create it with New
// and release it with Close.
type Bus struct {
	cfg    config
	log    *zap.Logger
	clock  clock.Clock
	timers *timers
	real   bool      // clock is clock.Real(): see tick and now
	epoch  time.Time // tick 0 (tick.go)
	// The real clock's wall time at tick 0 (offset), as last read at tick
	// synced (tick.go's now).
	offset, synced atomic.Int64

	done      chan struct{}
	closed    atomic.Bool
	closeOnce sync.Once

	dir atomic.Pointer[directory]

	// mu guards registration and the accounting of messages that are not
	// (or no longer) in a registered mailbox.
	mu    sync.Mutex
	extra counts // unregistered mailboxes, unroutable sends, direct replies

	total     atomic.Int64 // messages in all mailboxes
	shards    [numShards]shard
	nextShard atomic.Uint32

	dlq  deadLetters
	ev   events
	idem *idempotency // nil when deduplication is off

	validationErrors atomic.Uint64
	requeued         atomic.Uint64
	discarded        atomic.Uint64
	acks             atomic.Uint64
	flow             // counters of the delivery guarantees and flow control
	ackLatency       histogram
}

// New returns a bus configured by opts. Without options it uses the wall
// clock, UUID v4 ids, a no-op logger, 1000 messages per mailbox and 10 000
// across the bus, redelivers unacknowledged requires_ack messages after 30s
// (3 deliveries at most), and remembers idempotency keys for 24h. Topics,
// broadcast, request/reply, conversations, rate limits, circuit breakers,
// backpressure signals, sender retries and dead-letter processing are
// decorators of package bus/feature.
func New(opts ...Option) *Bus {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	b := &Bus{
		cfg:    cfg,
		log:    cfg.logger,
		clock:  cfg.clock,
		real:   cfg.clock == clock.Real(),
		epoch:  cfg.clock.Now(),
		timers: newTimers(cfg.clock),
		done:   make(chan struct{}),
		dlq:    newDeadLetters(cfg.deadLetterLimit),
		idem:   newIdempotency(cfg),
	}
	b.dir.Store(&directory{byID: map[string]*mailbox{}})
	if b.real {
		b.offset.Store(b.epoch.UnixNano())
	}
	if cfg.sweepInterval > 0 {
		b.scheduleSweep()
	}
	return b
}

func (b *Bus) isClosed() bool { return b.closed.Load() }

// lookup returns the mailbox of a registered agent, or nil.
func (b *Bus) lookup(id string) *mailbox { return b.dir.Load().byID[id] }

// Register gives agentID a mailbox. The id must be new and non-empty;
// WithAgentType records the agent's type for its metrics and
// WithMailboxCapacity overrides the bus's default mailbox capacity.
func (b *Bus) Register(agentID string, opts ...MailboxOption) error {
	mc := mailboxConfig{capacity: b.cfg.mailboxCapacity}
	for _, o := range opts {
		o(&mc)
	}
	if agentID == "" {
		return &transport.ValidationError{Field: "agent_id", Reason: "is required"}
	}
	if agentID == transport.BroadcastAll || len(agentID) >= len(transport.TopicPrefix) && agentID[:len(transport.TopicPrefix)] == transport.TopicPrefix {
		return &transport.ValidationError{Field: "agent_id", Reason: "is reserved: " + agentID}
	}
	if mc.capacity < 1 {
		return &transport.ValidationError{Field: "mailbox_capacity", Reason: "must be at least 1"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.isClosed() {
		return transport.ErrClosed
	}
	old := b.dir.Load()
	if _, ok := old.byID[agentID]; ok {
		return &DuplicateAgentError{Agent: agentID}
	}
	sh := &b.shards[b.nextShard.Add(1)%numShards]
	next := &directory{byID: make(map[string]*mailbox, len(old.byID)+1)}
	for id, mb := range old.byID {
		next.byID[id] = mb
	}
	mb := newMailbox(agentID, mc, sh)
	next.byID[agentID] = mb
	i, _ := slices.BinarySearch(old.ids, agentID)
	next.ids = slices.Insert(slices.Clone(old.ids), i, agentID)
	b.dir.Store(next)
	return nil
}

// Unregister removes agentID's mailbox. Messages still queued in it are
// dead-lettered "receiver_not_found", waiters in ReceiveWait return an
// error matching ErrUnknownAgent.
func (b *Bus) Unregister(agentID string) error {
	now := b.clock.Now()
	b.mu.Lock()
	old := b.dir.Load()
	mb, ok := old.byID[agentID]
	if !ok {
		b.mu.Unlock()
		return &transport.UnknownAgentError{Agent: agentID}
	}
	next := &directory{byID: make(map[string]*mailbox, len(old.byID))}
	for id, m := range old.byID {
		if id != agentID {
			next.byID[id] = m
		}
	}
	next.ids = slices.DeleteFunc(slices.Clone(old.ids), func(id string) bool { return id == agentID })
	b.dir.Store(next)

	mb.mu.Lock()
	mb.closed = true
	close(mb.gone)
	var dropped []*transport.Message
	for {
		e, ok := mb.popLocked()
		if !ok {
			break
		}
		b.total.Add(-1)
		b.deadLetterLocked(&mb.c, e.m, transport.ReasonReceiverNotFound, 1, "bus: receiver unregistered", now)
		dropped = append(dropped, e.m)
	}
	// In-flight messages were never acknowledged: they were not processed.
	for _, f := range mb.due {
		d := f.m.Clone()
		mb.c.inflight--
		b.deadLetterLocked(&mb.c, d, transport.ReasonReceiverNotFound, d.DeliveryCount, "bus: receiver unregistered before acknowledging", now)
		dropped = append(dropped, d)
	}
	mb.unacked, mb.due, mb.spare = nil, nil, nil
	mb.ackTimer.stop()
	b.extra.add(&mb.c)
	mb.c = counts{}
	mb.mu.Unlock()
	b.mu.Unlock()

	for _, m := range dropped {
		b.logDeadLetter(m, transport.ReasonReceiverNotFound, "bus: receiver unregistered")
	}
	b.flush()
	return nil
}

// Agents returns the registered agent ids, sorted.
func (b *Bus) Agents() []string { return slices.Clone(b.dir.Load().ids) }

// Close stops the bus: later operations return ErrClosed, blocked calls
// (ReceiveWait) return ErrClosed, and every timer
// the bus owns is stopped and waited for. Queued messages stay queued and
// counted. Close is safe to call more than once; it always returns nil.
func (b *Bus) Close() error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		close(b.done)
		b.timers.close()
	})
	return nil
}
