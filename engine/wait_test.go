package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/wire"
)

// startWaiting starts an instance of wait.yaml and runs the simulator until
// it waits for a signal.
func startWaiting(t *testing.T, r *simRun) *engine.Instance {
	t.Helper()
	inst, err := r.eng.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(func() bool { return inst.Result().Waiting != "" })
	if got := inst.Result().Waiting; got != "APPROVAL" {
		t.Fatalf("got waiting %q (state %s), want APPROVAL", got, inst.Result().State)
	}
	return inst
}

func TestEngine_Wait_Signals(t *testing.T) {
	drafted := ok("drafted", map[string]any{"text": "hello"})
	tests := []struct {
		name        string
		agents      map[string][]reply
		signal      string
		data        map[string]any
		wantOutcome string
		wantContext map[string]any
		wantSteps   int
	}{
		{
			name:   "approved: the signal's data is the result",
			agents: map[string][]reply{"writer": {drafted}, "publisher": {ok("published", nil)}},
			signal: "approved", data: map[string]any{"by": "ana"},
			wantOutcome: "DONE", wantContext: map[string]any{"draft": "hello", "approver": "ana"}, wantSteps: 2,
		},
		{
			name:   "rejected: another signal the state lists",
			agents: map[string][]reply{"writer": {drafted}},
			signal: "rejected", data: map[string]any{"reason": "tone"},
			wantOutcome: "REJECTED", wantContext: map[string]any{"draft": "hello", "why": "tone"}, wantSteps: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "wait.yaml", tt.agents)
			inst := startWaiting(t, r)
			before := inst.Result()
			if before.Status != record.StatusRunning || before.Steps != 1 {
				t.Fatalf("got %s after %d steps, want running after 1 (a wait is not a step)", before.Status, before.Steps)
			}
			if err := inst.Signal(context.Background(), tt.signal, tt.data); err != nil {
				t.Fatalf("Signal: %v", err)
			}
			r.settle()
			res := inst.Result()
			wantCompleted(t, res, tt.wantOutcome)
			if res.Steps != tt.wantSteps || res.Waiting != "" {
				t.Errorf("got %d steps, waiting %q; want %d, not waiting", res.Steps, res.Waiting, tt.wantSteps)
			}
			for k, v := range tt.wantContext {
				if res.Context[k] != v {
					t.Errorf("context %s: got %v, want %v", k, res.Context[k], v)
				}
			}
			h := history(t, inst)
			sig := entries(h, record.KindSignal)
			if len(sig) != 1 || sig[0].Trigger != tt.signal || sig[0].State != "APPROVAL" {
				t.Fatalf("got signal entries %+v, want one %s in APPROVAL", sig, tt.signal)
			}
			if w := entries(h, record.KindWaiting); len(w) != 1 || w[0].Delay != 48*time.Hour {
				t.Errorf("got waiting entries %+v, want one with the 48h timeout", w)
			}
			var told bool
			for _, ev := range r.events {
				told = told || (ev.Type == engine.EventSignalReceived && ev.Signal == tt.signal)
			}
			if !told {
				t.Errorf("no %s event for %s", engine.EventSignalReceived, tt.signal)
			}
		})
	}
}

func TestEngine_Wait_RefusedSignalsChangeNothing(t *testing.T) {
	ctx := context.Background()
	r := newSimRun(t, "wait.yaml", map[string][]reply{"writer": {ok("drafted", nil)}})
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The writer's run is under way: the instance does not wait yet.
	if err := inst.Signal(ctx, "approved", nil); !errors.Is(err, engine.ErrUnexpectedSignal) {
		t.Fatalf("signal while running: got %v, want ErrUnexpectedSignal", err)
	}
	r.runUntil(func() bool { return inst.Result().Waiting != "" })
	before, hBefore := inst.Result(), history(t, inst)
	tests := []struct {
		name, signal string
		data         map[string]any
		want         error
	}{
		{"a signal the state does not list", "maybe", nil, engine.ErrUnexpectedSignal},
		{"the timeout's outcome is no signal", "timeout", nil, engine.ErrUnexpectedSignal},
		{"data that is not JSON", "approved", map[string]any{"f": func() {}}, engine.ErrInvalidData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := inst.Signal(ctx, tt.signal, tt.data); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			after := inst.Result()
			if after.Waiting != before.Waiting || after.State != before.State || after.Steps != before.Steps {
				t.Errorf("got %+v, want it unchanged from %+v", after, before)
			}
			if h := history(t, inst); len(h) != len(hBefore) {
				t.Errorf("history grew from %d to %d entries: %s", len(hBefore), len(h), kinds(h))
			}
		})
	}
	if err := r.eng.Signal(ctx, "nobody", "approved", nil); !errors.Is(err, engine.ErrUnknownInstance) {
		t.Errorf("Engine.Signal to an unknown id: got %v, want ErrUnknownInstance", err)
	}
	if err := r.eng.Signal(ctx, inst.ID(), "rejected", map[string]any{"reason": "no"}); err != nil {
		t.Fatalf("Engine.Signal: %v", err)
	}
	r.settle()
	wantCompleted(t, inst.Result(), "REJECTED")
}

