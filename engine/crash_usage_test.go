package engine_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// crashUsage is what a run of the crash test's agent n reports it used:
// costs in eighths, so that every sum is exact.
func crashUsage(n int) registry.Usage {
	return registry.Usage{InputTokens: int64(n), OutputTokens: 1, Cost: float64(n) / 8}
}

// checkCrashUsage checks, after the crash test's kills and restarts, that
// every instance's usage totals are the sum of its agent_run entries'
// usage: a run applied once is counted once, whatever reports came again
// and whatever restarts resumed it.
func checkCrashUsage(t *testing.T, st record.Store) {
	t.Helper()
	ctx := context.Background()
	snaps, err := st.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		h, err := st.History(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		var sum registry.Ledger
		for _, e := range h {
			if e.Kind == record.KindAgentRun {
				sum = sum.Add(e.Agent, e.Usage)
			}
		}
		if s.Usage.Totals != sum.Totals || !reflect.DeepEqual(s.Usage.Agents, sum.Agents) {
			t.Errorf("instance %s: got usage %+v, want the sum of its runs %+v", s.ID, s.Usage, sum)
		}
		if s.Outcome == "DONE" {
			for _, a := range []string{"a", "b", "x", "y", "z", "c"} {
				if got := s.Usage.Agents.Of(a); got.Tokens == 0 {
					t.Errorf("instance %s: got %s's totals %+v, want its run counted", s.ID, a, got)
				}
			}
		}
	}
}
