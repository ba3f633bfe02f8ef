package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

func done(by string) registry.Outcome {
	return registry.Outcome{Trigger: "done", Result: map[string]any{"by": by}}
}

func TestSelect_Allowed(t *testing.T) {
	// desk is external and keeps its hand-off; human is a Go agent.
	r := newSimRun(t, "select.yaml", map[string][]reply{"human": {ok("done", map[string]any{"by": "human"})}})
	ctx := context.Background()
	inst := r.begin(nil)
	wantRunning(t, inst, "TRIAGE")
	if err := inst.Select(ctx, "human", "the customer asked for a person"); err != nil {
		t.Fatalf("Select: %v", err)
	}
	r.ready()
	res := inst.Result()
	wantCompleted(t, res, "DONE")
	if res.Context["by"] != "human" || res.Steps != 2 {
		t.Errorf("got by %v after %d steps, want human after 2", res.Context["by"], res.Steps)
	}

	task := r.script.runsOf("human")[0].Task
	if task.From != "desk" || task.Step != 2 || task.State != "TRIAGE" || task.Reason != "the customer asked for a person" || task.Description != "start select" {
		t.Errorf("got human's task %+v, want desk's step handed over at step 2", task)
	}
	recs := handoffHistory(t, r.eng, res.ID)
	if len(recs) != 1 || recs[0].Reason != handoff.ReasonUserRequest || recs[0].From != "desk" || recs[0].To != "human" {
		t.Errorf("got hand-off records %+v, want one desk->human user_request", recs)
	}

	// desk answers after all: its run had ended, so the reply is late.
	if err := r.answer("desk", done("desk"), nil); !errors.Is(err, engine.ErrStaleReport) {
		t.Errorf("desk's answer after the selection: got %v, want ErrStaleReport", err)
	}
	h := history(t, inst)
	sel := entries(h, record.KindSelected)
	if len(sel) != 1 || sel[0].Step != 1 || sel[0].From != "desk" || sel[0].To != "human" || sel[0].Detail != "the customer asked for a person" {
		t.Errorf("got selections %+v, want desk's step 1 handed to human with the explanation", sel)
	}
	if got, want := handoffPairs(h), []string{"desk->human"}; !slices.Equal(got, want) {
		t.Errorf("got hand-offs %v, want %v", got, want)
	}
	if got, want := outcomes(h), []string{"desk:done"}; !slices.Equal(got, want) {
		t.Errorf("got outcomes %v, want %v", got, want)
	}
	if got, want := lateSteps(h), []int{1}; !slices.Equal(got, want) {
		t.Errorf("got late replies for steps %v, want %v", got, want)
	}
	if res := inst.Result(); res.Context["by"] != "human" {
		t.Errorf("got by %v after desk's late reply, want human", res.Context["by"])
	}
}

func TestSelect_Refused_LeavesInstanceUnchanged(t *testing.T) {
	tests := []struct {
		name   string
		before []string // selections made first
		target string
		want   error
	}{
		{"not selectable", nil, "bot", handoff.ErrNotSelectable},
		{"unknown agent", nil, "nobody", registry.ErrUnknownAgent},
		{"system agent", nil, "root", handoff.ErrSystemAgent},
		{"the agent at work", []string{"human"}, "human", handoff.ErrSelfHandoff},
		{"loop window", []string{"human", "clerk"}, "human", handoff.ErrLoopDetected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "select.yaml", nil) // every agent is external
			ctx := context.Background()
			inst := r.begin(nil)
			working := "desk"
			for _, a := range tt.before {
				if err := inst.Select(ctx, a, "first choice"); err != nil {
					t.Fatalf("Select %s: %v", a, err)
				}
				working = a
			}
			before := inst.Result()
			hBefore := history(t, inst)

			err := inst.Select(ctx, tt.target, "wrong choice")
			if !errors.Is(err, tt.want) || !errors.Is(err, handoff.ErrHandoffRefused) {
				t.Fatalf("got %v, want a refusal matching %v", err, tt.want)
			}
			after := inst.Result()
			if after.Status != before.Status || after.State != before.State || after.Steps != before.Steps {
				t.Errorf("got %s in %s after %d steps, want %s in %s after %d", after.Status, after.State, after.Steps, before.Status, before.State, before.Steps)
			}
			if h := history(t, inst); len(h) != len(hBefore) {
				t.Errorf("got %d history entries after the refusal, want %d", len(h), len(hBefore))
			}
			// The agent at work still owns the step.
			if err := r.answer(working, done(working), nil); err != nil {
				t.Fatalf("answer %s: %v", working, err)
			}
			res := inst.Result()
			wantCompleted(t, res, "DONE")
			if res.Context["by"] != working {
				t.Errorf("got by %v, want %s", res.Context["by"], working)
			}
		})
	}
}

