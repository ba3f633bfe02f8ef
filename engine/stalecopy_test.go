package engine_test

import (
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/wire"
)

// Two engines share a store, as engines on one NATS cluster do: the
// instance starts on the first, the second takes it over and moves it into
// a parallel state, and the first has not yet learnt that it lost it (its
// lease not yet seen gone, a commit whose answer was lost). A branch's
// report that reaches the first engine names a step past its copy: were it
// answered invalid, the agent would drop the outcome and the join would
// wait for it until its timeout. It is answered unknown_instance, so that
// the agent reports again; the stale copy leaves the first engine, and the
// engine holding the instance takes the report and joins.
func TestEngine_Report_PastAStaleCopyIsReportedAgain(t *testing.T) {
	store := record.NewMemStore()
	stale := newSimRun(t, "join.yaml", nil, engine.WithStore(store))
	ctx := t.Context()
	inst := stale.start(nil)
	id := inst.ID()

	owner := newSimRun(t, "join.yaml", nil, engine.WithStore(store))
	rep, err := owner.eng.ResumeWhere(ctx, func(got string) bool { return got == id })
	if err != nil || len(rep.Resumed) != 1 {
		t.Fatalf("got %+v, %v, want %s resumed by the second engine", rep, err, id)
	}
	if ans := owner.eng.HandleReport(ctx, &wire.Report{InstanceID: id, Step: 1, Agent: "lead", Trigger: "all_fail"}); !ans.OK {
		t.Fatalf("lead's report to the owner: got %+v", ans)
	}
	outbox, err := store.Outbox(ctx, id)
	if err != nil {
		t.Fatalf("Outbox: %v", err)
	}
	steps := map[string]int{}
	for _, o := range outbox {
		steps[o.To] = o.Step
	}
	if len(steps) != 4 || steps["c"] <= 1 {
		t.Fatalf("got outbox %+v, want the four branches' work", outbox)
	}

	branch := func(agent string) *wire.Report {
		return &wire.Report{InstanceID: id, Step: steps[agent], Agent: agent, Trigger: "done", Result: map[string]any{"agent": agent}}
	}
	ans := stale.eng.HandleReport(ctx, branch("c"))
	if ans.OK || ans.Code != wire.CodeUnknownInstance {
		t.Fatalf("branch c's report to the engine whose copy is at step 1: got %+v, want unknown_instance (report again)", ans)
	}
	// The stale copy is gone: a second try is not taken by it either.
	if ans := stale.eng.HandleReport(ctx, branch("c")); ans.OK || ans.Code != wire.CodeUnknownInstance {
		t.Fatalf("branch c's report again to the first engine: got %+v, want unknown_instance", ans)
	}
	for _, agent := range []string{"a", "b", "c", "d"} {
		if ans := owner.eng.HandleReport(ctx, branch(agent)); !ans.OK {
			t.Fatalf("branch %s's report to the owner: got %+v", agent, ans)
		}
	}
	owner.settle()
	snap, err := store.Instance(ctx, id)
	if err != nil || snap.State != "JOINED" || snap.Status != record.StatusCompleted {
		t.Fatalf("got %+v, %v, want the instance joined with every branch's reply", snap, err)
	}
	hist, err := store.History(ctx, id)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	runs := 0
	for _, en := range hist {
		if en.Kind == record.KindAgentRun && en.Agent == "c" {
			runs++
		}
	}
	if runs != 1 {
		t.Fatalf("got %d agent_run entries of branch c, want 1", runs)
	}

	// A report for a step the store has not reached either is still invalid.
	if ans := owner.eng.HandleReport(ctx, &wire.Report{InstanceID: id, Step: 99, Agent: "c", Trigger: "done"}); ans.Code != wire.CodeInvalid {
		t.Fatalf("report for step 99 of a finished instance: got %+v, want invalid", ans)
	}
}

// A report for a step neither the engine's copy nor the store has reached
// is invalid: no work of that step was ever sent.
func TestEngine_Report_FutureStepTheStoreLacksIsInvalid(t *testing.T) {
	r := newSimRun(t, "join.yaml", nil)
	inst := r.start(nil)
	ans := r.eng.HandleReport(t.Context(), &wire.Report{InstanceID: inst.ID(), Step: 3, Agent: "c", Trigger: "done"})
	if ans.OK || ans.Code != wire.CodeInvalid {
		t.Fatalf("got %+v, want invalid", ans)
	}
	// The instance stays: its current run still takes its report.
	if ans := r.eng.HandleReport(t.Context(), &wire.Report{InstanceID: inst.ID(), Step: 1, Agent: "lead", Trigger: "all_fail"}); !ans.OK {
		t.Fatalf("lead's report: got %+v", ans)
	}
}
