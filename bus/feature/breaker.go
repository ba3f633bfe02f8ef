package feature

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// BreakerState is the state of a receiver's circuit breaker.
type BreakerState string

// The states of a circuit breaker.
const (
	// BreakerClosed: sends pass.
	BreakerClosed BreakerState = "closed"
	// BreakerHalfOpen: one trial send passes; the others are refused.
	BreakerHalfOpen BreakerState = "half-open"
	// BreakerOpen: sends are refused.
	BreakerOpen BreakerState = "open"
)

// BreakerSettings configure Breakers. Zero fields take the defaults.
type BreakerSettings struct {
	// Failures is how many consecutive failed deliveries open the breaker
	// (10 by default).
	Failures int
	// Capacity is the fill ratio of the mailbox that opens the breaker
	// (0.9 by default).
	Capacity float64
	// OpenFor is how long the breaker stays open before it lets one trial
	// message through (60s by default).
	OpenFor time.Duration
}

func (s BreakerSettings) withDefaults() BreakerSettings {
	if s.Failures <= 0 {
		s.Failures = 10
	}
	if s.Capacity <= 0 || s.Capacity > 1 {
		s.Capacity = 0.9
	}
	if s.OpenFor <= 0 {
		s.OpenFor = time.Minute
	}
	return s
}

// BreakerStats are the figures of Breakers.
type BreakerStats struct {
	// Refused counts sends refused by an open breaker; Opened the times a
	// breaker opened.
	Refused, Opened uint64
	// States holds the state of every receiver's breaker, by receiver.
	States map[string]BreakerState
}

// breakerMaxPending bounds the requires_ack sends whose outcome a
// Breakers waits for: one acknowledged by a process that does not go
// through it is never settled here, and the oldest are forgotten past it.
const breakerMaxPending = 1 << 16

// Breakers gives every receiver a circuit breaker over the point-to-point
// sends made through it. A delivery fails when the mailbox is full, when
// it is at Capacity or more once the message is queued (the wrapped
// transport must tell its room, transport.RoomTeller, for this one), when a
// requires_ack message is not acknowledged in time, or when the receiver
// rejects it; it succeeds when the message is queued (or, for a
// requires_ack message, acknowledged). After Failures consecutive
// failures, or at once when the mailbox is full or reaches Capacity, the
// breaker opens: sends are refused with a *CircuitOpenError and never
// reach the transport. After OpenFor on the breakers' clock it is
// half-open and lets one trial message through, closing again if that
// delivery succeeds and opening again if it fails. ACKs, broadcasts and
// publications pass without asking.
//
// What Breakers can observe of a requires_ack message depends on where it
// is settled. Ack, Nack and Reject made through Breakers settle it at once.
// A rejection or a last failed delivery made elsewhere (another process on
// NATS) reaches it through the transport's OnDeadLetter, which natsbus
// feeds with every process's dead letters and the in-memory bus with its
// own. An ack timeout is seen when the message is taken again through
// Breakers (its delivery count grows without a Nack through Breakers), or
// when its last delivery dead-letters it "max_retries"; an Ack made
// elsewhere is never seen, and such a send is forgotten after
// 65 536 newer ones. A half-open breaker whose trial's outcome is still
// unknown after OpenFor lets another trial through, so that an outcome it
// cannot see never keeps it half-open.
type Breakers struct {
	transport.Transport
	cfg        BreakerSettings
	clock      clock.Clock
	cancelDead func()

	mu       sync.Mutex
	circuits map[string]*circuit
	pending  map[string]breakerPending // requires_ack sends by message id
	refused  uint64
	opened   uint64
}

// breakerPending is a requires_ack send whose outcome is not known yet.
type breakerPending struct {
	agent  string
	gen    uint64
	nacked bool // given back through Breakers: its next delivery is no timeout
}

// The outcomes of a send a breaker let through.
type breakerOutcome uint8

const (
	breakerSuccess  breakerOutcome = iota
	breakerFailure                 // a failed delivery
	breakerFull                    // a failed delivery that opens the breaker at once
	breakerExcluded                // says nothing of the receiver's health (expired, unknown)
)

// NewBreakers returns inner with a circuit breaker per receiver, on clk
// (clock.Real() when nil).
func NewBreakers(inner transport.Transport, s BreakerSettings, clk clock.Clock) *Breakers {
	if clk == nil {
		clk = clock.Real()
	}
	b := &Breakers{Transport: inner, cfg: s.withDefaults(), clock: clk,
		circuits: make(map[string]*circuit), pending: make(map[string]breakerPending)}
	b.cancelDead = inner.OnDeadLetter(b.deadLettered)
	return b
}

// SendWork asks the receiver's breaker, then sends m on. An open breaker
// refuses it with a *CircuitOpenError (matching ErrCircuitOpen).
func (b *Breakers) SendWork(ctx context.Context, m *transport.Message) error {
	return b.send(ctx, m, false)
}

// OfferWork is SendWork offering m (transport.Offerer) to a transport that
// takes offers.
func (b *Breakers) OfferWork(ctx context.Context, m *transport.Message) error {
	return b.send(ctx, m, true)
}

