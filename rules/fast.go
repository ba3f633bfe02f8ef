package rules

import (
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
)

// fastEq evaluates the most common condition shape, `ROOT.key == literal`
// (or !=) with ROOT one of result, input or context, without the expr
// virtual machine: expr-lang reads map values through reflection, which
// allocates on every run. It compares with expr-lang's own runtime.Equal,
// so both paths agree on every value (a test checks that they do).
type fastEq struct {
	root   int // 0 result, 1 input, 2 context
	key    string
	lit    any
	negate bool
}

var fastRoots = map[string]int{"result": 0, "input": 1, "context": 2}

// newFastEq recognises the shape in a compiled condition's tree, or nil.
func newFastEq(n ast.Node) *fastEq {
	b, ok := n.(*ast.BinaryNode)
	if !ok || (b.Operator != "==" && b.Operator != "!=") {
		return nil
	}
	left, right := b.Left, b.Right
	if _, isLit := fastLiteral(left); isLit {
		left, right = right, left
	}
	m, ok := left.(*ast.MemberNode)
	if !ok || m.Method {
		return nil
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return nil
	}
	root, ok := fastRoots[id.Value]
	if !ok {
		return nil
	}
	key, ok := m.Property.(*ast.StringNode)
	if !ok {
		return nil
	}
	lit, ok := fastLiteral(right)
	if !ok {
		return nil
	}
	return &fastEq{root: root, key: key.Value, lit: lit, negate: b.Operator == "!="}
}

// fastLiteral returns a literal as the expr compiler pushes it.
func fastLiteral(n ast.Node) (any, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.IntegerNode:
		return v.Value, true
	case *ast.FloatNode:
		return v.Value, true
	case *ast.BoolNode:
		return v.Value, true
	case *ast.NilNode:
		return nil, true
	}
	return nil, false
}

func (f *fastEq) eval(env *Env) bool {
	var m map[string]any
	switch f.root {
	case 0:
		m = env.Result
	case 1:
		m = env.Input
	default:
		m = env.Context
	}
	return runtime.Equal(m[f.key], f.lit) != f.negate
}
