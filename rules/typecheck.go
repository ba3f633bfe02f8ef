package rules

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"
	"go.yaml.in/yaml/v3"
)

// The declared types are checked by a second configuration of the
// compiler whose environment gives `input` and `result` their declared
// fields. It only checks: the program that runs is still compiled against
// Env, whose data is untyped maps, so evaluation costs the same with or
// without declarations.

// typedKey identifies one typed configuration: what the expression must
// produce, and the agent whose result it reads ("" for none declared).
type typedKey struct {
	kind  exprKind
	agent string
}

// compileRuleExpr compiles an expression of a rule whose `from` is from:
// first checked against the declared types of the workflow's input and of
// from's result, then compiled as every expression is.
func (l *loader) compileRuleExpr(from string, n *yaml.Node, kind exprKind, label string) *Expr {
	if !l.checkTyped(from, n, kind, label) {
		return nil
	}
	return l.compileExpr(n, kind, label)
}

// checkTyped type-checks the expression held by n against the declarations
// and reports the first type error, positioned inside the expression. It
// reports whether the expression passed (or nothing is declared).
func (l *loader) checkTyped(from string, n *yaml.Node, kind exprKind, label string) bool {
	var result *Schema
	if a, ok := l.w.agents[from]; ok {
		result = a.Result
	}
	if (l.w.Input == nil && result == nil) || n == nil {
		return true
	}
	key := typedKey{kind: kind}
	if result != nil {
		key.agent = from
	}
	cfg := l.typedConfig(key, result)
	tree, err := safeCheck(n.Value, cfg)
	if err == nil {
		err = intOperands(tree.Node)
	}
	if err == nil {
		return true
	}
	off, msg := 0, err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		off, msg = fe.From, fe.Message
	}
	if m := unknownDeclared.FindStringSubmatch(msg); m != nil {
		root := memberRoot(n.Value, off)
		var s *Schema
		switch root {
		case "input":
			s = l.w.Input
		case "result":
			s = result
		}
		if s != nil {
			msg = fmt.Sprintf("%s has no field %s: its declaration lists %s%s", root, m[1], fieldList(s), didYouMean(m[1], s.names()))
		}
	} else {
		if m := unknownField.FindStringSubmatch(msg); m != nil {
			f := fieldsOf[m[1]]
			msg = f.name + " has no field " + m[2] + didYouMean(m[2], f.fields)
		} else {
			msg += exprHint(msg)
		}
		if strings.HasPrefix(msg, "invalid operation:") {
			msg += declaredOperands(n.Value, off, map[string]*Schema{"input": l.w.Input, "result": result})
		}
	}
	l.errorAt(l.src.exprPos(n, off), "%s: %s", label, typeWords.Replace(msg))
	return false
}

// typeWords names Go types in the checker's messages as declarations do.
var typeWords = strings.NewReplacer("map[string]interface {}", "map", "[]interface {}", "list", "interface {}", "any", "float64", "number")

var unknownDeclared = regexp.MustCompile(`^unknown field (\S+)$`)

func fieldList(s *Schema) string {
	if len(s.Fields) == 0 {
		return "no field"
	}
	out := ""
	for i, f := range s.Fields {
		if i > 0 {
			out += ", "
		}
		out += f.Name
	}
	return out
}

// typedConfig returns the checking configuration for key, built once per
// load.
func (l *loader) typedConfig(key typedKey, result *Schema) *conf.Config {
	if c := l.typedConfigs[key]; c != nil {
		return c
	}
	c := newExprConfig(envTypes(l.w.Input, result), key.kind)
	c.Check()
	if l.typedConfigs == nil {
		l.typedConfigs = map[typedKey]*conf.Config{}
	}
	l.typedConfigs[key] = c
	return c
}

// envTypes is the condition environment's type with the declared input and
// result: every name of Env with its Go type, and strict maps for the
// declarations.
func envTypes(input, result *Schema) types.Map {
	m := types.Map{}
	t := reflect.TypeFor[Env]()
	for i := range t.NumField() {
		f := t.Field(i)
		if name := f.Tag.Get("expr"); name != "" && name != "-" {
			m[name] = types.TypeOf(reflect.Zero(f.Type).Interface())
		}
	}
	if input != nil {
		m["input"] = schemaType(input)
	}
	if result != nil {
		m["result"] = schemaType(result)
	}
	return m
}

