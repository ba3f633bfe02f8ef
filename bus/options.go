package bus

import (
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
)

// Defaults of the bus configuration.
const (
	// DefaultMailboxCapacity is the number of messages one agent's mailbox
	// holds before sends to it are refused.
	DefaultMailboxCapacity = 1000
	// DefaultCapacity is the number of messages all mailboxes hold together.
	DefaultCapacity = 10000
	// DefaultDeadLetterLimit bounds the dead letters the bus holds; the
	// oldest are dropped first (they stay counted in the metrics).
	DefaultDeadLetterLimit = 10000
)

// config is the bus configuration after options and defaults.
type config struct {
	logger          *zap.Logger
	clock           clock.Clock
	ids             func() string
	capacity        int
	mailboxCapacity int
	deadLetterLimit int
	sweepInterval   time.Duration

	ackTimeout    time.Duration
	noAckMessages bool
	maxDeliveries int
	idemWindow    time.Duration
	idemMax       int
}

func defaultConfig() config {
	return config{
		logger:          zap.NewNop(),
		clock:           clock.Real(),
		ids:             newUUID,
		capacity:        DefaultCapacity,
		mailboxCapacity: DefaultMailboxCapacity,
		deadLetterLimit: DefaultDeadLetterLimit,
		ackTimeout:      DefaultAckTimeout,
		maxDeliveries:   DefaultMaxDeliveries,
		idemWindow:      DefaultIdempotencyWindow,
		idemMax:         DefaultIdempotencyKeys,
	}
}

// Option configures a Bus.
type Option func(*config)

// WithLogger sets the logger for sends, expiries and dead
// letters; nil keeps the default zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithClock sets the clock used for timestamps, TTLs, latencies, retries and
// timeouts; nil keeps clock.Real().
func WithClock(cl clock.Clock) Option {
	return func(c *config) {
		if cl != nil {
			c.clock = cl
		}
	}
}

// WithIDs sets the generator of message ids (UUID v4 by default); a
// deterministic generator makes replays byte-identical. nil keeps the
// default.
func WithIDs(next func() string) Option {
	return func(c *config) {
		if next != nil {
			c.ids = next
		}
	}
}

// WithCapacity sets how many messages all mailboxes may hold together;
// n <= 0 keeps DefaultCapacity.
func WithCapacity(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.capacity = n
		}
	}
}

// WithDefaultMailboxCapacity sets the capacity of mailboxes registered
// without WithMailboxCapacity; n <= 0 keeps DefaultMailboxCapacity.
func WithDefaultMailboxCapacity(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.mailboxCapacity = n
		}
	}
}

// WithDeadLetterLimit bounds how many dead letters the bus holds; n <= 0
// keeps DefaultDeadLetterLimit.
func WithDeadLetterLimit(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.deadLetterLimit = n
		}
	}
}

// WithExpirySweep makes the bus purge expired messages from every mailbox
// every interval, on a timer it owns and Close stops. Without it (the
// default) expiry is checked when a message would be delivered and when a
// full mailbox needs room.
func WithExpirySweep(interval time.Duration) Option {
	return func(c *config) { c.sweepInterval = interval }
}

// MailboxOption configures one agent's mailbox at Register.
type MailboxOption func(*mailboxConfig)

type mailboxConfig struct {
	agentType string
	capacity  int
	required  []string
}

// WithAgentType records the agent's type, which its metrics carry.
func WithAgentType(t string) MailboxOption {
	return func(c *mailboxConfig) { c.agentType = t }
}

// WithMailboxCapacity overrides the capacity of this agent's mailbox. A
// value below 1 makes Register fail with a *ValidationError.
func WithMailboxCapacity(n int) MailboxOption {
	return func(c *mailboxConfig) { c.capacity = n }
}

// WithRequiredContent makes the mailbox refuse messages whose content lacks
// one of keys: such a send fails with a
// *ValidationError naming the field ("content.parameters") and the message
// is not accepted.
func WithRequiredContent(keys ...string) MailboxOption {
	return func(c *mailboxConfig) { c.required = append(c.required, keys...) }
}

// SendOption configures one send (Send, SendAll).
type SendOption func(*sendConfig)

type sendConfig struct {
	receipt *Receipt
	offer   bool // OfferWork: a full mailbox refuses, and the sender keeps the message
}
