package bus

import (
	"math"
	"time"
)

// Defaults of the delivery guarantees and flow control (communication-flow
// schema §1, §4–§7).
const (
	// DefaultAckTimeout is how long a receiver has to acknowledge a
	// requires_ack message before the bus delivers it again.
	DefaultAckTimeout = 30 * time.Second
	// DefaultMaxDeliveries is how many times a requires_ack message is
	// handed out before it is dead-lettered "max_retries".
	DefaultMaxDeliveries = 3
	// DefaultIdempotencyWindow is how long an idempotency key is remembered.
	DefaultIdempotencyWindow = 24 * time.Hour
	// DefaultIdempotencyKeys bounds the keys remembered at once; past it the
	// oldest are forgotten before their window ends (the bound is kept per
	// shard of the key space, so "oldest" is approximate).
	DefaultIdempotencyKeys = 100_000
)

// WithAckTimeout sets how long a receiver has to acknowledge a requires_ack
// message before it is delivered again (a message's AckTimeout overrides
// it); d <= 0 keeps DefaultAckTimeout.
func WithAckTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.ackTimeout = d
		}
	}
}

// WithMaxDeliveries sets how many times a requires_ack message is handed out
// before it is dead-lettered "max_retries"; n <= 0 keeps
// DefaultMaxDeliveries.
func WithMaxDeliveries(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxDeliveries = n
		}
	}
}

// WithAckMessages sets whether Ack sends the acknowledged message's sender
// an ACK message (on by default). A bus whose senders
// learn of acknowledgements otherwise, such as the engine's, can turn the
// messages off; the acknowledgement itself (the message leaves flight and
// counts as delivered) is unchanged.
func WithAckMessages(on bool) Option {
	return func(c *config) { c.noAckMessages = !on }
}

// WithIdempotency sets how long idempotency keys are remembered and how many
// at most (max <= 0 keeps DefaultIdempotencyKeys): a key is remembered for
// the window or until max newer keys push it out, whichever comes first, so
// size max for the busiest window you need. window <= 0 turns
// deduplication off: every send is delivered, whatever its key.
func WithIdempotency(window time.Duration, max int) Option {
	return func(c *config) {
		c.idemWindow = window
		if max > 0 {
			c.idemMax = max
		}
	}
}

// WithQueryTimeout sets how long Request waits for the answer to a QUERY
// when neither its context nor WithTimeout says otherwise; d <= 0 keeps
// DefaultQueryTimeout.
func WithQueryTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.queryTimeout = d
		}
	}
}

// ConversationLimits bound the threads the bus tracks with WithConversations.
// Zero fields take the defaults.
type ConversationLimits struct {
	// MaxDepth is how many messages a thread holds before it is closed
	// (20 by default).
	MaxDepth int
	// MaxDuration is how long after its root message a thread stays open
	// (24h by default).
	MaxDuration time.Duration
	// MaxThreads bounds the threads retained for queries (10 000 by
	// default); the oldest are forgotten first, and every thread is
	// forgotten twice MaxDuration after its root message.
	MaxThreads int
}

func (l ConversationLimits) withDefaults() ConversationLimits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = 20
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = 24 * time.Hour
	}
	if l.MaxThreads <= 0 {
		l.MaxThreads = 10_000
	}
	return l
}

// WithConversations makes the bus track conversation threads: every message
// it accepts joins its conversation_id's thread, a message whose in_reply_to
// names no message the bus knows is refused, a thread closes after
// MaxDepth messages or MaxDuration, and Conversation and Correlated return
// the messages of a thread. Without it (the default) threading costs
// nothing and in_reply_to is not checked.
func WithConversations(l ConversationLimits) Option {
	return func(c *config) {
		l = l.withDefaults()
		c.conversations = &l
	}
}

// RateLimits are the per-agent message rates of WithRateLimits. Zero fields
// take the defaults.
type RateLimits struct {
	// Outbound is how many NORMAL messages per minute one agent may send
	// (60 by default).
	Outbound float64
	// Inbound is how many NORMAL messages per minute one agent may receive
	// (120 by default).
	Inbound float64
	// Burst is how many NORMAL messages may pass at once before the rate
	// applies (10 by default).
	Burst int
	// High and Low scale the rates and the burst of HIGH and LOW messages
	// (2 and 0.5 by default). CRITICAL messages are never limited.
	High, Low float64
}

func (r RateLimits) withDefaults() RateLimits {
	if r.Outbound <= 0 {
		r.Outbound = 60
	}
	if r.Inbound <= 0 {
		r.Inbound = 120
	}
	if r.Burst <= 0 {
		r.Burst = 10
	}
	if r.High <= 0 {
		r.High = 2
	}
	if r.Low <= 0 {
		r.Low = 0.5
	}
	return r
}

