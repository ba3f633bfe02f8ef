package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
)

// errGone is returned internally when a mailbox was unregistered between
// its look-up and its lock.
var errGone = errors.New("bus: mailbox gone")

// pendingSend is a send waiting for a retry of a full mailbox.
type pendingSend struct {
	mb    *mailbox
	m     *transport.Message
	start time.Time
	err   error
	idx   int // position in the caller's batch
}

// Send validates m, fills what the bus owns (message_id when empty,
// conversation_id, timestamp, TTL) and queues it for m.To. A to_agent of "*"
// or "topic:<name>" names no mailbox: broadcast and topics are decorators
// of package bus/feature.
//
// Send never blocks unless WithRetry is given. Outcomes:
//   - invalid message, done ctx, or closed bus: an error, and the message is
//     not accepted (a *ValidationError is counted in the metrics);
//   - a duplicate idempotency key: nil, and the message is neither accepted
//     nor delivered (WithReceipt reports Duplicate);
//   - unknown receiver: the message is accepted, dead-lettered
//     "receiver_not_found", and a *RoutingError matching ErrRouting and
//     ErrUnknownAgent is returned;
//   - full mailbox (or bus): a *QueueFullError naming the agent; the message
//     is dead-lettered "queue_overflow", or, with WithRetry, retried on the
//     schedule and dead-lettered "max_retries" if it never fits.
//
// The bus owns m from this call until it is received: do not modify it.
func (b *Bus) Send(ctx context.Context, m *transport.Message, opts ...SendOption) error {
	start := b.clock.Now()
	if err := b.admit(ctx, m); err != nil {
		return err
	}
	var sc sendConfig
	if len(opts) > 0 {
		sc = b.sendOptions(opts)
	}
	err := b.dispatch(ctx, m, start, &sc)
	b.flush()
	return err
}

// dispatch routes one admitted message to its mailbox.
func (b *Bus) dispatch(ctx context.Context, m *transport.Message, start time.Time, sc *sendConfig) error {
	var pend []pendingSend
	err := b.sendOne(m, start, sc, &pend, 0)
	if len(pend) > 0 {
		b.retry(ctx, pend, sc.schedule)
		err = pend[0].err
	}
	return err
}

// accept fills m and admits it once per idempotency key. It reports dup
// for a duplicate, which the caller acknowledges without delivering.
func (b *Bus) accept(m *transport.Message, start time.Time, sc *sendConfig) (dup bool, err error) {
	b.fill(m, start)
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
// at the same index (nil for success). Messages that meet a full mailbox
// retry together (with WithRetry), so the call takes as long as the slowest
// message, not the sum of all of them.
func (b *Bus) SendAll(ctx context.Context, msgs []*transport.Message, opts ...SendOption) []error {
	start := b.clock.Now()
	var sc sendConfig
	if len(opts) > 0 {
		sc = b.sendOptions(opts)
	}
	sc.receipt = nil
	errs := make([]error, len(msgs))
	var pend []pendingSend
	for i, m := range msgs {
		if err := b.admit(ctx, m); err != nil {
			errs[i] = err
			continue
		}
		errs[i] = b.sendOne(m, start, &sc, &pend, i)
	}
	if len(pend) > 0 {
		b.retry(ctx, pend, sc.schedule)
		for _, p := range pend {
			errs[p.idx] = p.err
		}
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
			zap.Int("failed", failed), zap.Duration("latency", b.clock.Now().Sub(start)))
	}
	return errs
}

