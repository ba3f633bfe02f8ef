package bus

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
)

// errGone is returned internally when a mailbox was unregistered between
// its look-up and its lock.
var errGone = errors.New("bus: mailbox gone")

// Send validates m, fills what the bus owns (message_id when empty,
// conversation_id, timestamp, TTL) and queues it for m.To. A to_agent of "*"
// or "topic:<name>" names no mailbox: broadcast and topics are decorators
// of package bus/feature.
//
// Send never blocks. Outcomes:
//   - invalid message, done ctx, or closed bus: an error, and the message is
//     not accepted (a *ValidationError is counted in the metrics);
//   - a duplicate idempotency key: nil, and the message is neither accepted
//     nor delivered (WithReceipt reports Duplicate);
//   - unknown receiver: the message is accepted, dead-lettered
//     "receiver_not_found", and a *RoutingError matching ErrRouting and
//     ErrUnknownAgent is returned;
//   - full mailbox (or bus): a *QueueFullError naming the agent; the message
//     is dead-lettered "queue_overflow" (feature.Retry retries such sends).
//
// The bus owns m from this call until it is received: do not modify it.
func (b *Bus) Send(ctx context.Context, m *transport.Message, opts ...SendOption) error {
	start := b.now()
	if err := b.admit(ctx, m); err != nil {
		return err
	}
	var sc sendConfig
	if len(opts) > 0 {
		sc = b.sendOptions(opts)
	}
	err := b.sendOne(m, start, &sc)
	b.flush()
	return err
}

// accept fills m and admits it once per idempotency key. It reports dup
// for a duplicate, which the caller acknowledges without delivering.
func (b *Bus) accept(m *transport.Message, start time.Time, sc *sendConfig) (dup bool, err error) {
	m.Fill(start, b.cfg.ids)
	if sc != nil && sc.receipt != nil {
		*sc.receipt = Receipt{MessageID: m.MessageID}
	}
	if b.claimKey(m, sc, start.UnixNano()) {
		return true, nil
	}
	return false, nil
}

// unaccept undoes accept for a message refused afterwards.
func (b *Bus) unaccept(m *transport.Message) {
	b.releaseKey(m)
}

// SendAll sends every message of msgs in one call and reports each result
// at the same index (nil for success).
func (b *Bus) SendAll(ctx context.Context, msgs []*transport.Message, opts ...SendOption) []error {
	start := b.now()
	var sc sendConfig
	if len(opts) > 0 {
		sc = b.sendOptions(opts)
	}
	sc.receipt = nil
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		if err := b.admit(ctx, m); err != nil {
			errs[i] = err
			continue
		}
		errs[i] = b.sendOne(m, start, &sc)
	}
	b.flush()
	if ce := b.log.Check(zap.InfoLevel, "parallel send"); ce != nil {
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
			}
		}
		ce.Write(zap.String("category", "parallel_send"), zap.Int("messages", len(msgs)),
			zap.Int("failed", failed), zap.Duration("latency", time.Duration(b.tick()-start.tick)))
	}
	return errs
}

func (b *Bus) sendOptions(opts []SendOption) sendConfig {
	var sc sendConfig
	for _, o := range opts {
		o(&sc)
	}
	return sc
}

// admit refuses what must not be accepted: a closed bus, a done context, an
// invalid message.
func (b *Bus) admit(ctx context.Context, m *transport.Message) error {
	if b.isClosed() {
		return transport.ErrClosed
	}
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		b.refuse(m, err)
		return err
	}
	return nil
}

// checkCtx refuses a nil ctx, as every bus call taking one does, instead
// of panicking on it, and returns ctx.Err() otherwise.
func checkCtx(ctx context.Context) error {
	if ctx == nil {
		return &transport.ValidationError{Field: "ctx", Reason: "is required"}
	}
	return ctx.Err()
}

// refuse counts and logs a message refused as invalid.
func (b *Bus) refuse(m *transport.Message, err error) {
	b.validationErrors.Add(1)
	if ce := b.log.Check(zap.WarnLevel, "message refused"); ce != nil {
		if m == nil {
			ce.Write(zap.String("category", "validation"), zap.Error(err))
			return
		}
		ce.Write(zap.String("category", "validation"), messageFields(m), zap.Error(err))
	}
}

// sendOne fills, admits and routes one point-to-point message.
func (b *Bus) sendOne(m *transport.Message, start instant, sc *sendConfig) error {
	if dup, err := b.accept(m, start.wall, sc); dup || err != nil {
		return err
	}
	mb := b.lookup(m.To)
	if mb == nil {
		return b.unroutable(m, start.wall)
	}
	if len(mb.required) > 0 {
		if err := mb.checkContent(m); err != nil {
			b.unaccept(m)
			b.refuse(m, err)
			return err
		}
	}
	full := overflowDeadLetter
	if sc.offer {
		full = overflowRefuse
	}
	err := b.enqueue(mb, m, start, full)
	if err == errGone {
		return b.unroutable(m, start.wall)
	}
	return err
}

