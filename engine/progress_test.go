package engine_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

func TestEngine_Progress_ToldKeptAndNeverRecorded(t *testing.T) {
	ctx := context.Background()
	r := newSimRunOf(t, policyWorkflow(t, `timeout: 1h`), nil) // worker is external
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.settleReady(t)
	before := len(history(t, inst))

	first := registry.Progress{Message: "searching flights"}
	if err := r.eng.Progress(ctx, inst.ID(), 1, "worker", first); err != nil {
		t.Fatalf("Progress: %v", err)
	}
	second := registry.Progress{Message: "writing", Delta: "Dear ", Data: map[string]any{"found": 3}}
	ans := r.eng.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: 1, Agent: "worker", Progress: &second})
	if !ans.OK {
		t.Fatalf("progress report: got %+v, want ok", ans)
	}
	got := inst.Progress()
	if len(got) != 1 || got[0].Step != 1 || got[0].Agent != "worker" || got[0].Progress.Delta != "Dear " || got[0].Progress.Message != "writing" || !got[0].At.Equal(r.sim.Now()) {
		t.Errorf("got progress %+v, want the latest of step 1", got)
	}
	var told []registry.Progress
	for _, ev := range r.events {
		if ev.Type == engine.EventAgentProgress {
			if ev.InstanceID != inst.ID() || ev.Step != 1 || ev.Agent != "worker" || ev.State != "WORK" || ev.Progress == nil {
				t.Errorf("got event %+v, want the instance, step 1, worker, WORK and the progress", ev)
				continue
			}
			told = append(told, *ev.Progress)
		}
	}
	if len(told) != 2 || told[0].Message != first.Message || told[1].Delta != second.Delta {
		t.Errorf("got agent_progress events %+v, want both, in order", told)
	}
	if after := len(history(t, inst)); after != before {
		t.Errorf("got %d history entries after progress, want %d: progress is never recorded", after, before)
	}

	if ans := r.eng.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: 1, Agent: "worker", Trigger: "done"}); !ans.OK {
		t.Fatalf("report: %+v", ans)
	}
	r.settle()
	wantCompleted(t, inst.Result(), "DONE")
	if got := inst.Progress(); len(got) != 0 {
		t.Errorf("got progress %+v after the run ended, want none", got)
	}
	for _, e := range history(t, inst) {
		if e.Detail == first.Message || e.Detail == second.Message {
			t.Errorf("got entry %+v, want no trace of progress in the history", e)
		}
	}
}

func TestEngine_Progress_Refusals(t *testing.T) {
	ctx := context.Background()
	r := newSimRunOf(t, policyWorkflow(t, `timeout: 1h`), nil)
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.settleReady(t)
	p := registry.Progress{Message: "m"}
	var ie *engine.InputError
	if err := r.eng.Progress(ctx, inst.ID(), 2, "worker", p); !errors.Is(err, engine.ErrStaleReport) {
		t.Errorf("a step not under way: got %v, want ErrStaleReport", err)
	}
	if err := r.eng.Progress(ctx, "nobody", 1, "worker", p); !errors.Is(err, engine.ErrUnknownInstance) {
		t.Errorf("an unknown instance: got %v, want ErrUnknownInstance", err)
	}
	if err := r.eng.Progress(ctx, inst.ID(), 1, "someone", p); !errors.As(err, &ie) || ie.Field != "agent" {
		t.Errorf("another agent: got %v, want an *InputError naming agent", err)
	}
	if err := r.eng.Progress(ctx, inst.ID(), 1, "worker", registry.Progress{Data: map[string]any{"x": math.NaN()}}); !errors.As(err, &ie) || ie.Field != "progress.data.x" {
		t.Errorf("data JSON cannot hold: got %v, want an *InputError naming progress.data.x", err)
	}
	for _, bad := range []struct {
		id    string
		step  int
		agent string
	}{{"", 1, "worker"}, {inst.ID(), 0, "worker"}, {inst.ID(), 1, ""}} {
		if err := r.eng.Progress(ctx, bad.id, bad.step, bad.agent, p); !errors.As(err, &ie) {
			t.Errorf("identity %+v: got %v, want an *InputError", bad, err)
		}
	}
	if err := r.eng.Progress(nil, inst.ID(), 1, "worker", p); err == nil { //nolint:staticcheck // a nil context is refused
		t.Error("a nil context: got nil, want an error")
	}
	rep := func(step int, agent string) wire.Answer {
		return r.eng.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: step, Agent: agent, Progress: &p})
	}
	if ans := rep(2, "worker"); ans.Code != wire.CodeStale {
		t.Errorf("progress report for step 2: got %+v, want stale", ans)
	}
	if ans := rep(1, "someone"); ans.Code != wire.CodeInvalid {
		t.Errorf("progress report from another agent: got %+v, want invalid", ans)
	}
	if ans := r.eng.HandleReport(ctx, &wire.Report{InstanceID: "nobody", Step: 1, Agent: "worker", Progress: &p}); ans.Code != wire.CodeUnknownInstance {
		t.Errorf("progress report for an unknown instance: got %+v, want unknown_instance", ans)
	}
	both := wire.Report{InstanceID: inst.ID(), Step: 1, Agent: "worker", Progress: &p, Trigger: "done"}
	if ans := r.eng.HandleReport(ctx, &both); ans.Code != wire.CodeInvalid {
		t.Errorf("progress with a trigger: got %+v, want invalid", ans)
	}
	if got := inst.Progress(); len(got) != 0 {
		t.Errorf("got progress %+v, want none kept from refused progress", got)
	}
	if res := inst.Result(); res.Status != record.StatusRunning || res.Steps != 1 {
		t.Errorf("got %+v, want the run still under way: refusals change nothing", res)
	}
	// Once the run is over, its progress is stale.
	if ans := r.eng.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: 1, Agent: "worker", Trigger: "done"}); !ans.OK {
		t.Fatalf("report: %+v", ans)
	}
	r.settle()
	if err := r.eng.Progress(ctx, inst.ID(), 1, "worker", p); !errors.Is(err, engine.ErrStaleReport) {
		t.Errorf("a finished step: got %v, want ErrStaleReport", err)
	}
}

// Progress counts as a heartbeat: the run's heartbeat timer starts again.
func TestEngine_Progress_IsAHeartbeat(t *testing.T) {
	ctx := context.Background()
	r := newSimRunOf(t, policyWorkflow(t, `heartbeat: 30s`), nil)
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.settleReady(t)
	start := r.sim.Now()
	r.sim.Advance(20 * time.Second)
	if err := r.eng.Progress(ctx, inst.ID(), 1, "worker", registry.Progress{Message: "still at it"}); err != nil {
		t.Fatal(err)
	}
	r.sim.Advance(29 * time.Second)
	r.settleReady(t)
	if res := inst.Result(); res.Status != record.StatusRunning {
		t.Fatalf("got %s 49s in, with progress 29s ago, want the run still under way", res.Status)
	}
	r.settle()
	out := entries(history(t, inst), record.KindAgentRun)
	if len(out) != 1 || out[0].ErrorKind != "heartbeat" || !out[0].Time.Equal(start.Add(50*time.Second)) {
		t.Fatalf("got runs %+v, want one failed for want of a heartbeat at +50s", out)
	}
}

// settleReady runs what is ready on the simulator without moving its clock.
func (r *simRun) settleReady(t *testing.T) {
	t.Helper()
	if err := r.sim.RunReady(context.Background()); err != nil {
		t.Fatal(err)
	}
}
