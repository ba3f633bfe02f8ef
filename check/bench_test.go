package check_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/rules"
)

// generated is a workflow of 200 states (195 agent states, 5 terminal) and
// 1,000 rules: five per agent state on ranges, sets and defaults, with a
// gap at score 7 in each, cycles back, and error rules.
func generated(tb testing.TB) *rules.Workflow {
	tb.Helper()
	const agents, terminals = 195, 5
	var b strings.Builder
	b.WriteString("workflow: generated\ninitial: S0\nagents:\n")
	for i := range agents {
		fmt.Fprintf(&b, "  a%d: {result: {score: int, label: string, n: \"int?\"}}\n", i)
	}
	b.WriteString("states:\n")
	for i := range agents {
		fmt.Fprintf(&b, "  S%d: {agent: a%d, timeout: 1m, retry: {max: 1}}\n", i, i)
	}
	for i := range terminals {
		fmt.Fprintf(&b, "  T%d: {terminal: true}\n", i)
	}
	state := func(i int) string {
		if i >= agents {
			return fmt.Sprintf("T%d", i%terminals)
		}
		return fmt.Sprintf("S%d", max(i, 0))
	}
	b.WriteString("rules:\n")
	n := 0
	rule := func(from int, trigger, cond, next string) {
		fmt.Fprintf(&b, "  - {id: r%d, from: a%d, trigger: %s, condition: '%s', next: %s}\n", n, from, trigger, cond, next)
		n++
	}
	for i := range agents {
		rule(i, "scored", "result.score < 3", state(i+1))
		rule(i, "scored", "result.score >= 3 && result.score < 7", state(i+2))
		rule(i, "scored", `result.score > 7 && result.label in ["a", "b"]`, fmt.Sprintf("T%d", i%terminals))
		rule(i, "again", "(result.n ?? 0) > 2", state(i-1))
		fmt.Fprintf(&b, "  - {id: r%d, from: a%d, trigger: [error, timeout, rejected], next: T%d}\n", n, i, i%terminals)
		n++
	}
	for i := 0; n < 1000; i++ {
		rule(i, "again", "(result.n ?? 0) <= 2", state(i+3))
	}
	w, err := rules.Parse("generated.yaml", []byte(b.String()))
	if err != nil {
		tb.Fatal(err)
	}
	if len(w.States) != 200 || len(w.Rules) != 1000 {
		tb.Fatalf("generated %d states and %d rules, want 200 and 1000", len(w.States), len(w.Rules))
	}
	return w
}

func TestCheck_GeneratedWorkflow(t *testing.T) {
	r := check.Check(generated(t))
	uncovered := 0
	for _, f := range r.All() {
		if f.Kind == check.KindUncovered && f.Trigger == "scored" {
			uncovered++
		}
	}
	if uncovered != 195 {
		t.Fatalf("got %d uncovered scored outcomes, want one per agent state (195)", uncovered)
	}
}

func BenchmarkCheck(b *testing.B) {
	paths, _ := filepath.Glob("../examples/*/workflow*.yaml")
	for _, p := range paths {
		w := load(b, p)
		b.Run(strings.TrimPrefix(filepath.Dir(p), "../examples/")+"/"+filepath.Base(p), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				check.Check(w)
			}
		})
	}
	w := generated(b)
	b.Run("generated-200-states-1000-rules", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			check.Check(w)
		}
	})
}
