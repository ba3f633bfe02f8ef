package engine_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/wire"
)

// TestEngine_HandleReport_AnswersEachReportOnce sends an external agent's
// reports of one run in the order a confused or late agent might: the
// refusals (another agent, a result that is not JSON, a step not reached)
// change nothing and leave the run under way; the agent's own report ends
// it, and the same report again is stale.
func TestEngine_HandleReport_AnswersEachReportOnce(t *testing.T) {
	ctx := context.Background()
	r := newSimRunOf(t, policyWorkflow(t, `timeout: 1h`), nil) // worker is external
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.settleReady(t)
	before := len(history(t, inst))
	refusals := []struct {
		name string
		rep  wire.Report
		want string
	}{
		{"another agent", wire.Report{Step: 1, Agent: "intruder", Trigger: "done"}, "run by worker, not intruder"},
		{"a result that is not JSON", wire.Report{Step: 1, Agent: "worker", Trigger: "done", Result: map[string]any{"x": math.NaN()}}, "result.x"},
		{"a step not reached", wire.Report{Step: 7, Agent: "worker", Trigger: "done"}, "step 7"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			rep := tt.rep
			rep.InstanceID = inst.ID()
			ans := r.eng.HandleReport(ctx, &rep)
			if ans.Code != wire.CodeInvalid || !strings.Contains(ans.Message, tt.want) {
				t.Errorf("got %+v, want invalid naming %q", ans, tt.want)
			}
			if res := inst.Result(); res.Status != record.StatusRunning || res.Steps != 1 {
				t.Errorf("got %+v, want the run still under way", res)
			}
			if after := len(history(t, inst)); after != before {
				t.Errorf("got %d history entries, want %d: a refused report records nothing", after, before)
			}
		})
	}
	done := wire.Report{InstanceID: inst.ID(), Step: 1, Agent: "worker", Trigger: "done"}
	if ans := r.eng.HandleReport(ctx, &done); !ans.OK {
		t.Fatalf("the agent's own report: got %+v, want ok", ans)
	}
	r.settle()
	wantCompleted(t, inst.Result(), "DONE")
	if ans := r.eng.HandleReport(ctx, &done); ans.Code != wire.CodeStale {
		t.Errorf("the same report again: got %+v, want stale", ans)
	}
}