// overflow says what enqueue does with a message that meets a full mailbox.
type overflow uint8

const (
	// overflowDeadLetter accepts the message and dead-letters it
	// "queue_overflow".
	overflowDeadLetter overflow = iota
	// overflowRefuse neither accepts nor dead-letters the message, and
	// frees its idempotency key: its sender keeps it (OfferWork).
	overflowRefuse
)

// enqueue is the hot path: one lock of the receiver's mailbox, no
// allocation. A full mailbox is handled as full says.
func (b *Bus) enqueue(mb *mailbox, m *transport.Message, at instant, full overflow) error {
	start, now := at.wall, at.tick
	e := entry{m: m, enq: now, exp: expiryTick(m, start, now)}
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return errGone
	}
	var expired []*transport.Message
	if err := b.reserveLocked(mb, now, start, &expired); err != nil {
		switch full {
		case overflowRefuse: // neither accepted nor dead-lettered: the sender keeps it
		default:
			mb.c.accepted++
			b.deadLetterLocked(&mb.c, m, transport.ReasonQueueOverflow, 1, err.Error(), start)
		}
		mb.mu.Unlock()
		b.logExpired(expired)
		switch full {
		case overflowRefuse:
			b.unaccept(m)
		case overflowDeadLetter:
			b.logDeadLetter(m, transport.ReasonQueueOverflow, err.Error())
		}
		return err
	}
	mb.c.accepted++
	if m.Type == transport.MessageHandoff {
		mb.c.handoffs++
	}
	b.pushLocked(mb, e, false)
	mb.mu.Unlock()
	b.logExpired(expired)
	b.recordSent(mb, m, now)
	return nil
}

// reserveLocked makes room for one message in mb and in the bus, purging
// expired messages from mb first when it is full.
func (b *Bus) reserveLocked(mb *mailbox, now int64, at time.Time, expired *[]*transport.Message) error {
	if mb.c.depth >= mb.capacity {
		b.purgeExpiredLocked(mb, now, at, expired)
		if mb.c.depth >= mb.capacity {
			return &transport.QueueFullError{Agent: mb.id, Capacity: mb.capacity}
		}
	}
	capacity := int64(b.cfg.capacity)
	if b.total.Add(1) <= capacity {
		return nil
	}
	b.total.Add(-1)
	if b.purgeExpiredLocked(mb, now, at, expired) > 0 {
		if b.total.Add(1) <= capacity {
			return nil
		}
		b.total.Add(-1)
	}
	return &transport.QueueFullError{Agent: mb.id, Capacity: b.cfg.capacity, BusWide: true}
}

func (b *Bus) recordSent(mb *mailbox, m *transport.Message, start int64) {
	d := time.Duration(b.tick() - start)
	mb.shard.send.record(d)
	if ce := b.log.Check(zap.DebugLevel, "message sent"); ce != nil {
		ce.Write(zap.String("category", sendCategory(m)), messageFields(m), zap.Duration("latency", d))
	}
}

// unroutable accepts a message for an unknown receiver and dead-letters it.
func (b *Bus) unroutable(m *transport.Message, at time.Time) error {
	err := &transport.RoutingError{To: m.To, Reason: "receiver not found", Err: transport.ErrUnknownAgent}
	b.mu.Lock()
	b.extra.accepted++
	b.deadLetterLocked(&b.extra, m, transport.ReasonReceiverNotFound, 1, err.Error(), at)
	b.mu.Unlock()
	b.logDeadLetter(m, transport.ReasonReceiverNotFound, err.Error())
	return err
}

// deadLetterLocked moves an accepted message to the dead-letter queue; the
// caller holds the lock that guards c.
// A dead-lettered message gives up its idempotency key, so that a new send
// with the key is delivered.
func (b *Bus) deadLetterLocked(c *counts, m *transport.Message, reason transport.DeadLetterReason, attempts int, lastErr string, at time.Time) {
	c.dead++
	c.deadBy[reason.Index()]++
	if reason == transport.ReasonTTLExpired {
		c.expired++
	}
	d := transport.DeadLetter{Message: m, Reason: reason, At: at.UTC(), Attempts: attempts, LastError: lastErr, Retries: m.DeadLetterRetries()}
	b.dlq.add(d)
	if b.ev.ndead.Load() > 0 {
		d.Message = m.Clone()
		b.later(func() {
			for _, f := range b.deadLetterSubscribers() {
				f(d)
			}
		})
	}
	b.releaseKey(m)
}
