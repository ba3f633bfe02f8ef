package rules_test

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

const usageWorkflow = `
workflow: w
initial: A
%s
agents:
  a: {type: t}
states:
  A: {agent: a}
  B: {terminal: true}
rules:
  - {id: r, from: a, trigger: ok, condition: '%s', next: B}
`

func usageSource(input, cond string) []byte {
	return []byte(strings.Replace(strings.Replace(usageWorkflow, "%s", input, 1), "%s", cond, 1))
}

// usage is part of the expression environment, typed: its fields are
// numbers whether or not the workflow declares its data.
func TestLoad_UsageInExpressions(t *testing.T) {
	for _, input := range []string{"", "input: {order: string}"} {
		for _, cond := range []string{
			"usage.cost > 1", "usage.tokens >= 1000", "usage.input_tokens + usage.output_tokens == usage.tokens",
			"usage.cost / 2 < 0.5 && usage.tokens % 2 == 0",
		} {
			if _, err := rules.Parse("w.yaml", usageSource(input, cond)); err != nil {
				t.Errorf("input %q, condition %q: got %v, want it to load", input, cond, err)
			}
		}
		for cond, want := range map[string]string{
			"usage.costs > 1":   `usage has no field costs (did you mean "cost"?)`,
			`usage.cost == "x"`: "mismatched types",
			"usag.cost > 1":     `did you mean "usage"?`,
			"usage.visit.cost":  "visit",
		} {
			_, err := rules.Parse("w.yaml", usageSource(input, cond))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("input %q, condition %q: got %v, want an error containing %q", input, cond, err, want)
			}
		}
	}
}

func TestEval_Usage(t *testing.T) {
	w, err := rules.Parse("w.yaml", usageSource("", "usage.cost > 1 && usage.tokens == 30"))
	if err != nil {
		t.Fatal(err)
	}
	env := rules.Env{Usage: registry.Totals{}.Add(registry.Usage{InputTokens: 10, OutputTokens: 20, Cost: 1.5})}
	if ok, err := w.Rules[0].Condition.Eval(&env); err != nil || ok != true {
		t.Errorf("got %v, %v, want true", ok, err)
	}
	if ok, err := w.Rules[0].Condition.Eval(&rules.Env{}); err != nil || ok != false {
		t.Errorf("got %v, %v with no usage, want false (zeros)", ok, err)
	}
}

const budgetWorkflow = `workflow: w
initial: A
agents:
  a: {type: t}
states:
  A: {agent: a%s}
  B: {terminal: true%s}
limits:
%s
rules:
  - {id: r, from: a, trigger: ok, next: B}
`

func budgetSource(state, terminal, limits string) []byte {
	s := strings.Replace(budgetWorkflow, "%s", state, 1)
	s = strings.Replace(s, "%s", terminal, 1)
	return []byte(strings.Replace(s, "%s", limits, 1))
}

func TestLoad_Budgets(t *testing.T) {
	w, err := rules.Parse("w.yaml", budgetSource(", max_tokens: 5_000_000_000, max_cost: 0.5", "", "  max_tokens: 200000\n  max_cost: 5.00\n  max_duration: 2h"))
	if err != nil {
		t.Fatal(err)
	}
	if l := w.Limits; l.MaxTokens != 200000 || l.MaxCost != 5 || l.MaxDuration != 2*time.Hour {
		t.Errorf("got limits %+v, want max_tokens 200000, max_cost 5, max_duration 2h", l)
	}
	a, _ := w.State("A")
	if a.MaxTokens != 5_000_000_000 || a.MaxCost != 0.5 {
		t.Errorf("got state budgets %d and %v, want 5000000000 and 0.5", a.MaxTokens, a.MaxCost)
	}
	w, err = rules.Parse("w.yaml", budgetSource("", "", "  max_cost: 3"))
	if err != nil || w.Limits.MaxCost != 3 || w.Limits.MaxTokens != 0 || w.Limits.MaxDuration != 0 {
		t.Errorf("got %+v, %v, want an integer max_cost and no other budget", w.Limits, err)
	}
}

func TestLoad_BudgetErrors(t *testing.T) {
	tests := []struct{ state, terminal, limits, want string }{
		{"", "", "  max_tokens: 0", "9:15: max_tokens must be at least 1, got 0"},
		{"", "", "  max_tokens: -5", "9:15: max_tokens must be at least 1, got -5"},
		{"", "", "  max_tokens: 1.5", "9:15: max_tokens must be an integer"},
		{"", "", "  max_tokens: 99999999999999999999", "9:15: max_tokens must be an integer"},
		{"", "", "  max_cost: 0", "9:13: max_cost must be more than 0, got 0"},
		{"", "", "  max_cost: -1.5", "9:13: max_cost must be more than 0, got -1.5"},
		{"", "", "  max_cost: .inf", "9:13: max_cost must be a finite number"},
		{"", "", "  max_cost: .nan", "9:13: max_cost must be a finite number"},
		{"", "", "  max_cost: five", "9:13: max_cost must be a number"},
		{"", "", "  max_duration: 0s", `9:17: max_duration must be positive, got "0s"`},
		{"", "", "  max_duration: soon", `9:17: invalid max_duration "soon"`},
		{"", "", "  max_durations: 1h", `9:3: unknown key "max_durations"`},
		{", max_cost: 0", "", "  max_steps: 5", "6:27: max_cost must be more than 0, got 0"},
		{", max_tokens: x", "", "  max_steps: 5", "6:29: max_tokens must be an integer"},
		{"", ", max_cost: 1", "  max_steps: 5", `7:23: terminal state "B" has a max_cost`},
		{"", ", max_tokens: 1", "  max_steps: 5", `7:23: terminal state "B" has a max_tokens`},
	}
	for _, tt := range tests {
		_, err := rules.Parse("w.yaml", budgetSource(tt.state, tt.terminal, tt.limits))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("state %q, terminal %q, limits %q: got %v, want an error containing %q", tt.state, tt.terminal, tt.limits, err, tt.want)
		}
	}
}

func TestBudgetOf(t *testing.T) {
	w, err := rules.Parse("w.yaml", budgetSource(", max_cost: 0.5", "", "  max_tokens: 100\n  max_cost: 1"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := w.State("A")
	b, _ := w.State("B")
	over := func(tokens int64, cost, visit float64) *rules.Env {
		return &rules.Env{Usage: registry.Totals{Tokens: tokens, Cost: cost}, VisitUsage: registry.Totals{Cost: visit}}
	}
	tests := []struct {
		name string
		env  *rules.Env
		next *rules.State
		want *rules.LimitHit
	}{
		{"within", over(100, 1, 0.5), a, nil},
		{"tokens", over(101, 2, 1), a, &rules.LimitHit{Limit: "max_tokens", State: "A", Count: 101, Max: 100, Total: 101, Budget: 100}},
		{"cost", over(0, 1.01, 1), a, &rules.LimitHit{Limit: "max_cost", State: "A", Total: 1.01, Budget: 1}},
		{"the state's own", over(0, 0.75, 0.75), a, &rules.LimitHit{Limit: "max_cost", State: "A", Total: 0.75, Budget: 0.5, Visit: true}},
		{"terminal next", over(1000, 10, 10), b, nil},
	}
	for _, tt := range tests {
		got := w.BudgetOf(a, tt.next, tt.env)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
