package engine_test

import (
	"context"
	"testing"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// An external branch agent of a parallel state entered through a rule
// receives a real hand-off (with a hand-off id); accepting it must settle it
// like any other run's hand-off, not be refused as stale.
func TestEngine_TakingALiveParallelBranchIsNotStale(t *testing.T) {
	// lead is scripted; a, b and c are external branches of FAN.
	r := newSimRun(t, "join3_handoff.yaml", map[string][]reply{"lead": {ok("go", nil)}})
	ctx := t.Context()
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(r.queued("a"))
	m := receiveOne(t, busOf(r.eng), "a")
	if err := acceptWork(ctx, r.eng, m); err != nil {
		t.Errorf("taking branch a's live hand-off: got %v, want nil", err)
	}
	// Taking the work is not a step: the hand-off's record stays pending
	// until the branch's run ends.
	id, _ := m.Metadata["handoff_id"].(string)
	if rec, ok := lookupHandoff(t, r.eng, id); !ok || rec.Status != handoff.StatusPending || rec.To != "a" {
		t.Errorf("got hand-off record %+v, want it pending for a", rec)
	}
	if got := inst.Result(); got.Status != record.StatusRunning || got.State != "FAN" {
		t.Fatalf("got %s in %s, want the instance running in FAN", got.Status, got.State)
	}
}

// A reporter whose context is already done must not fail the instance:
// Report either refuses the report (the run stays current) or applies it.
func TestEngine_ReportWithADoneContextDoesNotFailTheInstance(t *testing.T) {
	// beta is external; alpha hands off to it.
	r := newSimRun(t, "chain.yaml", map[string][]reply{"alpha": {ok("next", nil)}})
	inst, err := r.eng.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(r.queued("beta"))
	done, cancel := context.WithCancel(t.Context())
	cancel()
	rerr := r.eng.Report(done, inst.ID(), 2, registry.Outcome{Trigger: "next"}, nil)
	if res := inst.Result(); res.Status == record.StatusFailed {
		t.Errorf("Report with a done context returned %v and failed the instance: %v", rerr, res.Err)
	}
}

// Close leaves the instances still running as they were (engine.Close doc):
// the handler it cancels must not turn into a failed run, an error outcome
// or a failed instance.
func TestEngine_CloseLeavesARunningInstanceAsItWas(t *testing.T) {
	beta := newBlocker()
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{"alpha": answer("next", nil), "beta": beta})
	ctx := t.Context()
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-beta.started
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := eng.Store().Instance(ctx, inst.ID())
	if err != nil || snap.Status != record.StatusRunning || snap.State != "SECOND" {
		t.Errorf("got stored %s in %s (%s), want still running in SECOND", snap.Status, snap.State, snap.Error)
	}
	if runs := entries(history(t, inst), record.KindAgentRun); len(runs) != 1 {
		t.Errorf("got %d agent runs (history %s), want only alpha's: Close is not beta's failure", len(runs), kinds(history(t, inst)))
	}
}
