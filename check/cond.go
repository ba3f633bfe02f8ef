package check

import (
	"math"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// A formula is a condition read as a boolean combination of atoms, each a
// comparison of one field with literals. What the analysis cannot read is
// an opaque node: it may be true or false.
type formula interface{ isFormula() }

type (
	andF    struct{ a, b formula }
	orF     struct{ a, b formula }
	notF    struct{ x formula }
	constF  bool
	opaqueF struct{}
	// atomF compares subject with lits: ==, !=, <, <=, >, >= take one
	// literal, in takes a list; truthy tests the subject itself;
	// contains is `literal in subject`.
	atomF struct {
		subj subject
		op   string
		lits []any
	}
)

func (andF) isFormula()    {}
func (orF) isFormula()     {}
func (notF) isFormula()    {}
func (constF) isFormula()  {}
func (opaqueF) isFormula() {}
func (atomF) isFormula()   {}

// subject is a field of the condition environment: a path such as
// [result score] or [attempt], with the default a `??` gives it.
type subject struct {
	key    string // the path joined with dots: result.score
	path   []string
	def    any
	hasDef bool
}

// roots are the names of the condition environment; a subject starts with one.
var roots = []string{"result", "input", "context", "error", "state", "agent", "trigger", "step", "visits", "attempt"}

// parsed is a condition read for the analysis: its formula, and every
// field it reads anywhere (in atoms or in opaque parts).
type parsed struct {
	f    formula
	refs []subject
}

// parseCondition reads src; a condition the parser refuses (which the
// loader would not have let through) is wholly opaque.
func parseCondition(src string) parsed {
	tree, err := parser.Parse(src)
	if err != nil {
		return parsed{f: opaqueF{}}
	}
	p := parsed{f: toFormula(tree.Node)}
	seen := map[string]bool{}
	ast.Find(tree.Node, func(n ast.Node) bool {
		if s, ok := subjectOf(n); ok && !seen[s.key] {
			seen[s.key] = true
			p.refs = append(p.refs, s)
		}
		return false
	})
	return p
}

// exprPath reads an expression that is a plain field, such as
// context.documents; nil for anything else.
func exprPath(src string) []string {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	p, _ := pathOf(tree.Node)
	return p
}

func toFormula(n ast.Node) formula {
	switch x := n.(type) {
	case *ast.BoolNode:
		return constF(x.Value)
	case *ast.UnaryNode:
		if x.Operator == "!" || x.Operator == "not" {
			return notF{toFormula(x.Node)}
		}
	case *ast.BinaryNode:
		switch x.Operator {
		case "&&", "and":
			return andF{toFormula(x.Left), toFormula(x.Right)}
		case "||", "or":
			return orF{toFormula(x.Left), toFormula(x.Right)}
		case "==", "!=", "<", "<=", ">", ">=":
			return comparison(x.Operator, x.Left, x.Right)
		case "in", "not in":
			f := membership(x.Left, x.Right)
			if x.Operator == "not in" {
				if _, opaque := f.(opaqueF); !opaque {
					return notF{f}
				}
			}
			return f
		}
	}
	if s, ok := subjectOf(n); ok {
		return atomF{subj: s, op: "truthy"}
	}
	return opaqueF{}
}

// flipped is the operator with its operands swapped: 7 < x is x > 7.
var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

func comparison(op string, l, r ast.Node) formula {
	if s, ok := subjectOf(l); ok {
		if v, ok := literal(r); ok {
			return atomF{subj: s, op: op, lits: []any{v}}
		}
	}
	if s, ok := subjectOf(r); ok {
		if v, ok := literal(l); ok {
			return atomF{subj: s, op: flipped[op], lits: []any{v}}
		}
	}
	return opaqueF{}
}

func membership(l, r ast.Node) formula {
	if s, ok := subjectOf(l); ok {
		if arr, ok := r.(*ast.ArrayNode); ok {
			lits := make([]any, 0, len(arr.Nodes))
			for _, e := range arr.Nodes {
				v, ok := literal(e)
				if !ok {
					return opaqueF{}
				}
				lits = append(lits, v)
			}
			return atomF{subj: s, op: "in", lits: lits}
		}
	}
	if s, ok := subjectOf(r); ok {
		if v, ok := literal(l); ok {
			return atomF{subj: s, op: "contains", lits: []any{v}}
		}
	}
	return opaqueF{}
}

// subjectOf reads a field of the environment, possibly with a `??`
// default: result.score, result["score"], result?.score, visits.A,
// attempt, (result.score ?? 0).
func subjectOf(n ast.Node) (subject, bool) {
	if b, ok := n.(*ast.BinaryNode); ok && b.Operator == "??" {
		s, ok := subjectOf(b.Left)
		if !ok || s.hasDef {
			return subject{}, false
		}
		v, ok := literal(b.Right)
		if !ok || v == nil {
			return subject{}, false
		}
		s.def, s.hasDef = v, true
		return s, true
	}
	path, ok := pathOf(n)
	if !ok || !slices.Contains(roots, path[0]) {
		return subject{}, false
	}
	switch path[0] {
	case "result", "input", "context", "visits":
		if len(path) < 2 {
			return subject{}, false
		}
	case "error":
		if len(path) != 2 || !slices.Contains([]string{"kind", "message", "retryable"}, path[1]) {
			return subject{}, false
		}
	default:
		if len(path) != 1 {
			return subject{}, false
		}
	}
	return subject{key: strings.Join(path, "."), path: path}, true
}

func pathOf(n ast.Node) ([]string, bool) {
	switch x := n.(type) {
	case *ast.IdentifierNode:
		return []string{x.Value}, true
	case *ast.ChainNode:
		return pathOf(x.Node)
	case *ast.MemberNode:
		if x.Method {
			return nil, false
		}
		prop, ok := x.Property.(*ast.StringNode)
		if !ok || prop.Value == "" || strings.Contains(prop.Value, ".") {
			return nil, false
		}
		base, ok := pathOf(x.Node)
		if !ok {
			return nil, false
		}
		return append(base, prop.Value), true
	}
	return nil, false
}

// literal reads a constant: a number (int or float64), a string, a bool
// or nil.
func literal(n ast.Node) (any, bool) {
	switch x := n.(type) {
	case *ast.IntegerNode:
		return x.Value, true
	case *ast.FloatNode:
		return x.Value, true
	case *ast.StringNode:
		return x.Value, true
	case *ast.BoolNode:
		return x.Value, true
	case *ast.NilNode:
		return nil, true
	case *ast.UnaryNode:
		if x.Operator == "-" {
			switch v := x.Node.(type) {
			case *ast.IntegerNode:
				return -v.Value, true
			case *ast.FloatNode:
				return -v.Value, true
			}
		}
	}
	return nil, false
}

// tri is a truth value that may be unknown.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

// assignment gives some subjects a value; a subject it lacks is unknown.
type assignment map[string]val

// val is a value of a field: absent from its map, or a value.
type val struct {
	v       any
	missing bool
}

// eval evaluates f under a, in three values. It says true or false only
// where expr-lang would; anything in doubt (a comparison that would fail at
// run time, say) is unknown, and the real evaluator has the last word.
func eval(f formula, a assignment) tri {
	switch x := f.(type) {
	case constF:
		return triOf(bool(x))
	case notF:
		switch eval(x.x, a) {
		case triTrue:
			return triFalse
		case triFalse:
			return triTrue
		}
		return triUnknown
	case andF:
		l := eval(x.a, a)
		if l == triFalse {
			return triFalse
		}
		r := eval(x.b, a)
		switch {
		case r == triFalse:
			// Short-circuit: with l unknown, the left side may fail at
			// run time; the real evaluator decides.
			if l == triTrue {
				return triFalse
			}
			return triUnknown
		case l == triTrue && r == triTrue:
			return triTrue
		}
		return triUnknown
	case orF:
		l := eval(x.a, a)
		if l == triTrue {
			return triTrue
		}
		r := eval(x.b, a)
		switch {
		case r == triTrue:
			if l == triFalse {
				return triTrue
			}
			return triUnknown
		case l == triFalse && r == triFalse:
			return triFalse
		}
		return triUnknown
	case atomF:
		v, ok := a[x.subj.key]
		if !ok {
			return triUnknown
		}
		return evalAtom(x, v)
	}
	return triUnknown
}

func evalAtom(x atomF, v val) tri {
	var cur any
	switch {
	case !v.missing:
		cur = v.v
	case x.subj.hasDef:
		cur = x.subj.def
	}
	if x.subj.hasDef && cur == nil {
		cur = x.subj.def
	}
	switch x.op {
	case "truthy":
		if b, ok := cur.(bool); ok {
			return triOf(b)
		}
		return triUnknown
	case "==":
		return equal(cur, x.lits[0])
	case "!=":
		switch equal(cur, x.lits[0]) {
		case triTrue:
			return triFalse
		case triFalse:
			return triTrue
		}
		return triUnknown
	case "in":
		out := triFalse
		for _, l := range x.lits {
			switch equal(cur, l) {
			case triTrue:
				return triTrue
			case triUnknown:
				out = triUnknown
			}
		}
		if cur == nil {
			return triUnknown
		}
		return out
	case "contains":
		list, ok := cur.([]any)
		if !ok {
			return triUnknown
		}
		for _, e := range list {
			if equal(e, x.lits[0]) == triTrue {
				return triTrue
			}
		}
		return triFalse
	}
	a, aok := num(cur)
	b, bok := num(x.lits[0])
	if !aok || !bok {
		return triUnknown
	}
	switch x.op {
	case "<":
		return triOf(a < b)
	case "<=":
		return triOf(a <= b)
	case ">":
		return triOf(a > b)
	case ">=":
		return triOf(a >= b)
	}
	return triUnknown
}

// equal is expr-lang's == on the values the analysis makes: numbers of
// any kind compare by value, other values of different kinds differ.
func equal(a, b any) tri {
	if x, ok := num(a); ok {
		if y, ok := num(b); ok {
			return triOf(x == y)
		}
		return triFalse
	}
	switch x := a.(type) {
	case nil:
		return triOf(b == nil)
	case string:
		y, ok := b.(string)
		return triOf(ok && x == y)
	case bool:
		y, ok := b.(bool)
		return triOf(ok && x == y)
	}
	return triUnknown
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x)
	}
	return 0, false
}

// atoms lists the atoms of f.
func atoms(f formula, out []atomF) []atomF {
	switch x := f.(type) {
	case andF:
		return atoms(x.b, atoms(x.a, out))
	case orF:
		return atoms(x.b, atoms(x.a, out))
	case notF:
		return atoms(x.x, out)
	case atomF:
		return append(out, x)
	}
	return out
}

// opaque reports whether f has a part the analysis cannot read.
func opaque(f formula) bool {
	switch x := f.(type) {
	case andF:
		return opaque(x.a) || opaque(x.b)
	case orF:
		return opaque(x.a) || opaque(x.b)
	case notF:
		return opaque(x.x)
	case opaqueF:
		return true
	case atomF:
		return x.op == "contains" || (x.op != "==" && x.op != "!=" && x.op != "in" && x.op != "truthy" && !isNum(x.lits[0]))
	}
	return false
}

func isNum(v any) bool { _, ok := num(v); return ok }
