package rules

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var foreachKeys = keySpec{required: []string{"items", "agent"}, optional: []string{"max_concurrency", "tolerate"}}

// DefaultMaxConcurrency is how many item runs of a foreach state run at once
// when the state does not say.
const DefaultMaxConcurrency = 10

// foreachOutcomes are the outcomes a foreach state reports.
var foreachOutcomes = []string{"joined", "partial", "error"}

// Foreach is a foreach state's `foreach`: one run of Agent per item of the
// list Items yields.
type Foreach struct {
	// Items computes the list; it is evaluated as the state is entered.
	Items *Expr
	// Agent runs each item.
	Agent string
	// MaxConcurrency bounds the item runs under way at once (default 10).
	MaxConcurrency int
	// Tolerate is how many failed items still make the outcome partial,
	// when TolerateIsPercent is false; with it, the percentage of the items
	// (rounded down).
	Tolerate          int
	TolerateIsPercent bool
}

// Tolerated returns how many of n items may fail with the outcome still
// partial.
func (f *Foreach) Tolerated(n int) int {
	if f.TolerateIsPercent {
		return n * f.Tolerate / 100
	}
	return f.Tolerate
}

// Iterates reports whether the state runs an agent over every item of a list.
func (s *State) Iterates() bool { return s.Foreach != nil }

// foreach decodes a state's `foreach`.
func (l *loader) foreach(s *State, n *yaml.Node) {
	f := &Foreach{MaxConcurrency: DefaultMaxConcurrency}
	s.Foreach = f
	fs, ok := l.mapping(n, "foreach")
	if !ok {
		return
	}
	l.checkKeys(fs, foreachKeys, " in foreach")
	if it, ok := fs.get("items"); ok {
		d := deref(it.val)
		switch {
		case d != nil && d.Kind == yaml.SequenceNode:
			l.errorf(it.val, "foreach items must be an expression that yields a list, got a YAML list: quote it as an expression, such as '[\"a\", \"b\"]'")
		default:
			if _, ok := l.scalar(it.val, "foreach items"); ok {
				f.Items = l.compileExpr(d, kindValue, "foreach items")
			}
		}
	}
	if a, ok := fs.get("agent"); ok {
		f.Agent, _ = l.name(a.val, "agent id", identName)
		l.stateAgent[s] = a.val
	}
	if c, ok := fs.get("max_concurrency"); ok {
		if v, ok := l.integer(c.val, "max_concurrency", 1); ok {
			f.MaxConcurrency = v
		}
	}
	if t, ok := fs.get("tolerate"); ok {
		l.tolerate(f, t.val)
	}
}

// tolerate decodes `tolerate`: a count, or a percentage such as "10%".
func (l *loader) tolerate(f *Foreach, n *yaml.Node) {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && d.Tag == "!!str" && strings.HasSuffix(d.Value, "%") {
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(d.Value, "%")), 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 100 || v != math.Trunc(v) {
			l.errorf(n, "tolerate must be a whole percentage from 0%% to 100%%, got %q", d.Value)
			return
		}
		f.Tolerate, f.TolerateIsPercent = int(v), true
		return
	}
	if d == nil || d.Kind != yaml.ScalarNode || d.Tag != "!!int" {
		l.errorf(n, "tolerate must be a count or a percentage such as \"10%%\", got %s", kindName(d))
		return
	}
	if v, ok := l.integer(n, "tolerate", 0); ok {
		f.Tolerate = v
	}
}

// ItemsError is a foreach state's items expression failing at run time or
// yielding something other than a list.
type ItemsError struct {
	State string
	Err   error
}

func (e *ItemsError) Error() string {
	return fmt.Sprintf("foreach %s: items: %v", e.State, e.Err)
}

// Unwrap returns the expression's error.
func (e *ItemsError) Unwrap() error { return e.Err }

// Items evaluates the items of foreach state st in env: a list, or an
// *ItemsError when the expression fails or yields anything else.
func (w *Workflow) Items(st *State, env *Env) ([]any, error) {
	if st == nil || st.Foreach == nil {
		return nil, fmt.Errorf("rules: state is not a foreach state")
	}
	out, err := st.Foreach.Items.Eval(env)
	if err != nil {
		return nil, &ItemsError{State: st.Name, Err: err}
	}
	if list, ok := out.([]any); ok {
		return list, nil
	}
	v := reflect.ValueOf(out)
	if k := v.Kind(); k != reflect.Slice && k != reflect.Array {
		what := "nil"
		if out != nil {
			what = fmt.Sprintf("%T", out)
		}
		return nil, &ItemsError{State: st.Name, Err: fmt.Errorf("%s yields %s, want a list", quoteExpr(st.Foreach.Items.Source), what)}
	}
	list := make([]any, v.Len())
	for k := range list {
		list[k] = v.Index(k).Interface()
	}
	return list, nil
}

// decideItems evaluates the items of the foreach state d enters, with the
// context after the rule's merge, and refuses the transition when one step
// per item would exceed max_steps. Items that cannot be evaluated are no
// limit: the state is entered and reports the error.
func (w *Workflow) decideItems(d *Decision, env *Env) {
	e := *env
	if d.Context != nil {
		e.Context = d.Context
	}
	e.State = d.Next.Name
	d.Items, d.ItemsErr = w.Items(d.Next, &e)
	if d.ItemsErr != nil {
		return
	}
	if s := env.Step + len(d.Items); s > w.Limits.MaxSteps {
		d.Limit = &LimitHit{Limit: "max_steps", State: d.Next.Name, Count: s, Max: w.Limits.MaxSteps}
		d.Items, d.Task, d.Context = nil, "", nil
	}
}

// itemsType returns the static type of a foreach state's items expression,
// nil when the compiler does not know it.
func itemsType(f *Foreach) reflect.Type {
	if f == nil || f.Items == nil || f.Items.prog == nil {
		return nil
	}
	return f.Items.prog.Node().Type()
}

// foreachItems warns about a foreach state whose items expression has a
// known type that is not a list: every entry would end with invalid_items.
// The type comes from the workflow's input declaration when it has one,
// else from the expression alone (a literal, a builtin's result).
func (li *linter) foreachItems(l *loader) {
	for _, s := range li.w.States {
		t := itemsType(s.Foreach)
		if s.Iterates() && s.Foreach.Items != nil && li.w.Input != nil {
			if tree, err := safeCheck(s.Foreach.Items.Source, l.typedConfig(typedKey{kind: kindValue}, nil)); err == nil && tree.Node.Type() != nil {
				t = tree.Node.Type()
			}
		}
		if t == nil {
			continue
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Interface:
			continue
		}
		li.warnAt(s.Foreach.Items.Pos, "foreach items of state %q is %s, not a list: every entry into the state ends with the outcome error (invalid_items)", s.Name, typeName(t))
	}
}

// typeName names a Go type in the words of the workflow format, with its
// article.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an int"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "a map"
	}
	return "a " + t.String()
}

// foreachSpec decodes the foreach of state s and refuses the keys that do
// not go with it.
func (l *loader) foreachSpec(s *State, q string, spec fieldSet, each field) {
	for _, k := range []string{"agent", "agents", "wait"} {
		if f, ok := spec.get(k); ok {
			l.errorf(f.key, "state %s has both foreach and %s: a foreach state runs its own agent over each item", q, k)
			return
		}
	}
	l.foreach(s, each.val)
}
