package rules_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
)

func TestForeach_Load(t *testing.T) {
	w := mustLoad(t, "testdata/valid/foreach.yaml")
	st, _ := w.State("REVIEWS")
	if !st.Iterates() || st.Foreach.Agent != "reviewer" || st.Foreach.MaxConcurrency != 2 {
		t.Fatalf("got foreach %+v, want agent reviewer, max_concurrency 2", st.Foreach)
	}
	if w.Owner("REVIEWS") != "REVIEWS" {
		t.Errorf("got owner %q, want the state itself", w.Owner("REVIEWS"))
	}
	if len(w.Warnings) != 0 {
		t.Errorf("got warnings %v, want none", w.Warnings)
	}
	if !st.Foreach.TolerateIsPercent || st.Foreach.Tolerate != 25 || st.Timeout == 0 || st.Retry.Max != 1 {
		t.Errorf("got tolerate %d (percent %v), timeout %s, retry %+v; want 25%%, the state's timeout and retry", st.Foreach.Tolerate, st.Foreach.TolerateIsPercent, st.Timeout, st.Retry)
	}
}

func mustLoad(t *testing.T, path string) *rules.Workflow {
	t.Helper()
	w, err := rules.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestForeach_Tolerated(t *testing.T) {
	tests := []struct {
		name    string
		f       rules.Foreach
		n, want int
	}{
		{"a count", rules.Foreach{Tolerate: 2}, 10, 2},
		{"a count above the items", rules.Foreach{Tolerate: 5}, 3, 5},
		{"a percentage rounded down", rules.Foreach{Tolerate: 25, TolerateIsPercent: true}, 7, 1},
		{"a percentage of none", rules.Foreach{Tolerate: 25, TolerateIsPercent: true}, 0, 0},
		{"all of them", rules.Foreach{Tolerate: 100, TolerateIsPercent: true}, 3, 3},
		{"the default", rules.Foreach{}, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Tolerated(tt.n); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestForeach_Items(t *testing.T) {
	w := mustLoad(t, "testdata/valid/foreach.yaml")
	st, _ := w.State("REVIEWS")
	tests := []struct {
		name    string
		docs    any
		want    int
		wantErr string
	}{
		{"a list", []any{"a", "b", "c"}, 3, ""},
		{"an empty list", []any{}, 0, ""},
		{"a typed slice", []string{"a", "b"}, 2, ""},
		{"missing", nil, 0, "yields nil, want a list"},
		{"a string", "abc", 0, "yields string, want a list"},
		{"a map", map[string]any{"a": 1}, 0, "yields map[string]interface {}, want a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := map[string]any{}
			if tt.docs != nil {
				ctx["docs"] = tt.docs
			}
			items, err := w.Items(st, &rules.Env{Context: ctx})
			if tt.wantErr != "" {
				var ie *rules.ItemsError
				if !errors.As(err, &ie) || ie.State != "REVIEWS" || !contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an *ItemsError containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(items) != tt.want {
				t.Fatalf("got %v, %v; want %d items", items, err, tt.want)
			}
		})
	}
}

func TestForeach_DecideCountsOneStepPerItem(t *testing.T) {
	w := mustLoad(t, "testdata/valid/foreach.yaml") // max_steps 20
	docs := func(n int) []any { return make([]any, n) }
	tests := []struct {
		name      string
		step      int
		result    map[string]any
		wantLimit bool
		wantItems int
		wantErr   bool
	}{
		{"within max_steps", 1, map[string]any{"docs": docs(19)}, false, 19, false},
		{"one item too many", 1, map[string]any{"docs": docs(20)}, true, 0, false},
		{"later in the instance", 10, map[string]any{"docs": docs(11)}, true, 0, false},
		{"no list: entered, with the error", 1, map[string]any{"docs": "x"}, false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := w.Decide(&rules.Env{State: "SPLIT", Agent: "splitter", Trigger: "split", Step: tt.step, Result: tt.result, Visits: map[string]int{"SPLIT": 1}})
			if d.Rule == nil || d.Rule.ID != "split" {
				t.Fatalf("got rule %v (%v), want split", d.Rule, d.Err)
			}
			if (d.Limit != nil) != tt.wantLimit {
				t.Fatalf("got limit %+v, want a limit: %v", d.Limit, tt.wantLimit)
			}
			if tt.wantLimit {
				if d.Limit.Limit != "max_steps" || d.Limit.State != "REVIEWS" || d.Limit.Count != tt.step+len(tt.result["docs"].([]any)) {
					t.Errorf("got %+v, want max_steps entering REVIEWS counting each item", d.Limit)
				}
				return
			}
			if len(d.Items) != tt.wantItems || (d.ItemsErr != nil) != tt.wantErr {
				t.Errorf("got %d items, error %v; want %d, error %v", len(d.Items), d.ItemsErr, tt.wantItems, tt.wantErr)
			}
		})
	}
}