func TestEngine_Wait_TimeoutThenSignalRefused(t *testing.T) {
	ctx := context.Background()
	r := newSimRun(t, "wait.yaml", map[string][]reply{"writer": {ok("drafted", nil)}})
	inst := startWaiting(t, r)
	since := r.sim.Now()
	r.settle() // nothing comes: the wait times out
	res := inst.Result()
	wantCompleted(t, res, "EXPIRED")
	if res.Context["kind"] != "timeout" || res.Context["why"] != "no signal (approved, rejected) within 48h0m0s" {
		t.Errorf("got context %v, want error.kind timeout and the wait's message", res.Context)
	}
	h := history(t, inst)
	out := entries(h, record.KindOutcome)
	last := out[len(out)-1]
	if last.Trigger != "timeout" || !last.Time.Equal(since.Add(48*time.Hour)) {
		t.Errorf("got outcome %s at %s, want timeout at %s", last.Trigger, last.Time, since.Add(48*time.Hour))
	}
	if err := inst.Signal(ctx, "approved", nil); !errors.Is(err, engine.ErrUnexpectedSignal) {
		t.Errorf("signal after the timeout: got %v, want ErrUnexpectedSignal", err)
	}
	if err := r.eng.Signal(ctx, inst.ID(), "approved", nil); !errors.Is(err, engine.ErrUnexpectedSignal) {
		t.Errorf("Engine.Signal after the end: got %v, want ErrUnexpectedSignal", err)
	}
	if n := len(history(t, inst)); n != len(h) {
		t.Errorf("a refused signal changed the history: %d entries, want %d", n, len(h))
	}
}

// waitEngine builds an engine of wait.yaml on store and sim whose writer
// and publisher are external agents.
func waitEngine(t *testing.T, store record.Store, sim *clock.Sim) *engine.Engine {
	t.Helper()
	w := loadWorkflow(t, "wait.yaml")
	reg, err := engine.NewRegistry(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := newEngine(w, reg, engine.WithStore(store), engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("w")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

func TestEngine_Wait_ResumedStillWaitingWithItsDeadline(t *testing.T) {
	for _, name := range storeNames {
		for _, path := range []string{"signal", "timeout"} {
			t.Run(name+"/"+path, func(t *testing.T) {
				ctx := context.Background()
				store := openStore(t, name)
				sim := clock.NewSim(epoch)
				first := waitEngine(t, store, sim)
				inst, err := first.Start(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := first.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "drafted", Result: map[string]any{"text": "t"}}, nil); err != nil {
					t.Fatal(err)
				}
				if err := sim.RunReady(ctx); err != nil {
					t.Fatal(err)
				}
				since := sim.Now()
				sim.Advance(10 * time.Hour)
				_ = first.Close() // the process dies while the instance waits

				second := waitEngine(t, store, sim)
				rep, err := second.Resume(ctx)
				if err != nil || !slices.Equal(rep.Resumed, []string{inst.ID()}) {
					t.Fatalf("Resume: got %+v, %v; want %s resumed", rep, err, inst.ID())
				}
				again, err := second.Instance(inst.ID())
				if err != nil {
					t.Fatal(err)
				}
				if got := again.Result().Waiting; got != "APPROVAL" {
					t.Fatalf("resumed: got waiting %q, want APPROVAL", got)
				}
				if path == "signal" {
					if err := second.Signal(ctx, inst.ID(), "rejected", map[string]any{"reason": "late"}); err != nil {
						t.Fatalf("Signal after resume: %v", err)
					}
					wantCompleted(t, again.Result(), "REJECTED")
					return
				}
				if err := sim.Run(ctx, nil); err != nil {
					t.Fatal(err)
				}
				wantCompleted(t, again.Result(), "EXPIRED")
				h := history(t, again)
				out := entries(h, record.KindOutcome)
				if last := out[len(out)-1]; !last.Time.Equal(since.Add(48 * time.Hour)) {
					t.Errorf("timed out at %s, want the original deadline %s", last.Time, since.Add(48*time.Hour))
				}
			})
		}
	}
}

func TestEngine_Wait_ResumedPastItsDeadlineTimesOut(t *testing.T) {
	ctx := context.Background()
	store := record.NewMemStore()
	sim := clock.NewSim(epoch)
	first := waitEngine(t, store, sim)
	inst, err := first.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "drafted"}, nil); err != nil {
		t.Fatal(err)
	}
	_ = first.Close()
	sim.Advance(72 * time.Hour) // down for longer than the wait's timeout

	second := waitEngine(t, store, sim)
	if _, err := second.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := second.Instance(inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, again.Result(), "EXPIRED")
}

