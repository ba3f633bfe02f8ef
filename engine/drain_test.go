package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

const drainFlow = `workflow: drain
initial: FIRST
agents:
  first: {}
  second: {}
states:
  FIRST: {agent: first}
  SECOND: {agent: second}
  DONE: {terminal: true}
rules:
  - {id: one, from: first, trigger: done, next: SECOND}
  - {id: two, from: second, trigger: done, next: DONE}
`

// A drain waits for the run under way, commits its outcome, and starts
// no other run: the next step's work stays in the outbox for Resume.
func TestEngine_Drain_WaitsForRunsAndStartsNoNewOne(t *testing.T) {
	w, err := rules.Parse("drain.yaml", []byte(drainFlow))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	secondRan := make(chan struct{}, 1)
	hs := map[string]registry.Handler{
		"first": registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			close(entered)
			<-release
			return registry.Outcome{Trigger: "done"}, nil
		}),
		"second": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			secondRan <- struct{}{}
			return registry.Outcome{Trigger: "done"}, nil
		}),
	}
	reg, err := engine.NewRegistry(w, hs)
	if err != nil {
		t.Fatal(err)
	}
	store := record.NewMemStore()
	eng, err := newEngine(w, reg, engine.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := eng.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	drained := make(chan error, 1)
	go func() { drained <- eng.Drain(context.Background()) }()

	// Still running: a short bounded drain gives up with its context.
	short, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := eng.Drain(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("drain with a run under way: got %v, want %v", err, context.DeadlineExceeded)
	}
	select {
	case err := <-drained:
		t.Fatalf("drain returned %v while a run was under way", err)
	default:
	}
	close(release)
	select {
	case err := <-drained:
		if err != nil {
			t.Fatalf("drain: got %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("drain did not end once the run returned")
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-secondRan:
		t.Fatal("the second agent ran during the drain")
	default:
	}
	snap, err := store.Instance(t.Context(), inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != "SECOND" || snap.Status.Finished() {
		t.Fatalf("after the drain: got state %s status %s, want SECOND, running", snap.State, snap.Status)
	}
	outbox, err := store.Outbox(t.Context(), inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(outbox) != 1 || outbox[0].To != "second" {
		t.Fatalf("outbox after the drain: got %+v, want the second agent's work", outbox)
	}

	// The next engine on the store runs it.
	eng2, err := newEngine(w, reg, engine.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer eng2.Close()
	if _, err := eng2.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	h, err := eng2.Instance(inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel2 := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel2()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != "DONE" {
		t.Fatalf("after resume: got outcome %s, want DONE", res.Outcome)
	}
}
