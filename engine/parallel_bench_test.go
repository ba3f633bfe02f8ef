package engine_test

import (
	"context"
	"testing"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// BenchmarkParallelJoin3 runs whole instances of a three-way fan-out and
// join with no-op Go agents on the simulator, one instance per op:
// "dispatch" starts in the parallel state (the engine dispatches the three
// branches itself), "handoff" enters it through a rule after a lead agent's
// run, so each branch is an agent-to-agent hand-off.
func BenchmarkParallelJoin3(b *testing.B) {
	noop := func(trigger string) registry.Handler {
		return registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: trigger}, nil
		})
	}
	for _, bc := range []struct{ name, file string }{
		{"dispatch", "join3.yaml"},
		{"handoff", "join3_handoff.yaml"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := loadWorkflow(b, bc.file)
			handlers := map[string]registry.Handler{"a": noop("found"), "b": noop("found"), "c": noop("found")}
			if _, ok := w.Agent("lead"); ok {
				handlers["lead"] = noop("go")
			}
			reg, err := engine.NewRegistry(w, handlers)
			if err != nil {
				b.Fatal(err)
			}
			sim := clock.NewSim(epoch)
			eng, err := newEngine(w, reg, engine.WithClock(sim), engine.WithExecutor(sim))
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			ctx := context.Background()
			b.ReportAllocs()
			first := true
			for b.Loop() {
				inst, err := eng.Start(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := sim.RunReady(ctx); err != nil {
					b.Fatal(err)
				}
				select {
				case <-inst.Done():
				default:
					b.Fatalf("instance still running in %s", inst.Result().State)
				}
				if first {
					if res := inst.Result(); res.Status != record.StatusCompleted || res.Steps != len(w.Agents) { // every agent runs once
						b.Fatalf("got %s after %d steps (err %v), want completed", res.Status, res.Steps, res.Err)
					}
					first = false
				}
			}
		})
	}
}
