package engine

import (
	"runtime"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/transport"
)

// Option configures an Engine.
type Option func(*config)

type config struct {
	jitterSeed   uint64
	seeded       bool
	logger       *zap.Logger
	clock        clock.Clock
	store        record.Store
	executor     Executor
	workers      int
	transport    transport.Transport
	newTransport func(clock.Clock, func() string) transport.Transport
	ids          func() string
	observers    []Observer
	tracing      trace.TracerProvider
	family       *family // the engines of a parent workflow and its children
}

// withFamily makes the engine one of the family of a parent workflow.
func withFamily(f *family) Option { return func(c *config) { c.family = f } }

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
func WithStore(s record.Store) Option { return func(c *config) { c.store = s } }

// WithExecutor runs the engine's work on ex instead of the engine's own
// worker pool. A clock.Sim is both a clock and an executor: pass it to
// WithClock and WithExecutor for a deterministic, single-goroutine replay.
func WithExecutor(ex Executor) Option { return func(c *config) { c.executor = ex } }

// WithWorkers sets the size of the engine's worker pool (default
// max(2, GOMAXPROCS)), which runs timers' work: timeouts, retries, joins.
// Go handlers run beside it, up to each agent's concurrency at once.
func WithWorkers(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.workers = n
		}
	}
}

// WithTransport makes the engine send the work of external agents (agents
// without a Go handler) through t: the in-memory *bus.Bus, shared with
// other engines or agents, or the NATS transport. The engine opens a
// mailbox for every external agent; it does not close t. A workflow with
// an external agent needs a transport: New refuses it without one (a
// *NoTransportError).
func WithTransport(t transport.Transport) Option { return func(c *config) { c.transport = t } }

// WithOwnTransport makes the engine build the transport of its external
// agents itself, with newT on the engine's clock and id generator, when it
// has an external agent and no WithTransport; the engine closes it (when it
// is an io.Closer) as it closes. The engines of child workflows build
// theirs the same way. For example, an in-memory bus on the engine's clock:
//
//	engine.WithOwnTransport(func(clk clock.Clock, ids func() string) transport.Transport {
//		return bus.New(bus.WithClock(clk), bus.WithIDs(ids), bus.WithAckMessages(false))
//	})
func WithOwnTransport(newT func(clk clock.Clock, ids func() string) transport.Transport) Option {
	return func(c *config) { c.newTransport = newT }
}

// WithIDs sets the generator of instance ids (default random UUIDs). A
// scenario replay passes a counter so that two runs print the same trace.
func WithIDs(next func() string) Option { return func(c *config) { c.ids = next } }

// WithJitterSeed fixes the seed of the retry policies' full jitter (default:
// the clock's time when the engine is built, so a simulated clock fixes
// it). Each draw depends only on the seed, the instance and the step, so a
// replay draws the same delays whatever order instances run in.
func WithJitterSeed(seed uint64) Option {
	return func(c *config) { c.jitterSeed, c.seeded = seed, true }
}

// WithTracerProvider makes the engine trace its instances and runs with
// spans from tp (an OpenTelemetry SDK's, say): a span "invoke_workflow
// {workflow}" per instance, child of the span in the context given to
// Start, and "invoke_agent {agent}" per run. Without it (the default) the
// engine makes no span and costs nothing for tracing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracing = tp }
}

// WithObserver subscribes o to the engine's events.
func WithObserver(o Observer) Option {
	return func(c *config) {
		if o != nil {
			c.observers = append(c.observers, o)
		}
	}
}
