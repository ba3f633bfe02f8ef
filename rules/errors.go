package rules

import (
	"errors"
	"strings"
)

// ErrInvalidWorkflow is matched (with errors.Is) by every *LoadError.
var ErrInvalidWorkflow = errors.New("rules: invalid workflow")

// ErrNoRuleMatched is matched (with errors.Is) by every *NoMatchError.
var ErrNoRuleMatched = errors.New("rules: no rule matched")

// ErrUnknownState is returned by Match when the state is not declared.
var ErrUnknownState = errors.New("rules: unknown state")

// ErrEval is matched (with errors.Is) by every *EvalError.
var ErrEval = errors.New("rules: expression failed")

// LoadError carries every problem that prevented a workflow from loading,
// sorted by position. Warnings found alongside errors are not included:
// lint only runs on a workflow without errors.
type LoadError struct {
	Diagnostics []Diagnostic
}

// Error renders one diagnostic per line, in the compiler style
// "file:line:col: message" that editors and CI logs understand.
func (e *LoadError) Error() string {
	if len(e.Diagnostics) == 0 {
		return ErrInvalidWorkflow.Error()
	}
	var b strings.Builder
	for i, d := range e.Diagnostics {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}

// Unwrap lets errors.Is(err, ErrInvalidWorkflow) hold.
func (e *LoadError) Unwrap() error { return ErrInvalidWorkflow }

// EvalError is a run-time failure of a compiled expression: a missing key
// compared with a number, a task that does not produce a string, and so on.
type EvalError struct {
	// Source is the expression's text as written in the workflow file.
	Source string
	// Pos is where the expression starts in the workflow file.
	Pos Pos
	// Message is the failure without the expression's text.
	Message string
	// Err is the underlying expr-lang error, if any.
	Err error
}

// Error quotes the expression and the failure on one line.
func (e *EvalError) Error() string {
	return "rules: evaluate " + quoteExpr(e.Source) + ": " + e.Message
}

// Unwrap returns the underlying expr-lang error.
func (e *EvalError) Unwrap() error { return e.Err }

// Is lets errors.Is(err, ErrEval) hold.
func (e *EvalError) Is(target error) bool { return target == ErrEval }

// NoMatchError reports that no candidate rule fired: it names the state, the
// agent (the rule's `from` key), the trigger and every condition tried with
// its result, plus the agent's error message for error and timeout outcomes.
type NoMatchError struct {
	State, Agent, Trigger string
	// AgentError is the message of the agent's error, when there was one.
	AgentError string
	// Tried lists each conditional rule evaluated, in the order tried.
	Tried []Evaluation
}

// Error reads like: rules: no rule matched in state S (agent a, trigger t):
// rule r1: `cond` = false; rule r2: `cond` = error: ...; agent error: ...
func (e *NoMatchError) Error() string {
	var b strings.Builder
	b.WriteString("rules: no rule matched in state ")
	b.WriteString(e.State)
	b.WriteString(" (agent ")
	b.WriteString(e.Agent)
	b.WriteString(", trigger ")
	b.WriteString(e.Trigger)
	b.WriteString(")")
	if len(e.Tried) == 0 {
		b.WriteString(": no rule has this agent and trigger")
	}
	for i, ev := range e.Tried {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString("rule ")
		b.WriteString(ev.Rule.ID)
		b.WriteString(": ")
		if ev.Rule.Condition != nil {
			b.WriteString(quoteExpr(ev.Rule.Condition.Source))
		}
		b.WriteString(" = ")
		switch {
		case ev.Err != nil:
			b.WriteString("error: ")
			var ee *EvalError
			if errors.As(ev.Err, &ee) {
				b.WriteString(ee.Message)
			} else {
				b.WriteString(ev.Err.Error())
			}
		case ev.Result:
			b.WriteString("true")
		default:
			b.WriteString("false")
		}
	}
	if e.AgentError != "" {
		b.WriteString("; agent error: ")
		b.WriteString(e.AgentError)
	}
	return b.String()
}

// Is lets errors.Is(err, ErrNoRuleMatched) hold.
func (e *NoMatchError) Is(target error) bool { return target == ErrNoRuleMatched }

// quoteExpr renders an expression on one line between backquotes.
func quoteExpr(src string) string {
	return "`" + strings.Join(strings.Fields(src), " ") + "`"
}
