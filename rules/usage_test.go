package rules_test

import (
	"strings"
	"testing"

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