func TestEngine_Wait_InitialState(t *testing.T) {
	w, err := rules.Parse("gate.yaml", []byte(`
workflow: gate
initial: GATE
agents: {worker: {}}
states:
  GATE: {wait: {signals: [open]}}
  WORK: {agent: worker}
  DONE: {terminal: true}
rules:
  - {id: open, from: GATE, trigger: open, next: WORK}
  - {id: done, from: worker, trigger: done, next: DONE, context: {got: result.n}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newSimRunOf(t, w, map[string][]reply{"worker": {func(_ context.Context, _ *clock.Sim, task *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "done", Result: map[string]any{"n": task.PreviousResult["n"]}}, nil
	}}})
	inst := r.start(nil) // nothing runs: no timer, no work
	if res := inst.Result(); res.Waiting != "GATE" || res.Steps != 0 {
		t.Fatalf("got waiting %q after %d steps, want GATE after 0", res.Waiting, res.Steps)
	}
	if err := inst.Signal(context.Background(), "open", map[string]any{"n": 3}); err != nil {
		t.Fatal(err)
	}
	r.settle()
	res := inst.Result()
	wantCompleted(t, res, "DONE")
	if res.Context["got"] != 3 || res.Steps != 1 {
		t.Errorf("got context %v after %d steps, want the signal's data as the worker's previous result, 1 step", res.Context, res.Steps)
	}
}

// Work a rule sends out of a wait state names the rule as its reason and
// carries the rule's words as the explanation, for a Go handler and on the
// wire alike; no agent hands over.
func TestEngine_Wait_WorkAfterAWaitHasReasonRule(t *testing.T) {
	w, err := rules.Parse("gate.yaml", []byte(`
workflow: gate
initial: GATE
agents: {worker: {}}
states:
  GATE: {wait: {signals: [open]}}
  WORK: {agent: worker}
  DONE: {terminal: true}
rules:
  - {id: open, from: GATE, trigger: open, next: WORK, reason: the gate was opened}
  - {id: done, from: worker, trigger: done, next: DONE}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got registry.Task
	r := newSimRunOf(t, w, map[string][]reply{"worker": {func(_ context.Context, _ *clock.Sim, task *registry.Task) (registry.Outcome, error) {
		got = *task
		return registry.Outcome{Trigger: "done"}, nil
	}}})
	inst := r.start(nil)
	if err := inst.Signal(context.Background(), "open", nil); err != nil {
		t.Fatal(err)
	}
	r.settle()
	wantCompleted(t, inst.Result(), "DONE")
	if got.Kind != "rule" || got.Reason != "the gate was opened" || got.From != "" || got.HandoffID != "" {
		t.Fatalf("got kind %q, reason %q, from %q, hand-off %q; want kind rule with the rule's words, from nobody", got.Kind, got.Reason, got.From, got.HandoffID)
	}
	m := wire.Encode(&got)
	content := m.Content
	if content["reason"] != "rule" || content["explanation"] != "the gate was opened" {
		t.Errorf("on the wire: got reason %v, explanation %v; want rule and the rule's words", content["reason"], content["explanation"])
	}
	back, err := wire.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	if back.Kind != "rule" || back.Reason != "the gate was opened" {
		t.Errorf("decoded: got kind %q, reason %q; want rule and the rule's words", back.Kind, back.Reason)
	}
}
