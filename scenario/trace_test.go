package scenario_test

import (
	"context"
	"testing"

	"github.com/batonhq/baton/scenario"
)

// Each branch run of a parallel state is a step, and the step
// table has a row per step: the join's row must not overwrite the run of
// the last branch, whose step number it shares.
func TestTrace_StepTableKeepsTheLastBranchRun(t *testing.T) {
	s, err := scenario.Load("../examples/travel/scenarios/all_agree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scenario.Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() {
		t.Fatalf("scenario failed: %v", rep.Failures)
	}
	seen := map[string]string{}
	for _, row := range rep.Steps {
		seen[row.Agent] = row.Trigger
	}
	for _, agent := range []string{"flight", "hotel", "car"} {
		if got := seen[agent]; got != "found" {
			t.Errorf("branch %s: got trigger %q in the step table %+v, want its run listed with found", agent, got, rep.Steps)
		}
	}
}
