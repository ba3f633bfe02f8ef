package engine_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// noop answers every run at once.
var noop = registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
	return registry.Outcome{Trigger: "done"}, nil
})

// BenchmarkForeach1000 runs instances whose one state is a foreach over
// 1 000 items with a no-op Go agent (100 items at once), on the engine's
// worker pool and the in-memory store: steps per second, CPU per step, and
// the memory allocated per item.
func BenchmarkForeach1000(b *testing.B) {
	w, err := rules.Parse("foreach1000.yaml", []byte(`
workflow: foreach1000
initial: EACH
agents: {worker: {concurrency: 100, queue: 1000}}
limits: {max_steps: 1000}
states:
  EACH: {foreach: {items: input.items, agent: worker, max_concurrency: 100}}
  DONE: {terminal: true}
rules:
  - {id: done, from: EACH, trigger: joined, next: DONE}
`))
	if err != nil {
		b.Fatal(err)
	}
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"worker": noop})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := newEngine(w, reg)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	const n = 1000
	items := make([]any, n)
	for k := range items {
		items[k] = k
	}
	input := map[string]any{"items": items}
	ctx := context.Background()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for range b.N {
		inst, err := eng.Start(ctx, input)
		if err != nil {
			b.Fatal(err)
		}
		if res, _ := inst.Wait(ctx); res.Outcome != "DONE" || res.Steps != n {
			b.Fatalf("got %s %s after %d steps (%v), want DONE after %d", res.Status, res.Outcome, res.Steps, res.Err, n)
		}
	}
	reportSteps(b, n*b.N, start, cpu0)
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(n*b.N), "B/item")
}

// BenchmarkChildWorkflow compares a sub-workflow step with a plain one: an
// instance whose state runs one no-op agent, against one whose state runs
// a child workflow whose one state runs the same agent. Both on the worker
// pool and the in-memory store; ns/op is per instance.
func BenchmarkChildWorkflow(b *testing.B) {
	set, err := rules.LoadSet(filepath.Join("testdata", "childbench"))
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"plain", "child"} {
		b.Run(name, func(b *testing.B) {
			w, _ := set.Workflow(name)
			reg, err := engine.NewRegistry(w, map[string]registry.Handler{"worker": noop})
			if err != nil {
				b.Fatal(err)
			}
			eng, err := newEngine(w, reg)
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			for range b.N {
				inst, err := eng.Start(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if res, _ := inst.Wait(ctx); res.Outcome != "DONE" {
					b.Fatalf("got %s %s (%v), want DONE", res.Status, res.Outcome, res.Err)
				}
			}
			reportSteps(b, b.N, start, cpu0)
		})
	}
}
