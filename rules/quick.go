package rules

import (
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm/runtime"
)

// quick evaluates, without the expr virtual machine, the shapes most task
// and context expressions have: literals, `ROOT.key` with ROOT one of
// result, input, context, visits or error, state, agent, trigger, step and
// attempt, `a ?? b`, `string(a)` and `a + b` of strings. The machine reads
// map values through reflection, which allocates on every run, and a task
// that joins strings allocates its budget and a copy of the Env.
//
// A quick evaluation gives up (ok false) on any value it is not sure to
// treat as the machine does: a map value of another type than nil, string,
// bool, int, int64, float64, map[string]any or []any, a `+` of other than
// two strings, or a string past a budget. The caller then runs the
// machine, which decides, or fails, as it always did.
type quick func(env *Env, used int) (v any, usedAfter int, ok bool)

// quickRoots are the maps a quick member reads.
var quickRoots = map[string]func(*Env) map[string]any{
	"result":  func(e *Env) map[string]any { return e.Result },
	"input":   func(e *Env) map[string]any { return e.Input },
	"context": func(e *Env) map[string]any { return e.Context },
}

// newQuick compiles the (budget-patched) tree n, or returns nil when some
// node of it is not a shape quick knows.
func newQuick(n ast.Node) quick {
	switch v := n.(type) {
	case *ast.StringNode:
		return quickConst(v.Value)
	case *ast.IntegerNode:
		return quickConst(v.Value)
	case *ast.FloatNode:
		return quickConst(v.Value)
	case *ast.BoolNode:
		return quickConst(v.Value)
	case *ast.NilNode:
		return quickConst(nil)
	case *ast.IdentifierNode:
		return quickIdent(v.Value)
	case *ast.MemberNode:
		return quickMember(v)
	case *ast.BinaryNode:
		if v.Operator != "??" {
			return nil
		}
		left, right := newQuick(v.Left), newQuick(v.Right)
		if left == nil || right == nil {
			return nil
		}
		return func(env *Env, used int) (any, int, bool) {
			l, used, ok := left(env, used)
			if !ok || !runtime.IsNil(l) {
				return l, used, ok
			}
			return right(env, used)
		}
	case *ast.BuiltinNode:
		str := quickStringOf(v)
		if str == nil {
			return nil
		}
		arg := newQuick(v.Arguments[0])
		return func(env *Env, used int) (any, int, bool) {
			if a, used, ok := arg(env, used); !ok {
				return nil, used, false
			} else if _, ok := a.(string); ok {
				return a, used, true
			}
			s, used, ok := str(env, used)
			return s, used, ok
		}
	case *ast.VariableDeclaratorNode:
		str := quickSum(v)
		if str == nil {
			return nil
		}
		return func(env *Env, used int) (any, int, bool) {
			s, used, ok := str(env, used)
			return s, used, ok
		}
	}
	return nil
}

// quickString is a quick evaluation of an expression that yields a
// string, without boxing the string in an interface.
type quickString func(env *Env, used int) (s string, usedAfter int, ok bool)

// newQuickString compiles n as newQuick does, for a string.
func newQuickString(n ast.Node) quickString {
	switch v := n.(type) {
	case *ast.StringNode:
		c := v.Value
		return func(_ *Env, used int) (string, int, bool) { return c, used, true }
	case *ast.BuiltinNode:
		return quickStringOf(v)
	case *ast.VariableDeclaratorNode:
		return quickSum(v)
	}
	q := newQuick(n)
	if q == nil {
		return nil
	}
	return func(env *Env, used int) (string, int, bool) {
		v, used, ok := q(env, used)
		s, isStr := v.(string)
		return s, used, ok && isStr
	}
}

// quickStringOf compiles `string(a)`, which is fmt's %v of a.
func quickStringOf(v *ast.BuiltinNode) quickString {
	if v.Name != "string" || len(v.Arguments) != 1 {
		return nil
	}
	arg := newQuick(v.Arguments[0])
	if arg == nil {
		return nil
	}
	return func(env *Env, used int) (string, int, bool) {
		a, used, ok := arg(env, used)
		if !ok {
			return "", used, false
		}
		switch a := a.(type) {
		case string:
			return a, used, true
		case int:
			return strconv.Itoa(a), used, true
		}
		return builtin.String(a).(string), used, true
	}
}

func quickConst(c any) quick {
	return func(_ *Env, used int) (any, int, bool) { return c, used, true }
}

func quickIdent(name string) quick {
	switch name {
	case "state":
		return func(env *Env, used int) (any, int, bool) { return env.State, used, true }
	case "agent":
		return func(env *Env, used int) (any, int, bool) { return env.Agent, used, true }
	case "trigger":
		return func(env *Env, used int) (any, int, bool) { return env.Trigger, used, true }
	case "step":
		return func(env *Env, used int) (any, int, bool) { return env.Step, used, true }
	case "attempt":
		return func(env *Env, used int) (any, int, bool) { return env.Attempt, used, true }
	}
	return nil
}

func quickMember(m *ast.MemberNode) quick {
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || m.Method {
		return nil
	}
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return nil
	}
	key := prop.Value
	if root, ok := quickRoots[id.Value]; ok {
		return func(env *Env, used int) (any, int, bool) {
			v := root(env)[key]
			switch v.(type) {
			case nil, string, bool, int, int64, float64, map[string]any, []any:
				return v, used, true
			}
			return nil, used, false
		}
	}
	switch id.Value {
	case "visits":
		return func(env *Env, used int) (any, int, bool) { return env.Visits[key], used, true }
	case "error":
		switch key {
		case "message":
			return func(env *Env, used int) (any, int, bool) { return env.Error.Message, used, true }
		case "kind":
			return func(env *Env, used int) (any, int, bool) { return env.Error.Kind, used, true }
		case "retryable":
			return func(env *Env, used int) (any, int, bool) { return env.Error.Retryable, used, true }
		}
	}
	return nil
}

// quickSum compiles the budget patch's `let __baton_sum = a + b; …` as the
// concatenation of strings: a chain a + b + c + … is built in one
// allocation. used counts the bytes of every value the machine would have
// built (a + b, then a + b + c, …), as the evaluation's budget does.
func quickSum(v *ast.VariableDeclaratorNode) quickString {
	var parts []quickString
	if !quickParts(v, &parts) {
		return nil
	}
	return func(env *Env, used int) (string, int, bool) {
		var buf [8]string
		strs := buf[:0]
		size := 0
		for k, p := range parts {
			s, u, ok := p(env, used)
			if used = u; !ok {
				return "", used, false
			}
			strs = append(strs, s)
			size += len(s)
			if k == 0 {
				continue
			}
			if used += size; size > MaxExprString || used > MaxExprBytes {
				return "", used, false
			}
		}
		return concat(strs, size), used, true
	}
}

// quickParts appends the operands of the left-nested chain of sums n to
// parts, reporting false if one is not a shape quick knows.
func quickParts(n ast.Node, parts *[]quickString) bool {
	v, ok := n.(*ast.VariableDeclaratorNode)
	if !ok {
		q := newQuickString(n)
		*parts = append(*parts, q)
		return q != nil
	}
	b, ok := v.Value.(*ast.BinaryNode)
	if v.Name != sumVar || !ok || b.Operator != "+" || !quickParts(b.Left, parts) {
		return false
	}
	q := newQuickString(b.Right)
	*parts = append(*parts, q)
	return q != nil
}

// concat joins strs, of size bytes in all.
func concat(strs []string, size int) string {
	var sb strings.Builder
	sb.Grow(size)
	for _, s := range strs {
		sb.WriteString(s)
	}
	return sb.String()
}
