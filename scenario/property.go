package scenario

import (
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/batonhq/baton/engine"
)

// PropertyEnv is what an `expect.property` expression (or a `wfrun explore
// --property`) reads about a finished instance: status, outcome, context,
// usage, steps, and visits (entries into each state, from its path).
func PropertyEnv(res engine.Result, states []string) map[string]any {
	visits := map[string]int{}
	for _, s := range states {
		visits[s]++
	}
	ctx := res.Context
	if ctx == nil {
		ctx = map[string]any{}
	}
	return map[string]any{
		"status":  string(res.Status),
		"outcome": res.Outcome,
		"context": ctx,
		"usage": map[string]any{
			"input_tokens": res.Usage.InputTokens, "output_tokens": res.Usage.OutputTokens,
			"tokens": res.Usage.Tokens, "cost": res.Usage.Cost,
		},
		"steps":  res.Steps,
		"visits": visits,
	}
}

// CompileProperty compiles a property over a finished instance; it must be
// a bool expression over the names of PropertyEnv.
func CompileProperty(src string) (*vm.Program, error) {
	return expr.Compile(src, expr.Env(PropertyEnv(engine.Result{}, nil)), expr.AsBool())
}

// HoldsProperty evaluates a compiled property for a finished instance; a
// run-time failure is an error.
func HoldsProperty(prog *vm.Program, res engine.Result, states []string) (bool, error) {
	out, err := expr.Run(prog, PropertyEnv(res, states))
	if err != nil {
		return false, err
	}
	ok, isBool := out.(bool)
	if !isBool {
		return false, fmt.Errorf("property produced %T, want bool", out)
	}
	return ok, nil
}
