package engine_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/batonhq/baton/engine/engineprom"
	"github.com/batonhq/baton/internal/cputime"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/record"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

func loadRefund(b testing.TB) *rules.Workflow {
	b.Helper()
	w, err := rules.Load("../examples/refund/workflow.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return w
}

var refundInput = map[string]any{"order_id": "1", "amount": 50}

// BenchmarkEngineRefund runs whole refund instances (4 steps each) on the
// engine's worker pool, up to 500 at a time (the customer's mailbox holds
// 1000), and reports steps per second.
func BenchmarkEngineRefund(b *testing.B) { benchRefund(b) }

// BenchmarkEngineRefund_Observed is BenchmarkEngineRefund with everything
// watching: an observer feeding the Prometheus collector, and a tracer
// provider recording every span (exported nowhere).
func BenchmarkEngineRefund_Observed(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	m := engineprom.New()
	benchRefund(b, engine.WithTracerProvider(tp), engine.WithObserver(m.Observe))
}

func benchRefund(b *testing.B, opts ...engine.Option) {
	benchRefundWith(b, refundagents.Approved(), opts...)
}

// benchRefundWith is benchRefund with the agents' handlers given.
func benchRefundWith(b *testing.B, handlers map[string]registry.Handler, opts ...engine.Option) {
	w := loadRefund(b)
	reg, err := engine.NewRegistry(w, handlers)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := newEngine(w, reg, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	// The handles of the instances in flight only, in a ring: a slice of
	// every handle kept each finished instance alive to the end, a heap
	// that grew with b.N for the collector to scan at every cycle (the
	// engine itself forgets a finished instance).
	const window = 500
	insts := make([]*engine.Instance, min(window, b.N))
	wait := func(inst *engine.Instance) {
		res, _ := inst.Wait(ctx)
		if res.Outcome != "COMPLETED" {
			b.Fatalf("got %s %s (%v), want COMPLETED", res.Status, res.Outcome, res.Err)
		}
	}
	for n := range b.N {
		if n >= window {
			wait(insts[n%window])
		}
		inst, err := eng.Start(ctx, refundInput)
		if err != nil {
			b.Fatal(err)
		}
		insts[n%window] = inst
	}
	for _, inst := range insts {
		wait(inst)
	}
	reportSteps(b, 4*b.N, start, cpu0)
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration { return cputime.Process() }

// reportSteps reports steps per second of wall time and the process's CPU
// time per step (every goroutine's work, the garbage collector's included).
func reportSteps(b *testing.B, steps int, start time.Time, cpu0 time.Duration) {
	b.ReportMetric(float64(steps)/time.Since(start).Seconds(), "steps/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(steps), "cpu-ns/step")
}

// BenchmarkEngineRefundSim runs whole refund instances on the single-goroutine
// simulator: the engine's own cost per step without any scheduling. The
// memstore case keeps every instance's history, as MemStore does, so the
// garbage collector scans a heap that grows with b.N; the discard case
// commits to a store that keeps nothing, which isolates the per-step work.
func BenchmarkEngineRefundSim(b *testing.B) {
	b.Run("memstore", func(b *testing.B) { benchRefundSim(b, record.NewMemStore()) })
	b.Run("discard", func(b *testing.B) { benchRefundSim(b, discardStore{}) })
}

// discardStore keeps nothing.
type discardStore struct{}

func (discardStore) Commit(context.Context, record.Step) error { return nil }
func (discardStore) Instance(context.Context, string) (record.Snapshot, error) {
	return record.Snapshot{}, engine.ErrUnknownInstance
}
func (discardStore) History(context.Context, string) ([]record.Entry, error) {
	return nil, engine.ErrUnknownInstance
}
func (discardStore) Instances(context.Context) ([]record.Snapshot, error) { return nil, nil }
func (discardStore) Outbox(context.Context, string) ([]record.Outgoing, error) {
	return nil, engine.ErrUnknownInstance
}
func (discardStore) Prune(context.Context, time.Time) (int, error)             { return 0, nil }
func (discardStore) AddDeadLetter(context.Context, record.DeadLetter) error    { return nil }
func (discardStore) DeadLetters(context.Context) ([]record.DeadLetter, error)  { return nil, nil }
func (discardStore) SaveWorkflow(context.Context, record.WorkflowSource) error { return nil }
func (discardStore) Workflow(context.Context, string) (record.WorkflowSource, error) {
	return record.WorkflowSource{}, engine.ErrUnknownWorkflow
}

func benchRefundSim(b *testing.B, store record.Store) {
	benchRefundSimWith(b, store, refundagents.Approved())
}

// benchRefundSimWith is benchRefundSim with the agents' handlers given.
func benchRefundSimWith(b *testing.B, store record.Store, handlers map[string]registry.Handler) {
	w := loadRefund(b)
	reg, err := engine.NewRegistry(w, handlers)
	if err != nil {
		b.Fatal(err)
	}
	sim := clock.NewSim(time.Unix(0, 0))
	eng, err := newEngine(w, reg, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithStore(store))
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	runInstances(b, eng, sim, refundInput, 4, "COMPLETED")
}

// BenchmarkIdleInstanceMemory reports the heap held per instance waiting on
// an external agent (its first hand-off queued on the bus), with the
// in-memory store (which keeps every snapshot and history) and with a store
// that keeps nothing (the engine's and the bus's share alone).
func BenchmarkIdleInstanceMemory(b *testing.B) {
	b.Run("memstore", func(b *testing.B) { benchIdle(b, func() record.Store { return record.NewMemStore() }) })
	b.Run("discard", func(b *testing.B) { benchIdle(b, func() record.Store { return discardStore{} }) })
}

func benchIdle(b *testing.B, store func() record.Store) {
	w := loadRefund(b)
	const n = 10_000
	for range b.N {
		reg, err := engine.NewRegistry(w, nil) // every agent external: instances stay idle
		if err != nil {
			b.Fatal(err)
		}
		// Room for every instance's first hand-off: a full mailbox would
		// dead-letter it and fail the instance, which is not idle.
		bb := bus.New(bus.WithCapacity(2*n), bus.WithDefaultMailboxCapacity(2*n), bus.WithAckMessages(false))
		eng, err := newEngine(w, reg, engine.WithWorkers(1), engine.WithTransport(bb), engine.WithStore(store()))
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC() // the second sweeps what the first found of an earlier round
		runtime.ReadMemStats(&before)
		for range n {
			if _, err := eng.Start(context.Background(), refundInput); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if dl := bb.DeadLetters(); len(dl) > 0 {
			b.Fatalf("%d hand-offs dead-lettered (%s): the instances are not idle", len(dl), dl[0].Reason)
		}
		// Signed: a collection of an earlier round's garbage may leave
		// less than before, which must not wrap round.
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "B/instance")
		eng.Close()
		bb.Close()
	}
}
