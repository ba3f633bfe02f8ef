package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

const twoAgents = `workflow: two
initial: A
agents:
  a: {type: test}
  b: {type: test}
states:
  A: {agent: a, timeout: 10s}
  B: {agent: b}
  DONE: {terminal: true}
rules:
  - {id: ab, from: a, trigger: done, next: B}
  - {id: done, from: b, trigger: done, next: DONE}
`

// TestAgent_NextRun_SettlesTheWorkOfTheRunBefore checks that the outbox
// item of a Go agent's run is settled by the step that ends it, also when
// the next run is made in the same memory (the engine reuses a run nothing
// else can reach): the store keeps only the work of the run under way.
func TestAgent_NextRun_SettlesTheWorkOfTheRunBefore(t *testing.T) {
	w, err := rules.Parse("two.yaml", []byte(twoAgents))
	if err != nil {
		t.Fatal(err)
	}
	r := newSimRunOf(t, w, map[string][]reply{"a": {ok("done", nil)}}) // b is external: the instance waits on it
	inst := r.start(nil)
	if got := inst.Result().State; got != "B" {
		t.Fatalf("got state %s, want B", got)
	}
	out, err := r.eng.Store().Outbox(context.Background(), inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].To != "b" || out[0].Step != 2 {
		t.Fatalf("got outbox %+v, want only the work of b's step 2", out)
	}
}

// TestAgent_NextRun_KeptContextStaysCancelled checks that the context a Go
// handler was given, and kept, stays cancelled once its run ended, while
// the instance's next run goes on: a run made in the memory of the one
// before must not bring its context back to life.
func TestAgent_NextRun_KeptContextStaysCancelled(t *testing.T) {
	w, err := rules.Parse("two.yaml", []byte(twoAgents))
	if err != nil {
		t.Fatal(err)
	}
	var kept context.Context
	var seen []error
	handlers := map[string]registry.Handler{
		"a": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			kept = ctx
			return registry.Outcome{Trigger: "done"}, nil
		}),
		"b": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			if ctx == kept {
				t.Error("b's handler was given a's context")
			}
			seen = append(seen, kept.Err(), ctx.Err())
			return registry.Outcome{Trigger: "done"}, nil
		}),
	}
	reg, err := engine.NewRegistry(w, handlers)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := newEngine(w, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	inst, err := eng.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := inst.Wait(context.Background())
	if err != nil || res.Status != record.StatusCompleted {
		t.Fatalf("got %s, %v, want completed", res.Status, err)
	}
	if len(seen) != 2 || !errors.Is(seen[0], context.Canceled) || seen[1] != nil {
		t.Fatalf("during b's run got a's context's error %v and b's %v, want context.Canceled and nil", seen[0], seen[1])
	}
	select {
	case <-kept.Done():
	default:
		t.Fatal("a's kept context is not done once the instance ended")
	}
}

// TestAgent_NextRun_NotTimedOutByTheTimerBefore checks that the timeout of
// a Go agent's run, which fired as the run's outcome came in, does not end
// the instance's next run, made in the same memory (see reusableRun): the
// timer times out the step it was armed for, which is over.
func TestAgent_NextRun_NotTimedOutByTheTimerBefore(t *testing.T) {
	w, err := rules.Parse("two.yaml", []byte(twoAgents))
	if err != nil {
		t.Fatal(err)
	}
	deferred := func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{}, registry.ErrDeferred // reported below
	}
	r := newSimRunOf(t, w, map[string][]reply{"a": {deferred}}) // b is external: the instance waits on it
	ctx := context.Background()
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.sim.RunReady(ctx); err != nil {
		t.Fatal(err)
	}
	// The outcome is queued first; then the timeout fires, and its work
	// is queued after the outcome's.
	r.sim.Submit(func() {
		if err := r.eng.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "done"}, nil); err != nil {
			t.Errorf("Report: %v", err)
		}
	})
	if !r.sim.FireNext() {
		t.Fatal("no timer pending: a's timeout was not armed")
	}
	if err := r.sim.RunReady(ctx); err != nil {
		t.Fatal(err)
	}
	if res := inst.Result(); res.State != "B" || res.Status != record.StatusRunning {
		t.Fatalf("got %s in %s (%v), want running in B", res.Status, res.State, res.Err)
	}
}