// WithRateLimits limits, per agent, the messages it sends and receives
// point to point (Send, SendAll, Request, Reply). A message over the limit
// is accepted at once and waits in its sender's outbound queue, one FIFO per
// priority, until both the sender's and the receiver's limits allow it:
// nothing is dropped, Send returns nil straight away (WithReceipt reports
// Deferred), and the bus's own timer moves the backlog on. CRITICAL
// messages and ACKs are never limited; broadcasts and publications are not
// either. Off by default: the engine's own bus must not throttle its
// hand-offs unless asked to.
func WithRateLimits(r RateLimits) Option {
	return func(c *config) {
		r = r.withDefaults()
		c.rateLimits = &r
	}
}

// Backpressure sets the fill ratios of a mailbox at which its senders are
// signalled. Zero fields take the defaults.
type Backpressure struct {
	// Throttle is the fill ratio at which a mailbox becomes throttled (0.8).
	Throttle float64
	// Overload is the fill ratio at which it becomes overloaded (0.95).
	Overload float64
	// Recover is the fill ratio at or below which a throttled or overloaded
	// mailbox has recovered (0.5).
	Recover float64
}

func (p Backpressure) withDefaults() Backpressure {
	if p.Throttle <= 0 || p.Throttle > 1 {
		p.Throttle = 0.8
	}
	if p.Overload <= 0 || p.Overload > 1 {
		p.Overload = 0.95
	}
	if p.Overload < p.Throttle {
		p.Overload = p.Throttle
	}
	if p.Recover <= 0 {
		p.Recover = 0.5
	}
	if p.Recover >= p.Throttle {
		p.Recover = p.Throttle / 2
	}
	return p
}

// marks turns the ratios into depths for a mailbox of capacity n.
func (p Backpressure) marks(n int) (throttle, overload, recover int) {
	throttle = max(1, int(math.Ceil(p.Throttle*float64(n))))
	overload = max(throttle, int(math.Ceil(p.Overload*float64(n))))
	recover = min(throttle-1, int(math.Floor(p.Recover*float64(n))))
	return throttle, overload, recover
}

// WithBackpressure sets the pressure thresholds and makes the bus tell
// senders about them: when a mailbox passes Throttle or Overload, every
// agent that sends to it while it is under pressure receives a
// NOTIFICATION (action "backpressure", status "throttled" or "overloaded",
// queue_depth, capacity, estimated_delay in seconds), and "recovering" once
// it drains to Recover. A sender hears of each change once. Without it,
// Pressure and OnPressure still report the mailbox's state with the default
// thresholds, but no message is sent.
func WithBackpressure(p Backpressure) Option {
	return func(c *config) {
		c.pressure = p.withDefaults()
		c.signals = true
	}
}

// BreakerSettings configure the circuit breaker of WithCircuitBreaker. Zero
// fields take the defaults.
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

// WithCircuitBreaker gives every mailbox a circuit breaker (sony/gobreaker)
// over its point-to-point sends. A delivery fails when the mailbox is full,
// when it is at Capacity or more once the message is queued, when a
// requires_ack message is not acknowledged in time, or when the receiver
// rejects it; it succeeds when the message is queued (or, for a
// requires_ack message, acknowledged). After Failures consecutive failures,
// or at once when the mailbox reaches Capacity, the breaker opens: sends
// are refused with a *CircuitOpenError and not accepted. After OpenFor it is
// half-open and lets one trial message through, closing again if that
// delivery succeeds. Off by default: a breaker refuses work a slow but
// healthy agent would have done. Its timing follows the wall clock (or the
// synctest clock), not WithClock.
func WithCircuitBreaker(s BreakerSettings) Option {
	return func(c *config) {
		s = s.withDefaults()
		c.breaker = &s
	}
}

// Receipt reports what became of one Send or Request (WithReceipt).
type Receipt struct {
	// MessageID is the id of the message sent.
	MessageID string
	// Duplicate is true when the message carried an idempotency key the bus
	// had already accepted within its window: it was acknowledged (Send
	// returned nil) but not delivered again.
	Duplicate bool
	// DuplicateOf is the id of the message accepted first with the key.
	DuplicateOf string
	// Deferred is true when a rate limit made the message wait in its
	// sender's outbound queue; it is accepted and will be delivered when
	// the limits allow.
	Deferred bool
}

// WithReceipt makes Send or Request fill r with what became of the message.
// SendAll, Broadcast and Publish ignore it.
func WithReceipt(r *Receipt) SendOption {
	return func(c *sendConfig) { c.receipt = r }
}
