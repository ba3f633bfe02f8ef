package engine

import (
	"github.com/batonhq/baton/registry"
)

// The workflow's declarations are checked where data enters: the start
// input before anything starts, each agent result as its run ends (so
// that every path — a Go handler, a report over NATS or HTTP — meets the
// same check). Both checks read the data and allocate nothing when it fits.

// checkInput refuses a start input that breaks the workflow's `input`
// declaration, naming the field.
func (e *Engine) checkInput(input map[string]any) *InputError {
	if bad := e.wf.Input.Check(input); bad != nil {
		return &InputError{Field: "input." + bad.Field, Reason: bad.Reason}
	}
	return nil
}

// checkResult fails a run whose result breaks its agent's `result`
// declaration: an error of kind invalid_result naming the field, which the
// state's retry policy sees like any failure (a model may answer better the
// next time).
func (e *Engine) checkResult(agent string, result map[string]any) error {
	a, ok := e.wf.Agent(agent)
	if !ok || a.Result == nil {
		return nil
	}
	if bad := a.Result.Check(result); bad != nil {
		return registry.Kind(&InputError{Field: "result." + bad.Field, Reason: bad.Reason}, "invalid_result")
	}
	return nil
}

// declaredResult checks the outcome that ends a run of agent: only a
// result the agent reports is held to the declaration (a failure has
// none; a dynamic hand-off carries its payload instead).
func (e *Engine) declaredResult(agent string, out registry.Outcome, runErr error, timedOut bool) error {
	if runErr != nil || timedOut || out.Handoff != nil {
		return nil
	}
	return e.checkResult(agent, out.Result)
}
