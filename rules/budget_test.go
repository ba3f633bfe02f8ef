package rules_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/rules"
)

// TestMatch_HostileConditionsStayWithinBudget evaluates conditions built to
// run for minutes or take gigabytes. Each must fail with ErrBudget, count as
// false and be recorded, so that the fallback rule fires.
func TestMatch_HostileConditionsStayWithinBudget(t *testing.T) {
	tests := []struct {
		name, cond string
	}{
		{"nested loops over a range", "let a = 1..2000; all(a, {all(a, {all(a, {true})})})"},
		{"repeat of a repeat", "len(repeat(repeat('x', 1000000), 1000)) > 0"},
		{"doubling string", "len(reduce(1..64, #acc + #acc, 'xx')) > 0"},
		{"many strings joined", "len(join(map(1..50000, repeat('x', 1000)))) > 0"},
		{"replace into every gap", "len(replace(repeat('x', 100000), '', repeat('y', 100000))) > 0"},
		{"range over the memory budget", "len(1..100000000) > 0"},
		{"loop over input", "all(input.items, {all(input.items, {all(input.items, {# == #})})})"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "workflow: w\ninitial: A\nagents: {a: {}}\nstates: {A: {agent: a}, Y: {terminal: true}, Z: {terminal: true}}\n" +
				"rules:\n  - {id: hostile, from: a, trigger: t, next: Y, condition: \"" + tt.cond + "\"}\n" +
				"  - {id: fallback, from: a, trigger: t, next: Z}\n"
			w, err := rules.Parse("hostile.yaml", []byte(src))
			if err != nil {
				t.Fatalf("got %v, want the workflow to load", err)
			}
			items := make([]any, 1000)
			for i := range items {
				items[i] = i
			}
			env := &rules.Env{Result: map[string]any{}, Input: map[string]any{"items": items}, Context: map[string]any{}}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			m, err := w.Match("A", "a", "t", env)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			t.Logf("took %v, allocated %d KB", took, (after.TotalAlloc-before.TotalAlloc)>>10)
			if err != nil {
				t.Fatalf("got %v, want the fallback to fire", err)
			}
			if m.Rule.ID != "fallback" {
				t.Errorf("got rule %s, want fallback", m.Rule.ID)
			}
			if len(m.Tried) == 0 || m.Tried[0].Rule.ID != "hostile" {
				t.Fatalf("got tried %v, want the hostile condition first", m.Tried)
			}
			if err := m.Tried[0].Err; !errors.Is(err, rules.ErrBudget) && !strings.Contains(fmt.Sprint(err), "memory budget exceeded") {
				t.Errorf("got %v, want a budget error", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 256<<20 {
				t.Errorf("got %d MB allocated, want at most 256 MB", got>>20)
			}
		})
	}
}

// TestParse_WarnsAboutStaticallyHugeLoops warns at load about a condition
// whose literal ranges already exceed the iteration budget.
func TestParse_WarnsAboutStaticallyHugeLoops(t *testing.T) {
	tests := []struct {
		cond string
		warn bool
	}{
		{"let a = 1..2000; all(a, {all(a, {all(a, {true})})})", true},
		{"all(1..1000, {any(1..1000, {# > 5})})", true},
		{"all(1..100, {any(1..100, {# > 5})})", false},
		{"all(input.items, {all(input.items, {true})})", false},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			src := "workflow: w\ninitial: A\nagents: {a: {}}\nstates: {A: {agent: a}, Z: {terminal: true}}\n" +
				"rules:\n  - {id: r, from: a, trigger: t, next: Z, condition: \"" + tt.cond + "\"}\n" +
				"  - {id: f, from: a, trigger: t, next: Z}\n"
			w, err := rules.Parse("w.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			var got bool
			for _, d := range w.Warnings {
				if strings.Contains(d.Message, "more than the budget") {
					got = true
					if d.Line != 6 || d.Col < 1 {
						t.Errorf("got the warning at %d:%d, want line 6", d.Line, d.Col)
					}
				}
			}
			if got != tt.warn {
				t.Errorf("got warning %v, want %v (warnings %v)", got, tt.warn, w.Warnings)
			}
		})
	}
}
