package rules_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/rules"
)

// benchWorkflow returns the jetvision example when it exists, else the
// largest valid fixture.
func benchWorkflow(b *testing.B) (string, []byte) {
	b.Helper()
	path := "../examples/jetvision/workflow.yaml"
	if src, err := os.ReadFile(path); err == nil {
		return path, src
	}
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	var best string
	var bestSrc []byte
	for _, f := range files {
		if src, err := os.ReadFile(f); err == nil && len(src) > len(bestSrc) {
			best, bestSrc = f, src
		}
	}
	if best == "" {
		b.Fatal("no workflow to load")
	}
	return best, bestSrc
}

func BenchmarkLoad(b *testing.B) {
	path, src := benchWorkflow(b)
	b.Logf("loading %s (%d bytes)", path, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rules.Parse(path, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMatch selects a rule among the three candidates of the refund
// seller's `reviewed` outcome: approved, rejected, then the fallback.
func BenchmarkMatch(b *testing.B) {
	w, err := rules.Load("testdata/valid/refund.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if n := len(w.Candidates("REVIEWING", "seller", "reviewed")); n != 3 {
		b.Fatalf("got %d candidates, want 3", n)
	}
	cases := []struct {
		name, approval, want string
	}{
		{"first", "APPROVED", "approved"},
		{"second", "REJECTED", "rejected"},
		{"fallback", "UNSURE", "review_undecided"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			env := &rules.Env{Result: map[string]any{"approval": c.approval}, Input: map[string]any{}, Context: map[string]any{},
				Visits: map[string]int{"REVIEWING": 1}, State: "REVIEWING", Agent: "seller", Trigger: "reviewed", Step: 2, Attempt: 1}
			b.ReportAllocs()
			for b.Loop() {
				m, err := w.Match("REVIEWING", "seller", "reviewed", env)
				if err != nil || m.Rule.ID != c.want {
					b.Fatalf("got %v, %v, want %s", m.Rule, err, c.want)
				}
			}
		})
	}
}

// BenchmarkMatch_VM measures a condition that needs the expr virtual
// machine (not the `ROOT.key == literal` shortcut).
func BenchmarkMatch_VM(b *testing.B) {
	w, err := rules.Load("testdata/valid/matcher.yaml")
	if err != nil {
		b.Fatal(err)
	}
	env := &rules.Env{Result: map[string]any{"n": 10}, Input: map[string]any{}, Context: map[string]any{}, Visits: map[string]int{}}
	b.ReportAllocs()
	for b.Loop() {
		m, err := w.Match("S", "a", "go", env)
		if err != nil || m.Rule.ID != "high" {
			b.Fatalf("got %v, %v, want high", m.Rule, err)
		}
	}
}

// BenchmarkDecide decides the refund customer's `validated` outcome: the
// eligible rule's condition, its task joining strings and its three
// context values, as the engine does at each step.
func BenchmarkDecide(b *testing.B) {
	w, err := rules.Load("../examples/refund/workflow.yaml")
	if err != nil {
		b.Fatal(err)
	}
	env := &rules.Env{Result: map[string]any{"refund_eligible": true, "order_id": "1"}, Input: map[string]any{"order_id": "1", "amount": 50},
		Context: map[string]any{}, Visits: map[string]int{"VALIDATING": 1}, State: "VALIDATING", Agent: "customer", Trigger: "validated", Step: 1, Attempt: 1}
	b.ReportAllocs()
	for b.Loop() {
		d := w.Decide(env)
		if d.Err != nil || d.Rule.ID != "eligible" || d.Task != "Approve refund for order 1" {
			b.Fatalf("got %v, %q, %v, want eligible", d.Rule, d.Task, d.Err)
		}
	}
}
