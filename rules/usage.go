package rules

import (
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// budgets decodes the max_tokens and max_cost keys of fs (the limits
// section, or a state) into tokens and cost.
func (l *loader) budgets(fs fieldSet, tokens *int64, cost *float64) {
	if f, ok := fs.get("max_tokens"); ok {
		*tokens, _ = l.positiveTokens(f.val, "max_tokens")
	}
	if f, ok := fs.get("max_cost"); ok {
		*cost, _ = l.positiveNumber(f.val, "max_cost")
	}
}

// positiveTokens returns a positive integer that may exceed the int range
// of the other limits: token budgets run into billions.
func (l *loader) positiveTokens(n *yaml.Node, what string) (int64, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || d.Tag != "!!int" {
		l.errorf(n, "%s must be an integer, got %s", what, kindName(d))
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(d.Value, "_", ""), 0, 64)
	if err != nil {
		l.errorf(n, "%s is out of range, got %s", what, d.Value)
		return 0, false
	}
	if v < 1 {
		l.errorf(n, "%s must be at least 1, got %d", what, v)
		return 0, false
	}
	return v, true
}

// positiveNumber returns a finite number above zero, integer or not.
func (l *loader) positiveNumber(n *yaml.Node, what string) (float64, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || (d.Tag != "!!int" && d.Tag != "!!float") {
		l.errorf(n, "%s must be a number, got %s", what, kindName(d))
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(d.Value, "_", ""), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		l.errorf(n, "%s must be a finite number, got %s", what, d.Value)
		return 0, false
	}
	if v <= 0 {
		l.errorf(n, "%s must be more than 0, got %s", what, d.Value)
		return 0, false
	}
	return v, true
}

// BudgetOf reports the budget that env's usage breaks as the rule leaving
// st for next is chosen, if any: the instance's max_tokens and max_cost
// (env.Usage), then st's own, for the runs of its current visit
// (env.VisitUsage). A budget is broken when the total is over it. Entering
// a terminal state is never refused: completing costs nothing more.
func (w *Workflow) BudgetOf(st, next *State, env *Env) *LimitHit {
	if next == nil || next.Terminal {
		return nil
	}
	if hit := overBudget(w.Limits.MaxTokens, w.Limits.MaxCost, env.Usage.Tokens, env.Usage.Cost); hit != nil {
		hit.State = next.Name
		return hit
	}
	if st == nil {
		return nil
	}
	if hit := overBudget(st.MaxTokens, st.MaxCost, env.VisitUsage.Tokens, env.VisitUsage.Cost); hit != nil {
		hit.State, hit.Visit = st.Name, true
		return hit
	}
	return nil
}

// overBudget reports the first of maxTokens and maxCost (0: none) that
// tokens or cost is over.
func overBudget(maxTokens int64, maxCost float64, tokens int64, cost float64) *LimitHit {
	switch {
	case maxTokens > 0 && tokens > maxTokens:
		return &LimitHit{Limit: "max_tokens", Count: clampInt(tokens), Max: clampInt(maxTokens), Total: float64(tokens), Budget: float64(maxTokens)}
	case maxCost > 0 && cost > maxCost:
		return &LimitHit{Limit: "max_cost", Total: cost, Budget: maxCost}
	}
	return nil
}

func clampInt(v int64) int { return int(min(v, math.MaxInt)) }