// Room is the wrapped transport's, when it tells it.
func (b *Breakers) Room(ctx context.Context, agent string) (free, capacity int, err error) {
	return roomOf(ctx, b.Transport, agent)
}

func (b *Breakers) send(ctx context.Context, m *transport.Message, offer bool) error {
	if m == nil || ctx == nil || m.Validate() != nil || !breakerGuards(m) {
		return b.pass(ctx, m, offer) // the transport refuses it, and counts it
	}
	if m.RequiresAck && m.MessageID == "" {
		// Its outcome may come back before SendWork returns: the pending
		// send must be known by its id before it leaves.
		m.MessageID = uuid.NewString()
	}
	b.mu.Lock()
	c := b.circuitLocked(m.To)
	gen, state, ok := c.allow(b.clock.Now())
	if !ok {
		b.refused++
		b.mu.Unlock()
		return &CircuitOpenError{Agent: m.To, State: state}
	}
	if m.RequiresAck {
		b.pendLocked(m.MessageID, breakerPending{agent: m.To, gen: gen})
	}
	b.mu.Unlock()
	err := b.pass(ctx, m, offer)
	var o breakerOutcome
	switch {
	case errors.Is(err, transport.ErrQueueFull):
		o = breakerFull
	case err != nil:
		o = breakerExcluded
	case b.atCapacity(ctx, m.To):
		o = breakerFull
	case m.RequiresAck:
		return nil // pending until acked, rejected or timed out
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.RequiresAck {
		if p, ok := b.pending[m.MessageID]; !ok || p.gen != gen || p.agent != m.To {
			return err // settled already, by an outcome that came first
		}
		delete(b.pending, m.MessageID)
	}
	b.reportLocked(m.To, gen, o)
	if c := b.circuits[m.To]; c != nil && errors.Is(err, transport.ErrUnknownAgent) && c.state == BreakerClosed && c.count == 0 {
		// No mailbox, no breaker to keep: sends to made-up ids must not
		// grow the table.
		delete(b.circuits, m.To)
	}
	return err
}

// pendLocked records a requires_ack send whose outcome is not known yet.
func (b *Breakers) pendLocked(id string, p breakerPending) {
	if prev, ok := b.pending[id]; ok {
		b.reportLocked(prev.agent, prev.gen, breakerExcluded)
	}
	if len(b.pending) >= breakerMaxPending {
		for old, q := range b.pending {
			delete(b.pending, old)
			b.reportLocked(q.agent, q.gen, breakerExcluded)
			break
		}
	}
	b.pending[id] = p
}

// breakerGuards reports whether m goes through its receiver's breaker: a
// point-to-point message other than an ACK.
func breakerGuards(m *transport.Message) bool {
	if m.Type == transport.MessageAck || m.To == transport.BroadcastAll {
		return false
	}
	_, topic := m.Topic()
	return !topic
}

func (b *Breakers) pass(ctx context.Context, m *transport.Message, offer bool) error {
	if o, ok := b.Transport.(transport.Offerer); ok && offer {
		return o.OfferWork(ctx, m)
	}
	return b.Transport.SendWork(ctx, m)
}

// atCapacity reports whether agent's mailbox is at the breaker's capacity
// mark, false when the transport cannot tell.
func (b *Breakers) atCapacity(ctx context.Context, agent string) bool {
	free, capacity, err := roomOf(ctx, b.Transport, agent)
	if err != nil || capacity <= 0 {
		return false
	}
	mark := max(1, int(math.Ceil(b.cfg.Capacity*float64(capacity)-1e-9)))
	return capacity-free >= mark
}

// TakeWork takes agent's messages; a requires_ack message delivered again
// without a Nack through Breakers was not acknowledged in time, a failed
// delivery.
func (b *Breakers) TakeWork(ctx context.Context, agent string, max int) ([]*transport.Message, error) {
	msgs, err := b.Transport.TakeWork(ctx, agent, max)
	for _, m := range msgs {
		if !m.RequiresAck || m.DeliveryCount <= 1 {
			continue
		}
		b.mu.Lock()
		if p, ok := b.pending[m.MessageID]; ok {
			if p.nacked {
				p.nacked = false
				b.pending[m.MessageID] = p
			} else {
				delete(b.pending, m.MessageID)
				b.reportLocked(p.agent, p.gen, breakerFailure)
			}
		}
		b.mu.Unlock()
	}
	return msgs, err
}

// Ack acknowledges m: a successful delivery.
func (b *Breakers) Ack(ctx context.Context, m *transport.Message) error {
	err := b.Transport.Ack(ctx, m)
	if err == nil && m != nil {
		b.settle(m.MessageID, breakerSuccess)
	}
	return err
}

// Nack gives m back; its next delivery is not counted as an ack timeout.
func (b *Breakers) Nack(ctx context.Context, m *transport.Message) error {
	err := b.Transport.Nack(ctx, m)
	if err == nil && m != nil {
		b.mu.Lock()
		if p, ok := b.pending[m.MessageID]; ok {
			p.nacked = true
			b.pending[m.MessageID] = p
		}
		b.mu.Unlock()
	}
	return err
}

// Reject rejects m: a failed delivery. (A rejection that fails but still
// dead-letters m reaches the breaker through OnDeadLetter.)
func (b *Breakers) Reject(ctx context.Context, m *transport.Message, reason string) error {
	err := b.Transport.Reject(ctx, m, reason)
	if err == nil && m != nil {
		b.settle(m.MessageID, breakerFailure)
	}
	return err
}

// deadLettered settles a pending send the transport dead-lettered.
func (b *Breakers) deadLettered(d transport.DeadLetter) {
	if d.Message == nil {
		return
	}
	switch d.Reason {
	case transport.ReasonRejected, transport.ReasonMaxRetries:
		b.settle(d.Message.MessageID, breakerFailure)
	default:
		b.settle(d.Message.MessageID, breakerExcluded)
	}
}

// settle reports the outcome of the pending send of message id, if any.
func (b *Breakers) settle(id string, o breakerOutcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.pending[id]; ok {
		delete(b.pending, id)
		b.reportLocked(p.agent, p.gen, o)
	}
}

func (b *Breakers) reportLocked(agent string, gen uint64, o breakerOutcome) {
	if c := b.circuits[agent]; c != nil && c.report(gen, o, b.clock.Now()) {
		b.opened++
	}
}

func (b *Breakers) circuitLocked(agent string) *circuit {
	c := b.circuits[agent]
	if c == nil {
		c = &circuit{state: BreakerClosed, failures: b.cfg.Failures, openFor: b.cfg.OpenFor}
		b.circuits[agent] = c
	}
	return c
}

// Breaker returns the state of agent's breaker: closed for a receiver no
// send went to yet.
func (b *Breakers) Breaker(agent string) BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.circuits[agent]; c != nil {
		return c.current(b.clock.Now())
	}
	return BreakerClosed
}

