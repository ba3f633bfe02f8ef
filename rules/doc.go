// Package rules loads Baton's YAML workflow language (docs/workflow-format.md) into a
// compiled, immutable Workflow and selects the rule that fires on an agent's
// outcome.
//
// A workflow file declares agents, states (owned by one agent, by several
// agents in parallel, or terminal), limits, and rules. A rule reads the
// outcome (`trigger`) of the agent named in `from` — or of a parallel state
// named in `from` — in any state that agent owns, and when its `condition`
// holds it moves the instance to `next`, handing off to the agent that owns
// `next` (or, for a terminal `next`, to an optional `to` as a final notice):
//
//	rules:
//	  - id: approved
//	    from: seller
//	    trigger: reviewed
//	    condition: result.approval == "APPROVED"
//	    priority: high
//	    next: REFUNDING
//	    task: '"Refund order " + result.order_id'
//	    context: {order_id: result.order_id}
//	    constraints: {refund_method: original_payment}
//
// Conditions, tasks and context values are expr-lang expressions
// (https://expr-lang.org), compiled once at load against Env — result,
// input, context, error, state, agent, trigger, step, visits, attempt —
// so that unknown names and conditions that cannot be bool are load
// errors. The `now()` builtin is disabled so that replaying a history
// evaluates every expression the same way.
//
// A workflow may declare its start input (Workflow.Input) and an agent its
// results (Agent.Result) as a Schema: field names with the types of
// TypeNames, `?` for optional. The expressions of a rule are then also
// type-checked with those types (input in every rule, result in the rules
// whose `from` is that agent): a type mismatch or a field the declaration
// lacks is a load error positioned inside the expression. The program that
// runs is compiled against Env all the same, so declarations cost nothing
// per evaluation; Schema.Check is how the engine holds data to them.
//
// Load and Parse report every problem at once as a *LoadError whose
// Diagnostics read "file:line:col: message", sorted, with the column inside
// the expression for expression errors and "did you mean" suggestions for
// near-miss names. A workflow that loads carries lint warnings (unreachable
// states, rules that can never fire, ambiguous rules, outcomes without an
// unconditional fallback, cycles bound only by the default limits) in
// Workflow.Warnings.
//
// A file is refused when it is larger than MaxFileSize (1 MiB) or declares
// more than MaxStates (5 000) states or MaxRules (10 000) rules; within
// these limits loading and compiling its state machine take time and memory
// linear in the file.
//
// Every evaluation has a budget: MaxExprIterations iterations over all of
// its loops, expr-lang's memory budget (MaxExprMemory), and MaxExprString
// and MaxExprBytes for the strings and arrays it builds; an expression has
// at most MaxExprNodes nodes. An evaluation over budget fails with an
// *EvalError wrapping ErrBudget (a condition then counts as false, and the
// failure is recorded), and lint warns about an expression whose literal
// ranges alone exceed the iteration budget.
//
// Workflow.Match takes a state, the `from` key (Workflow.Owner), a trigger
// and an Env; it tries the candidate rules in priority then file order and
// returns the first whose condition holds, or a *NoMatchError naming every
// condition tried. A condition that fails at run time counts as false and
// is recorded. A loaded Workflow is safe for concurrent use.
package rules
