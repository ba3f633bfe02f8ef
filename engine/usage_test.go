package engine_test

import (
	"context"
	"math"
	"testing"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/registry"
)

// used reports trigger with usage u.
func used(trigger string, u registry.Usage) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: trigger, Usage: u}, nil
	}
}

func TestEngine_Usage_GoHandlerBadUsageFailsTheRun(t *testing.T) {
	for name, u := range map[string]registry.Usage{
		"negative tokens": {InputTokens: -1},
		"negative cost":   {Cost: -0.5},
		"NaN cost":        {Cost: math.NaN()},
		"infinite cost":   {Cost: math.Inf(1)},
	} {
		t.Run(name, func(t *testing.T) {
			// DRAFT retries twice: each bad report is a failed run, the
			// third ends the retries and fails the instance (no rule reads
			// error).
			r := newSimRun(t, "usage.yaml", map[string][]reply{"writer": repeat(3, used("drafted", u))})
			res, h := r.finish(nil)
			wantFailed(t, res, "no rule")
			runs := entries(h, "agent_run")
			if len(runs) != 3 {
				t.Fatalf("got %d agent_run entries, want 3 (history %s)", len(runs), kinds(h))
			}
			for _, e := range runs {
				if e.ErrorKind != "invalid_result" || e.Trigger != "" {
					t.Errorf("got run kind %q trigger %q error %q, want kind invalid_result and no trigger", e.ErrorKind, e.Trigger, e.Error)
				}
			}
		})
	}
}