// Stats returns the breakers' figures.
func (b *Breakers) Stats() BreakerStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	st := BreakerStats{Refused: b.refused, Opened: b.opened, States: make(map[string]BreakerState, len(b.circuits))}
	for agent, c := range b.circuits {
		st.States[agent] = c.current(now)
	}
	return st
}

// Close stops following the transport's dead letters. It is safe to call
// more than once and returns nil; it does not close the wrapped transport.
func (b *Breakers) Close() error {
	b.mu.Lock()
	cancel := b.cancelDead
	b.cancelDead = nil
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// circuit is one receiver's breaker, after gobreaker's two-step breaker
// (one trial request when half-open, a generation that makes the outcomes
// of an earlier state count for nothing) but on the breakers' clock, so
// that a test or a replay drives it.
type circuit struct {
	state    BreakerState
	gen      uint64
	failures int // the consecutive failures that open it
	count    int // consecutive failures so far
	openFor  time.Duration
	until    time.Time // while open: when it half-opens
	trial    bool      // while half-open: the trial is under way
	trialAt  time.Time // when the trial left
}

// current moves an open circuit whose time is up to half-open and returns
// the state.
func (c *circuit) current(now time.Time) BreakerState {
	if c.state == BreakerOpen && now.After(c.until) {
		c.to(BreakerHalfOpen, now)
	}
	return c.state
}

func (c *circuit) to(s BreakerState, now time.Time) {
	c.state, c.gen, c.count, c.trial = s, c.gen+1, 0, false
	if s == BreakerOpen {
		c.until = now.Add(c.openFor)
	}
}

// allow lets one send through and returns its generation, or refuses it
// with the state that refuses.
func (c *circuit) allow(now time.Time) (gen uint64, refusing BreakerState, ok bool) {
	switch c.current(now) {
	case BreakerOpen:
		return 0, BreakerOpen, false
	case BreakerHalfOpen:
		if c.trial && !now.After(c.trialAt.Add(c.openFor)) {
			return 0, BreakerHalfOpen, false
		}
		if c.trial {
			// A trial whose outcome is unknown after OpenFor (acknowledged
			// by another process, or dropped as a duplicate) counts for
			// nothing: another one may go, so that the breaker never
			// stays half-open for good.
			c.gen++
		}
		c.trial, c.trialAt = true, now
	}
	return c.gen, "", true
}

// report counts the outcome of a send of generation gen and reports
// whether it opened the circuit.
func (c *circuit) report(gen uint64, o breakerOutcome, now time.Time) (opened bool) {
	if c.current(now); gen != c.gen {
		return false
	}
	switch {
	case o == breakerExcluded:
		c.trial = false // a half-open circuit lets another trial through
	case o == breakerSuccess:
		c.count = 0
		if c.state == BreakerHalfOpen {
			c.to(BreakerClosed, now)
		}
	case c.state == BreakerHalfOpen:
		c.to(BreakerOpen, now)
		return true
	default:
		c.count++
		if c.count >= c.failures || o == breakerFull {
			c.to(BreakerOpen, now)
			return true
		}
	}
	return false
}

var (
	_ transport.Transport  = (*Breakers)(nil)
	_ transport.Offerer    = (*Breakers)(nil)
	_ transport.RoomTeller = (*Breakers)(nil)
)
