package handoff

import (
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
)

// Defaults of the validator and the manager.
const (
	// DefaultLoopWindow is how many recent hand-offs loop detection reads.
	DefaultLoopWindow = 5
	// DefaultLoopRepeats is how many of those may already target the same
	// agent before another hand-off to it is refused.
	DefaultLoopRepeats = 2
	// DefaultSupervisor is the only agent allowed to hand off to system
	// agents.
	DefaultSupervisor = "supervisor"
	// DefaultTimeout is how long a hand-off may stay pending (Jetvision's
	// HANDOFF_TIMEOUT).
	DefaultTimeout = 30 * time.Second
)

// config holds the settings of a Validator and a Manager.
type config struct {
	window, repeats int
	supervisor      string
	logger          *zap.Logger
	clock           clock.Clock
	escalation      string
	timeout         time.Duration
	newID           func() string
	errs            []error
}

func newConfig(opts []Option) *config {
	c := &config{
		window:     DefaultLoopWindow,
		repeats:    DefaultLoopRepeats,
		supervisor: DefaultSupervisor,
		logger:     zap.NewNop(),
		clock:      clock.Real(),
		timeout:    DefaultTimeout,
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

func (c *config) invalid(option, reason string) {
	c.errs = append(c.errs, &OptionError{Option: option, Reason: reason})
}

// Option configures a Validator or a Manager. WithLoopWindow and
// WithSupervisor shape the checks of both; the other options concern only a
// Manager and are ignored by NewValidator.
type Option func(*config)

// WithLoopWindow sets loop detection: of the last window hand-offs of an
// instance, at most repeats may target the same agent; a hand-off to an
// agent that already has repeats of them is refused. Defaults 5 and 2 (the
// workflow's limits.handoff_window and limits.handoff_repeats).
func WithLoopWindow(window, repeats int) Option {
	return func(c *config) {
		if window < 1 || repeats < 1 {
			c.invalid("WithLoopWindow", "window and repeats must be at least 1")
			return
		}
		c.window, c.repeats = window, repeats
	}
}

// WithSupervisor names the agent allowed to hand off to system agents
// (default "supervisor").
func WithSupervisor(id string) Option {
	return func(c *config) {
		if id == "" {
			c.invalid("WithSupervisor", "id is required")
			return
		}
		c.supervisor = id
	}
}

// WithLogger sets the logger every hand-off is logged to (default no-op).
func WithLogger(l *zap.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.invalid("WithLogger", "logger is nil")
			return
		}
		c.logger = l
	}
}

// WithClock sets the clock for timestamps and time-outs (default the wall
// clock).
func WithClock(k clock.Clock) Option {
	return func(c *config) {
		if k == nil {
			c.invalid("WithClock", "clock is nil")
			return
		}
		c.clock = k
	}
}

// WithEscalation names the agent that receives, with reason error_recovery,
// every hand-off that times out. Without one, a time-out is reported to the
// sender as an ERROR message.
func WithEscalation(agentID string) Option {
	return func(c *config) { c.escalation = agentID }
}

// WithTimeout sets how long a hand-off may stay pending before it times out
// (default 30s).
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("WithTimeout", "must be positive")
			return
		}
		c.timeout = d
	}
}

// WithIDs sets the generator of hand-off ids. By default a hand-off's id is
// the UUID of its bus message.
func WithIDs(f func() string) Option {
	return func(c *config) {
		if f == nil {
			c.invalid("WithIDs", "generator is nil")
			return
		}
		c.newID = f
	}
}
