package rules

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// quickExprs are expressions quick evaluates, of every shape it knows.
var quickExprs = []string{
	`result.v`, `input.v`, `context.v`, `result.v ?? input.v`, `result.v ?? input.v ?? "none"`,
	`input.v ?? ""`, `result.v ?? 1`, `result.v ?? 1.5`, `result.v ?? true`, `result.v ?? nil`,
	`string(result.v)`, `string(result.v ?? input.v)`, `"n " + string(result.v)`,
	`"a " + string(context.v) + " b " + string(input.v)`, `"x" + ("y" + string(result.v))`,
	`result.v + input.v`, `result.v + "s"`, `error.message`, `error.kind`, `error.retryable`,
	`visits.A`, `visits.B`, `state`, `agent`, `trigger`, `step`, `attempt`, `"s" + state + agent + trigger`,
}

// quickWorkflow loads a workflow whose rule's task (when task) or context
// value is src.
func quickWorkflow(t testing.TB, src string, task bool) *Expr {
	t.Helper()
	field := "context: {k: '" + src + "'}"
	if task {
		field = "task: '" + src + "'"
	}
	doc := "workflow: w\ninitial: A\nagents: {a: {}}\nstates: {A: {agent: a}, B: {terminal: true}}\n" +
		"rules:\n  - {id: r, from: a, trigger: t, next: B, " + field + "}\n"
	w, err := Parse("quick.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if task {
		return w.Rules[0].Task
	}
	return w.Rules[0].Context[0].Expr
}

// quickValues are the values the maps hold in the tests: every kind quick
// reads and some it leaves to the machine.
var quickValues = []any{nil, "", "x", "é", 0, 1, -7, int64(3), 2.5, float32(1.5), true, false,
	[]any{1, "a"}, map[string]any{"a": 1}, (map[string]any)(nil), ([]any)(nil), new(int), (*int)(nil),
	uint8(4), []string{"s"}, struct{ A int }{1}}

// checkQuick evaluates e in env with quick and with the machine, and fails
// t if quick answers differently from the machine.
func checkQuick(t testing.TB, e *Expr, env *Env) {
	t.Helper()
	slow := *e
	slow.quick = nil
	want, werr := slow.Eval(env)
	got, _, ok := e.quick(env, 0)
	if !ok {
		return // the machine decides
	}
	if werr != nil {
		t.Fatalf("%s in %+v: quick gave %#v, the machine failed: %v", e.Source, env, got, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s in %+v: got %#v, want %#v", e.Source, env, got, want)
	}
	if e.quickStr == nil {
		return
	}
	if s, _, ok := e.quickStr(env, 0); ok && s != want {
		t.Fatalf("%s in %+v: got %q as a task, want %#v", e.Source, env, s, want)
	}
}

// quickTasks are the expressions of quickExprs that load as a task.
func quickTasks(t *testing.T) []*Expr {
	var out []*Expr
	for _, src := range quickExprs {
		doc := "workflow: w\ninitial: A\nagents: {a: {}}\nstates: {A: {agent: a}, B: {terminal: true}}\n" +
			"rules:\n  - {id: r, from: a, trigger: t, next: B, task: '" + src + "'}\n"
		if w, err := Parse("quick.yaml", []byte(doc)); err == nil {
			if w.Rules[0].Task.quickStr == nil {
				t.Fatalf("task %s: got no quick path, want one", src)
			}
			out = append(out, w.Rules[0].Task)
		}
	}
	if len(out) < 10 {
		t.Fatalf("got %d of the expressions as tasks, want at least 10", len(out))
	}
	return out
}

// TestQuick_AgreesWithVM checks that every value quick gives is the one the
// expr virtual machine gives, for every pairing of expression and value.
func TestQuick_AgreesWithVM(t *testing.T) {
	var exprs []*Expr
	for _, src := range quickExprs {
		e := quickWorkflow(t, src, false)
		if e.quick == nil {
			t.Fatalf("%s: got no quick path, want one", src)
		}
		exprs = append(exprs, e)
	}
	for _, e := range append(exprs, quickTasks(t)...) {
		for _, v := range quickValues {
			for _, w := range []any{nil, "w", 2} {
				env := &Env{Result: map[string]any{"v": v}, Input: map[string]any{"v": w}, Context: map[string]any{"v": v},
					Visits: map[string]int{"A": 2}, State: "A", Agent: "a", Trigger: "t", Step: 3, Attempt: 1,
					Error: ErrorInfo{Message: "m", Kind: "error", Retryable: true}}
				checkQuick(t, e, env)
				checkQuick(t, e, &Env{Result: env.Result})
			}
		}
	}
}

// TestQuick_GivesUpOnTheBudget checks that a sum past a budget is left to
// the machine, which fails it with ErrBudget.
func TestQuick_GivesUpOnTheBudget(t *testing.T) {
	big := strings.Repeat("x", MaxExprString)
	half := strings.Repeat("x", MaxExprString/2+1)
	for _, c := range []struct {
		src string
		v   string
	}{
		{`"a" + result.v`, big},
		{`result.v + result.v`, half},
		{`result.v + result.v + "" + result.v`, strings.Repeat("x", MaxExprString/3)},
	} {
		e := quickWorkflow(t, c.src, true)
		env := &Env{Result: map[string]any{"v": c.v}}
		if c.src == `result.v + result.v + "" + result.v` {
			// 1/3 + 2/3 + 2/3 + 3/3 of MaxExprString: under each limit.
			checkQuick(t, e, env)
			if _, _, ok := e.quick(env, 0); !ok {
				t.Errorf("%s: quick gave up, want a value", c.src)
			}
			continue
		}
		if _, _, ok := e.quick(env, 0); ok {
			t.Errorf("%s: quick gave a value, want it to give up", c.src)
		}
		if _, _, ok := e.quickStr(env, 0); ok {
			t.Errorf("%s: quick gave a task, want it to give up", c.src)
		}
		if _, err := e.Eval(env); err == nil || !strings.Contains(err.Error(), ErrBudget.Error()) {
			t.Errorf("%s: got %v, want ErrBudget", c.src, err)
		}
	}
}

// TestQuick_NotForOtherShapes checks that quick leaves what it does not
// know to the machine.
func TestQuick_NotForOtherShapes(t *testing.T) {
	for _, src := range []string{`result.a.b`, `result.v > 1`, `len(input.v)`, `upper(result.v)`, `result.v == 1`,
		`result?.v`, `usage.tokens`, `1 + 2`, `result.v ? 1 : 2`, `let x = 1; x`} {
		e := quickWorkflow(t, src, false)
		if e.quick != nil {
			t.Errorf("%s: got a quick path, want the VM", src)
		}
	}
}

// FuzzQuick checks quick against the machine on strings and numbers.
func FuzzQuick(f *testing.F) {
	f.Add(0, "x", "y", int64(1), 1.5)
	f.Add(3, "", "é", int64(-1), 0.0)
	f.Fuzz(func(t *testing.T, k int, a, b string, n int64, x float64) {
		src := quickExprs[uint(k)%uint(len(quickExprs))]
		e := quickWorkflow(t, src, false)
		vals := []any{a, b, n, x, int(n), nil}
		for _, v := range vals {
			for _, w := range vals {
				checkQuick(t, e, &Env{Result: map[string]any{"v": v}, Input: map[string]any{"v": w}, Context: map[string]any{"v": fmt.Sprint(v)}, State: a, Agent: b})
			}
		}
	})
}