func TestSelect_NoActiveRun(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, r *simRun, inst *engine.Instance)
		state string
	}{
		{"parallel state", func(t *testing.T, r *simRun, _ *engine.Instance) {
			if err := r.answer("desk", registry.Outcome{Trigger: "fan"}, nil); err != nil {
				t.Fatal(err)
			}
		}, "FAN"},
		{"retry backoff", func(t *testing.T, r *simRun, _ *engine.Instance) {
			if err := r.answer("desk", registry.Outcome{}, errors.New("flaky")); err != nil {
				t.Fatal(err)
			}
		}, "TRIAGE"},
		{"finished", func(t *testing.T, r *simRun, _ *engine.Instance) {
			if err := r.answer("desk", done("desk"), nil); err != nil {
				t.Fatal(err)
			}
		}, "DONE"},
		{"cancelled", func(t *testing.T, _ *simRun, inst *engine.Instance) {
			if err := inst.Cancel(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, "TRIAGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "select.yaml", nil)
			inst := r.begin(nil)
			tt.setup(t, r, inst)
			before := inst.Result()
			if err := inst.Select(context.Background(), "human", "too late"); !errors.Is(err, engine.ErrNoActiveRun) {
				t.Fatalf("got %v, want ErrNoActiveRun", err)
			}
			after := inst.Result()
			if after.State != tt.state || after.Status != before.Status || after.Steps != before.Steps {
				t.Errorf("got %s in %s after %d steps, want %s in %s after %d", after.Status, after.State, after.Steps, before.Status, tt.state, before.Steps)
			}
			if sel := entries(history(t, inst), record.KindSelected); len(sel) != 0 {
				t.Errorf("got selections %+v, want none", sel)
			}
		})
	}
}

// On the worker pool, selecting another agent cancels the handler at work;
// its reply, when it comes, is recorded as late.
func TestSelect_Pool_CancelsRunningHandler(t *testing.T) {
	defer goleak.VerifyNone(t)
	desk := newBlocker()
	eng := poolEngine(t, "select.yaml", map[string]registry.Handler{
		"desk":  desk,
		"human": answer("done", map[string]any{"by": "human"}),
	})
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	select {
	case <-desk.started:
	case <-ctx.Done():
		t.Fatal("desk never started")
	}
	if err := inst.Select(ctx, "human", "faster"); err != nil {
		t.Fatalf("Select: %v", err)
	}
	res, err := inst.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	wantCompleted(t, res, "DONE")
	if res.Context["by"] != "human" {
		t.Errorf("got by %v, want human", res.Context["by"])
	}
	select {
	case err := <-desk.seen:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("desk saw %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("desk's handler was not cancelled")
	}
	// desk's worker records the reply once the handler has returned; Close
	// would make it drop the reply (the instance is left as it was), so
	// wait for it first.
	late := entries(history(t, inst), record.KindLateReply)
	for len(late) == 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
		late = entries(history(t, inst), record.KindLateReply)
	}
	if len(late) != 1 || late[0].Step != 1 || !strings.Contains(late[0].Error, "context canceled") {
		t.Errorf("got late replies %+v, want desk's step 1 cancelled", late)
	}
}
