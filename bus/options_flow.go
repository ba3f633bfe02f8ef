package bus

import (
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
}

// WithReceipt makes Send fill r with what became of the message. SendAll
// ignores it.
func WithReceipt(r *Receipt) SendOption {
	return func(c *sendConfig) { c.receipt = r }
}
