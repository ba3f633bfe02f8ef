package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// simEngine builds an engine on the simulator with a store that keeps
// nothing: the engine's own work per step.
func simEngine(b *testing.B, w *rules.Workflow, handlers map[string]registry.Handler) (*engine.Engine, *clock.Sim) {
	b.Helper()
	reg, err := engine.NewRegistry(w, handlers)
	if err != nil {
		b.Fatal(err)
	}
	sim := clock.NewSim(time.Unix(0, 0))
	eng, err := newEngine(w, reg, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithStore(discardStore{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close() })
	return eng, sim
}

// runInstances starts b.N instances one after the other on the simulator,
// each running to its end, and reports steps/s and CPU per step.
func runInstances(b *testing.B, eng *engine.Engine, sim *clock.Sim, input map[string]any, steps int, want string) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for range b.N {
		inst, err := eng.Start(ctx, input)
		if err != nil {
			b.Fatal(err)
		}
		if err := sim.Run(ctx, nil); err != nil {
			b.Fatal(err)
		}
		if res := inst.Result(); res.Outcome != want || res.Steps != steps {
			b.Fatalf("got %s %s after %d steps (%v), want %s after %d", res.Status, res.Outcome, res.Steps, res.Err, want, steps)
		}
	}
	reportSteps(b, steps*b.N, start, cpu0)
}

// rulesWorkflow has an agent with n rules (n triggers) into one state.
func rulesWorkflow(b *testing.B, n int) *rules.Workflow {
	b.Helper()
	var sb strings.Builder
	sb.WriteString("workflow: many_rules\ninitial: A\nagents:\n  a: {type: t}\n  b: {type: t}\nstates:\n  A: {agent: a}\n  B: {agent: b}\n  DONE: {terminal: true}\nrules:\n")
	for k := range n {
		fmt.Fprintf(&sb, "  - {id: r%d, from: a, trigger: t%d, next: B}\n", k, k)
	}
	sb.WriteString("  - {id: done, from: b, trigger: done, next: DONE}\n")
	w, err := rules.Parse("many_rules.yaml", []byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkEngineRulesScale compares the cost of a step when its agent has
// 10 and 1 000 rules: matching and firing must not grow with the rules.
func BenchmarkEngineRulesScale(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			w := rulesWorkflow(b, n)
			last := fmt.Sprintf("t%d", n-1) // the last rule of the list fires
			eng, sim := simEngine(b, w, map[string]registry.Handler{
				"a": answer(last, nil), "b": answer("done", nil),
			})
			runInstances(b, eng, sim, nil, 2, "DONE")
		})
	}
}

// BenchmarkEngineContextScale compares the cost of a step with 1 KB and
// 100 KB of context travelling with every hand-off of a 20-step chain: the
// context is checked once where it enters (the start input), then passed
// along, never copied or encoded, on the in-process path.
func BenchmarkEngineContextScale(b *testing.B) {
	const hops = 20
	var sb strings.Builder
	sb.WriteString("workflow: big_context\ninitial: S0\nagents:\n  a: {type: t}\n  b: {type: t}\nstates:\n")
	for k := range hops {
		fmt.Fprintf(&sb, "  S%d: {agent: %s}\n", k, []string{"a", "b"}[k%2])
	}
	sb.WriteString("  DONE: {terminal: true}\nrules:\n")
	sb.WriteString("  - {id: r0, from: a, trigger: t0, next: S1, task: '\"take the documents\"', context: {docs: input.docs}}\n")
	for k := 1; k < hops-1; k++ {
		fmt.Fprintf(&sb, "  - {id: r%d, from: %s, trigger: t%d, next: S%d, task: '\"step %d\"'}\n", k, []string{"a", "b"}[k%2], k, k+1, k)
	}
	fmt.Fprintf(&sb, "  - {id: done, from: %s, trigger: t%d, next: DONE}\n", []string{"a", "b"}[(hops-1)%2], hops-1)
	w, err := rules.Parse("big_context.yaml", []byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	// Each agent answers the trigger of the state it is in (t<k> in S<k>).
	next := registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "t" + t.State[1:]}, nil
	})
	for _, kb := range []int{1, 100} {
		b.Run(fmt.Sprintf("context=%dKB", kb), func(b *testing.B) {
			eng, sim := simEngine(b, w, map[string]registry.Handler{"a": next, "b": next})
			// kb documents of about 1 KB each, as a model's context would hold.
			docs := make(map[string]any, kb)
			for k := range kb {
				docs[fmt.Sprintf("doc-%d", k)] = map[string]any{"title": fmt.Sprintf("document %d", k), "text": strings.Repeat("lorem ipsum ", 80)}
			}
			runInstances(b, eng, sim, map[string]any{"docs": docs}, hops, "DONE")
		})
	}
}

// BenchmarkFinishedInstanceMemory reports the heap an engine still holds
// per finished instance after 100 000 of them, with a store that keeps
// nothing: what the engine itself retains.
func BenchmarkFinishedInstanceMemory(b *testing.B) {
	const n = 100_000
	w := loadRefund(b)
	for range b.N {
		eng, sim := simEngine(b, w, refundagents.Approved())
		ctx := context.Background()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range n {
			if _, err := eng.Start(ctx, refundInput); err != nil {
				b.Fatal(err)
			}
			if err := sim.Run(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		b.ReportMetric(float64(max(retained, 0))/n, "retained-B/instance")
		runtime.KeepAlive(eng)
	}
}

// BenchmarkEngineSlowAgents runs 1 000 refunds at once whose every handler
// waits 50ms, like a model call, with the engine's default options: the
// agents' concurrency, not a pool sized to the CPUs, bounds them. The
// workflow's agents declare concurrency 100 in the second case.
func BenchmarkEngineSlowAgents(b *testing.B) {
	for _, conc := range []int{0, 100} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			w := loadRefund(b)
			reg := registry.New()
			for _, a := range w.Agents {
				var h registry.Handler
				if ah := refundagents.Approved()[a.ID]; ah != nil {
					h = registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
						time.Sleep(50 * time.Millisecond)
						return ah.Handle(ctx, t)
					})
				}
				ag := engine.AgentOf(a, h)
				ag.Concurrency = conc
				if err := reg.Add(ag); err != nil {
					b.Fatal(err)
				}
			}
			eng, err := newEngine(w, reg)
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			ctx := context.Background()
			const n = 1000
			for range b.N {
				start := time.Now()
				insts := make([]*engine.Instance, n)
				for k := range insts {
					if insts[k], err = eng.Start(ctx, refundInput); err != nil {
						b.Fatal(err)
					}
				}
				for _, inst := range insts {
					if res, _ := inst.Wait(ctx); res.Outcome != "COMPLETED" {
						b.Fatalf("got %s %s (%v), want COMPLETED", res.Status, res.Outcome, res.Err)
					}
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/1000-instances")
			}
		})
	}
}
