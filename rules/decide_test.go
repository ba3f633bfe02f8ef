package rules_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/batonhq/baton/rules"
)

// TestDecide_MergesContextIntoANewMap holds the merged context to the
// instance's entries plus the rule's, in a new map that leaves the one
// decided from as it was: for a context cloned whole (it stays within a
// map's first group) and for one built entry by entry.
func TestDecide_MergesContextIntoANewMap(t *testing.T) {
	w := mustLoad(t, "../examples/refund/workflow.yaml")
	for _, n := range []int{2, 7, 8, 12} { // with approved_by: 3, 8, 9 and 13 entries
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			before := map[string]any{}
			for k := range n {
				before[fmt.Sprint("key", k)] = k
			}
			ctx := maps.Clone(before)
			env := decideEnv(ctx)
			d := w.Decide(env)
			if d.Err != nil || d.Rule == nil || d.Rule.ID != "approved" {
				t.Fatalf("got rule %v, error %v, want approved", d.Rule, d.Err)
			}
			want := maps.Clone(before)
			want["approved_by"] = "ann"
			if !maps.Equal(d.Context, want) {
				t.Errorf("got context %v, want %v", d.Context, want)
			}
			if !maps.Equal(ctx, before) {
				t.Errorf("the context decided from became %v, want %v", ctx, before)
			}
			d.Context["later"] = true // the instance's next merge must not reach back
			if _, ok := ctx["later"]; ok {
				t.Error("the merged context shares its entries with the one decided from")
			}
		})
	}
}

func decideEnv(ctx map[string]any) *rules.Env {
	return &rules.Env{
		Result: map[string]any{"approval": "APPROVED", "approver": "ann"}, Input: map[string]any{"order_id": "1", "amount": 50},
		Context: ctx, Visits: map[string]int{"VALIDATING": 1, "REVIEWING": 1}, State: "REVIEWING", Agent: "seller",
		Trigger: "reviewed", Step: 2, Attempt: 1,
	}
}