func (b *Bus) sendOptions(opts []SendOption) sendConfig {
	var sc sendConfig
	for _, o := range opts {
		o(&sc)
	}
	if sc.retry && len(sc.schedule) == 0 {
		sc.schedule = b.cfg.retrySchedule
	}
	sc.retry = sc.retry && len(sc.schedule) > 0
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

// fill sets the fields the bus owns when the sender left them empty.
func (b *Bus) fill(m *transport.Message, now time.Time) {
	if m.MessageID == "" {
		m.MessageID = b.cfg.ids()
	}
	if m.ConversationID == "" {
		m.ConversationID = m.MessageID
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = now.UTC()
	}
	if m.TTL == 0 {
		m.TTL = transport.DefaultTTL
	}
}

// sendOne fills, admits and routes one point-to-point message. When the
// mailbox is full and sc asks for retries, it appends the send to pend and
// returns nil.
func (b *Bus) sendOne(m *transport.Message, start time.Time, sc *sendConfig, pend *[]pendingSend, idx int) error {
	if dup, err := b.accept(m, start, sc); dup || err != nil {
		return err
	}
	mb := b.lookup(m.To)
	if mb == nil {
		return b.unroutable(m, start)
	}
	if len(mb.required) > 0 {
		if err := mb.checkContent(m); err != nil {
			b.unaccept(m)
			b.refuse(m, err)
			return err
		}
	}
	full := overflowDeadLetter
	switch {
	case sc.offer:
		full = overflowRefuse
	case sc.retry:
		full = overflowRetry
	}
	err := b.enqueue(mb, m, start, full)
	switch {
	case err == errGone:
		return b.unroutable(m, start)
	case err != nil && sc.retry:
		*pend = append(*pend, pendingSend{mb: mb, m: m, start: start, err: err, idx: idx})
		return nil
	}
	return err
}

// overflow says what enqueue does with a message that meets a full mailbox.
type overflow uint8

const (
	// overflowDeadLetter accepts the message and dead-letters it
	// "queue_overflow".
	overflowDeadLetter overflow = iota
	// overflowRetry accepts the message and marks it as waiting for a
	// retry (WithRetry).
	overflowRetry
	// overflowRefuse neither accepts nor dead-letters the message, and
	// frees its idempotency key: its sender keeps it (OfferWork).
	overflowRefuse
)

// enqueue is the hot path: one lock of the receiver's mailbox, no
// allocation. A full mailbox is handled as full says.
func (b *Bus) enqueue(mb *mailbox, m *transport.Message, start time.Time, full overflow) error {
	now := start.UnixNano()
	e := entry{m: m, enq: now, exp: m.ExpiresAt().UnixNano()}
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return errGone
	}
	var expired []*transport.Message
	if err := b.reserveLocked(mb, now, start, &expired); err != nil {
		switch full {
		case overflowRetry:
			mb.c.accepted++
			mb.c.retrying++
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
	b.recordSent(mb, m, start)
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

func (b *Bus) recordSent(mb *mailbox, m *transport.Message, start time.Time) {
	d := b.clock.Now().Sub(start)
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
	d := transport.DeadLetter{Message: m, Reason: reason, At: at.UTC(), Attempts: attempts, LastError: lastErr, Retries: retriesOf(m)}
	if alert, ok := b.dlq.add(d); ok {
		b.raiseAlert(alert)
	}
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

// retry runs the retry schedule for sends that met a full mailbox. All of
// them wait on the same schedule in the calling goroutine, so a batch
// retries concurrently without a goroutine per message.
func (b *Bus) retry(ctx context.Context, pend []pendingSend, schedule []time.Duration) {
	waiting := make([]*pendingSend, len(pend))
	for i := range pend {
		waiting[i] = &pend[i]
	}
	attempts := 1
	for _, wait := range schedule {
		if err := b.timers.sleep(ctx, b.done, wait); err != nil {
			now := b.clock.Now()
			for _, p := range waiting {
				p.err = fmt.Errorf("%w (stopped retrying: %w)", p.err, err)
				b.giveUp(p, transport.ReasonQueueOverflow, attempts, now)
			}
			return
		}
		attempts++
		now := b.clock.Now()
		still := waiting[:0]
		for _, p := range waiting {
			b.retries.Add(1)
			if ce := b.log.Check(zap.DebugLevel, "send retry"); ce != nil {
				ce.Write(zap.String("category", "retry"), messageFields(p.m),
					zap.Int("attempt", attempts), zap.Duration("wait", wait))
			}
			p.err = b.retryEnqueue(p, now)
			if errors.Is(p.err, transport.ErrQueueFull) {
				still = append(still, p)
			}
		}
		waiting = still
		if len(waiting) == 0 {
			return
		}
	}
	now := b.clock.Now()
	for _, p := range waiting {
		var full *transport.QueueFullError
		if errors.As(p.err, &full) {
			full.Attempts = attempts
		}
		b.giveUp(p, transport.ReasonMaxRetries, attempts, now)
	}
}

// retryEnqueue tries a waiting send again; the message is already counted
// as accepted and retrying in its mailbox.
func (b *Bus) retryEnqueue(p *pendingSend, at time.Time) error {
	mb, m := p.mb, p.m
	now := at.UnixNano()
	var expired []*transport.Message
	mb.mu.Lock()
	if mb.closed {
		mb.c.retrying--
		err := &transport.RoutingError{To: m.To, Reason: "receiver not found", Err: transport.ErrUnknownAgent}
		b.deadLetterLocked(&mb.c, m, transport.ReasonReceiverNotFound, 1, err.Error(), at)
		mb.mu.Unlock()
		b.logDeadLetter(m, transport.ReasonReceiverNotFound, err.Error())
		return err
	}
	if err := b.reserveLocked(mb, now, at, &expired); err != nil {
		mb.mu.Unlock()
		b.logExpired(expired)
		return err
	}
	mb.c.retrying--
	if m.Type == transport.MessageHandoff {
		mb.c.handoffs++
	}
	b.pushLocked(mb, entry{m: m, enq: now, exp: m.ExpiresAt().UnixNano()}, false)
	mb.mu.Unlock()
	b.logExpired(expired)
	b.recordSent(mb, m, p.start)
	return nil
}

// giveUp dead-letters a send that stopped retrying.
func (b *Bus) giveUp(p *pendingSend, reason transport.DeadLetterReason, attempts int, at time.Time) {
	p.mb.mu.Lock()
	p.mb.c.retrying--
	b.deadLetterLocked(&p.mb.c, p.m, reason, attempts, p.err.Error(), at)
	p.mb.mu.Unlock()
	b.logDeadLetter(p.m, reason, p.err.Error())
}

// retryOrDeadLetter is what a send with WithRetry (retry), or without it,
// does with a message that meets a full mailbox.
func retryOrDeadLetter(retry bool) overflow {
	if retry {
		return overflowRetry
	}
	return overflowDeadLetter
}
