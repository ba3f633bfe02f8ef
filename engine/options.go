package engine

import (
	"runtime"

	"go.uber.org/zap"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
)

// Option configures an Engine.
type Option func(*config)

type config struct {
	logger    *zap.Logger
	clock     clock.Clock
	store     Store
	executor  Executor
	workers   int
	bus       *bus.Bus
	ids       func() string
	observers []Observer
}

func defaults() config {
	return config{
		logger:  zap.NewNop(),
		clock:   clock.Real(),
		workers: max(2, runtime.GOMAXPROCS(0)),
	}
}

// WithLogger sets the logger (default zap.NewNop()).
func WithLogger(l *zap.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithClock sets the clock used for timestamps, timeouts and backoffs
// (default the wall clock).
func WithClock(clk clock.Clock) Option { return func(c *config) { c.clock = clk } }

// WithStore sets the store every step is committed to (default a new MemStore).
func WithStore(s Store) Option { return func(c *config) { c.store = s } }

// WithExecutor runs the engine's work on ex instead of the engine's own
// worker pool. A clock.Sim is both a clock and an executor: pass it to
// WithClock and WithExecutor for a deterministic, single-goroutine replay.
func WithExecutor(ex Executor) Option { return func(c *config) { c.executor = ex } }

// WithWorkers sets the size of the engine's worker pool (default
// max(2, GOMAXPROCS)). Handlers run on these workers.
func WithWorkers(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.workers = n
		}
	}
}

// WithBus makes the engine deliver hand-offs on b instead of a bus of its
// own. The engine registers a mailbox for every agent that has none.
func WithBus(b *bus.Bus) Option { return func(c *config) { c.bus = b } }

// WithIDs sets the generator of instance ids (default random UUIDs). A
// scenario replay passes a counter so that two runs print the same trace.
func WithIDs(next func() string) Option { return func(c *config) { c.ids = next } }

// WithObserver subscribes o to the engine's events.
func WithObserver(o Observer) Option {
	return func(c *config) {
		if o != nil {
			c.observers = append(c.observers, o)
		}
	}
}
