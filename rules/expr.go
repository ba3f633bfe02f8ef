package rules

import (
	"errors"
	"fmt"
	"sync"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/batonhq/baton/registry"
)

// ErrorInfo is the `error` of the condition environment: zero-valued unless
// the outcome is error, timeout or rejected.
type ErrorInfo struct {
	// Message is the agent's error message.
	Message string `expr:"message"`
	// Retryable is false when the agent said retrying cannot help.
	Retryable bool `expr:"retryable"`
	// Kind is error, timeout or rejected.
	Kind string `expr:"kind"`
}

// Env is the condition environment; conditions, tasks and context
// values are type-checked against it at load and evaluated with it at run time.
//
// Result, Input and Context are never nil to an expression: a nil map is
// evaluated as an empty one. Passing non-nil maps keeps evaluation free of
// allocations; a nil map costs one copy of the Env. Visits may omit states
// never entered: reading one gives 0, and the loader
// refuses `visits.X` for a state X that is not declared.
type Env struct {
	// Result is the agent's result data.
	Result map[string]any `expr:"result"`
	// Input is the instance's start input.
	Input map[string]any `expr:"input"`
	// Context is the instance context.
	Context map[string]any `expr:"context"`
	// Error describes the failure behind an error, timeout or rejected outcome.
	Error ErrorInfo `expr:"error"`
	// State is the current state.
	State string `expr:"state"`
	// Agent is the `from` key of the outcome: the agent, or a parallel state.
	Agent string `expr:"agent"`
	// Trigger is the outcome.
	Trigger string `expr:"trigger"`
	// Step counts the agent runs of the instance so far, from 1.
	Step int `expr:"step"`
	// Visits counts the entries into each state.
	Visits map[string]int `expr:"visits"`
	// Attempt counts the runs of this state's agent in this visit, from 1.
	Attempt int `expr:"attempt"`
	// Usage is the instance's usage totals, the reporting run's included
	// (all zero when no run reported usage).
	Usage registry.Totals `expr:"usage"`
	// VisitUsage is the usage of the runs of the current visit of State,
	// which the state's own max_tokens and max_cost are checked against.
	// Expressions do not see it.
	VisitUsage registry.Totals `expr:"-"`

	// budget is what remains of the evaluation's budgets; Eval sets it on
	// its own copy of the Env.
	budget *budget
}

// Expr is a compiled expression of the workflow file.
type Expr struct {
	// Source is the expression as written.
	Source string
	// Pos is where the expression starts in the file.
	Pos Pos

	prog *vm.Program
	vms  *sync.Pool
	// budgeted is set when the expression loops or builds strings: each
	// evaluation then gets its own budget (see MaxExprIterations).
	budgeted bool
	// readsProgress is set when the expression reads visits or step, which
	// bounds a cycle the expression guards.
	readsProgress bool
	// fast evaluates a `ROOT.key == literal` condition without the VM.
	fast *fastEq
	// quick evaluates the common shapes of tasks and values without the
	// VM, when it can (see quick).
	quick quick
	// quickStr is quick for a task, which yields a string.
	quickStr quickString
	// equals are the `x == literal` tests the condition requires (the
	// conjuncts of its top-level &&), used by lint to tell exclusive rules.
	equals []equality
}

// equality is one conjunct `X == literal` of a condition.
type equality struct {
	subject string
	literal any
}

// Eval runs the expression in env. A run-time failure is an *EvalError.
func (e *Expr) Eval(env *Env) (any, error) {
	if e == nil || e.prog == nil {
		return nil, &EvalError{Message: "expression was not compiled by the loader"}
	}
	if env == nil {
		env = &Env{}
	}
	if e.fast != nil {
		return e.fast.eval(env), nil
	}
	if e.quick != nil {
		if v, _, ok := e.quick(env, 0); ok {
			return v, nil
		}
	}
	if env.Result == nil || env.Input == nil || env.Context == nil {
		env = withEmptyMaps(env)
	}
	if e.budgeted {
		c := *env
		c.budget = newBudget()
		env = &c
	}
	m := e.vms.Get().(*vm.VM)
	out, err := m.Run(e.prog, env)
	e.vms.Put(m)
	if err != nil {
		return nil, e.fail(err)
	}
	return out, nil
}

// evalBool runs a condition. The compiler checked the type where it was
// known; an interface-typed value that is not bool fails at run time.
func (e *Expr) evalBool(env *Env) (bool, error) {
	if e.fast != nil && env != nil {
		return e.fast.eval(env), nil
	}
	out, err := e.Eval(env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, &EvalError{Source: e.Source, Pos: e.Pos, Message: fmt.Sprintf("condition produced %T, want bool", out)}
	}
	return b, nil
}

func (e *Expr) fail(err error) *EvalError {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	return &EvalError{Source: e.Source, Pos: e.Pos, Message: msg, Err: err}
}

// withEmptyMaps copies env with its nil maps replaced by empty ones.
func withEmptyMaps(env *Env) *Env {
	c := *env
	if c.Result == nil {
		c.Result = map[string]any{}
	}
	if c.Input == nil {
		c.Input = map[string]any{}
	}
	if c.Context == nil {
		c.Context = map[string]any{}
	}
	return &c
}

// newVMPool returns the pool of expr virtual machines shared by a workflow's
// expressions: a machine keeps its stack between runs, so a pooled one
// evaluates without allocating.
func newVMPool() *sync.Pool {
	return &sync.Pool{New: func() any { return &vm.VM{MemoryBudget: MaxExprMemory} }}
}

// TaskDescription returns the hand-off's task description: the `task`
// expression's string, else the rule's reason, else its id.
func (r *Rule) TaskDescription(env *Env) (string, error) {
	if r.Task == nil {
		if r.Reason != "" {
			return r.Reason, nil
		}
		return r.ID, nil
	}
	if r.Task.quickStr != nil {
		if s, _, ok := r.Task.quickStr(env, 0); ok {
			return s, nil
		}
	}
	out, err := r.Task.Eval(env)
	if err != nil {
		return "", err
	}
	s, ok := out.(string)
	if !ok {
		return "", &EvalError{Source: r.Task.Source, Pos: r.Task.Pos, Message: fmt.Sprintf("task produced %T, want string", out)}
	}
	return s, nil
}

// EvalContext evaluates the rule's `context` values into a new map; it
// returns an empty, non-nil map for a rule without context. The first
// failure stops the evaluation.
func (r *Rule) EvalContext(env *Env) (map[string]any, error) {
	out := make(map[string]any, len(r.Context))
	for _, c := range r.Context {
		v, err := c.Expr.Eval(env)
		if err != nil {
			return nil, fmt.Errorf("rules: context %q of rule %q: %w", c.Key, r.ID, err)
		}
		out[c.Key] = v
	}
	return out, nil
}