// schemaType is a declaration as a strict map type: reading a field it does
// not declare is a type error.
func schemaType(s *Schema) types.Map {
	m := types.Map{}
	for _, f := range s.Fields {
		m[f.Name] = fieldType(f.Type)
	}
	return m
}

func fieldType(t string) types.Type {
	switch t {
	case TypeString:
		return types.String
	case TypeNumber:
		return types.Float64
	case TypeInt:
		return types.Int
	case TypeBool:
		return types.Bool
	case TypeList:
		return types.TypeOf([]any{})
	case TypeMap:
		return types.TypeOf(map[string]any{})
	}
	return types.Any
}

// safeCheck parses and type-checks src; a panic inside expr-lang is an
// error, as in safeCompile.
func safeCheck(src string, c *conf.Config) (tree *parser.Tree, err error) {
	defer func() {
		if r := recover(); r != nil {
			tree, err = nil, fmt.Errorf("expression cannot be compiled: %v", r)
		}
	}()
	return checker.ParseCheck(src, c)
}

// intOperands refuses a declared int field where only a Go int works at
// run time (`%`, take's count): data that arrives as JSON holds it as a
// float, so the expression must convert it with int(x).
func intOperands(root ast.Node) error {
	v := &intVisitor{}
	ast.Walk(&root, v)
	return v.err
}

type intVisitor struct{ err error }

func (v *intVisitor) Visit(node *ast.Node) {
	if v.err != nil {
		return
	}
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		if n.Operator == "%" {
			v.check(n.Left, "%")
			v.check(n.Right, "%")
		}
	case *ast.BuiltinNode:
		if n.Name == "take" && len(n.Arguments) == 2 {
			v.check(n.Arguments[1], "take")
		}
	}
}

func (v *intVisitor) check(n ast.Node, op string) {
	m, ok := n.(*ast.MemberNode)
	if !ok || n.Type() == nil || n.Type().Kind() != reflect.Int {
		return
	}
	root, ok := m.Node.(*ast.IdentifierNode)
	if !ok || (root.Value != "input" && root.Value != "result") {
		return
	}
	loc := n.Location()
	v.err = &file.Error{Location: loc, Message: fmt.Sprintf("%s needs integers, and JSON carries %s, an int field, as a number: write int(%s)", op, n.String(), n.String())}
}

// memberRoot returns the name of the identifier whose member starts at
// offset off of src (`input` for the `x` of `input.x`), or "".
func memberRoot(src string, off int) string {
	tree, err := parser.Parse(src)
	if err != nil {
		return ""
	}
	f := &rootFinder{off: off}
	ast.Walk(&tree.Node, f)
	return f.root
}

type rootFinder struct {
	off  int
	root string
}

func (f *rootFinder) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok || m.Property.Location().From != f.off {
		return
	}
	if id, ok := m.Node.(*ast.IdentifierNode); ok {
		f.root = id.Value
	}
}

// declaredOperands says which operands of the binary operation at offset
// off of src are declared fields, and as what: `: input.n is declared
// string`. The checker's message names only the types.
func declaredOperands(src string, off int, decls map[string]*Schema) string {
	tree, err := parser.Parse(src)
	if err != nil {
		return ""
	}
	f := &binaryFinder{off: off}
	ast.Walk(&tree.Node, f)
	if f.node == nil {
		return ""
	}
	var said []string
	for _, side := range []ast.Node{f.node.Left, f.node.Right} {
		m, ok := side.(*ast.MemberNode)
		if !ok {
			continue
		}
		root, ok := m.Node.(*ast.IdentifierNode)
		prop, isName := m.Property.(*ast.StringNode)
		if !ok || !isName {
			continue
		}
		if field, declared := decls[root.Value].Field(prop.Value); declared {
			said = append(said, fmt.Sprintf("%s.%s is declared %s", root.Value, field.Name, field.Declared()))
		}
	}
	if len(said) == 0 {
		return ""
	}
	return ": " + strings.Join(said, ", ")
}

type binaryFinder struct {
	off  int
	node *ast.BinaryNode
}

func (f *binaryFinder) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BinaryNode); ok && f.node == nil && b.Location().From == f.off {
		f.node = b
	}
}
