package rules

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/vm"
	"go.yaml.in/yaml/v3"
)

// exprKind says what an expression must produce.
type exprKind int

const (
	kindCondition exprKind = iota // bool
	kindTask                      // string
	kindValue                     // anything
)

// compileExpr compiles the expression held by the scalar n. A failure is
// reported at the column inside the expression where expr-lang found it.
func (l *loader) compileExpr(n *yaml.Node, kind exprKind, label string) *Expr {
	src := n.Value
	pos := posOf(n)
	if strings.TrimSpace(src) == "" {
		l.errorf(n, "empty %s expression", label)
		return nil
	}
	cfg := l.exprConfig(kind)
	*l.patch.patched = false
	prog, err := safeCompile(src, cfg)
	if err != nil {
		off, msg := 0, err.Error()
		var fe *file.Error
		if errors.As(err, &fe) {
			off, msg = fe.From, fe.Message
		}
		hint := exprHint(msg)
		if m := unknownField.FindStringSubmatch(msg); m != nil {
			msg = fieldsOf[m[1]].name + " has no field " + m[2]
		}
		l.errorAt(l.src.exprPos(n, off), "%s: %s%s", label, msg, hint)
		return nil
	}
	e := &Expr{Source: src, Pos: pos, prog: prog, vms: l.vms, budgeted: *l.patch.patched}
	l.analyze(e, n, prog.Node())
	if it := staticIterations(prog.Node(), nil); it > MaxExprIterations {
		l.budgetWarnings = append(l.budgetWarnings, Diagnostic{File: l.file, Line: pos.Line, Col: pos.Col, Severity: SeverityWarning,
			Message: fmt.Sprintf("%s iterates at least %s times over literal ranges, more than the budget of %d per evaluation: it will always fail at run time", label, countText(it), MaxExprIterations)})
	}
	if kind == kindCondition {
		e.fast = newFastEq(prog.Node())
	}
	e.quick = newQuick(prog.Node())
	if kind == kindTask && e.quick != nil {
		e.quickStr = newQuickString(prog.Node())
	}
	return e
}

// envNames are the names of the condition environment, for suggestions.
var envNames = []string{"result", "input", "context", "error", "state", "agent", "trigger", "step", "visits", "attempt", "usage"}

var (
	unknownName  = regexp.MustCompile(`^unknown name (\S+)$`)
	unknownField = regexp.MustCompile(`^type \S*(ErrorInfo|Totals) has no field (\S+)$`)
)

// fieldsOf names the environment's structured values by their Go type, as
// expr-lang's errors name them, with the fields an expression may read.
var fieldsOf = map[string]struct {
	name   string
	fields []string
}{
	"ErrorInfo": {"error", []string{"message", "retryable", "kind"}},
	"Totals":    {"usage", []string{"input_tokens", "output_tokens", "tokens", "cost"}},
}

// exprHint adds a "did you mean" to expr-lang's unknown-name errors.
func exprHint(msg string) string {
	if m := unknownName.FindStringSubmatch(msg); m != nil {
		return didYouMean(m[1], envNames)
	}
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		return didYouMean(m[2], fieldsOf[m[1]].fields)
	}
	return ""
}

// exprConfig returns the loader's compiler configuration for kind, built
// once per load: expr.Compile would rebuild it (and copy every builtin) for
// each expression, a quarter of the load time.
func (l *loader) exprConfig(kind exprKind) *conf.Config {
	if c := l.exprConfigs[kind]; c != nil {
		return c
	}
	c := newExprConfig(Env{}, kind)
	if l.patch == nil {
		l.patch = &budgetPatch{patched: new(bool)}
	}
	c.Visitors = append(c.Visitors, l.patch)
	c.Check()
	l.exprConfigs[kind] = c
	return c
}

// newExprConfig is the compiler configuration every expression of a
// workflow is checked with: env's names, the expected result of kind, no
// now(), a node limit and budgeted functions. Callers add their visitors,
// then Check it.
func newExprConfig(env any, kind exprKind) *conf.Config {
	opts := []expr.Option{expr.Env(env), expr.DisableBuiltin("now"), expr.MaxNodes(MaxExprNodes)}
	switch kind {
	case kindCondition:
		opts = append(opts, expr.AsBool())
	case kindTask:
		opts = append(opts, expr.AsKind(reflect.String))
	default:
		opts = append(opts, expr.AsAny())
	}
	c := conf.CreateNew()
	for _, op := range opts {
		op(c)
	}
	for name := range c.Disabled {
		delete(c.Builtins, name)
	}
	budgetFunctions(c)
	return c
}

// safeCompile compiles src as expr.Compile does, with a prepared
// configuration, and turns a panic inside expr-lang into an error: loading
// must never panic, whatever the library does with a hostile expression.
func safeCompile(src string, c *conf.Config) (prog *vm.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			prog, err = nil, fmt.Errorf("expression cannot be compiled: %v", r)
		}
	}()
	tree, err := checker.ParseCheck(src, c)
	if err != nil {
		return nil, err
	}
	if c.Optimize {
		if err := optimizer.Optimize(&tree.Node, c); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, fe.Bind(tree.Source)
			}
			return nil, err
		}
	}
	return compiler.Compile(tree, c)
}

// analyze records what lint needs from the expression's syntax tree and
// checks that every `visits.X` names a declared state.
func (l *loader) analyze(e *Expr, n *yaml.Node, root ast.Node) {
	v := &exprVisitor{}
	ast.Walk(&root, v)
	e.readsProgress = v.progress
	for _, ref := range v.visits {
		l.pendingVisits = append(l.pendingVisits, visitRef{state: ref.state, pos: l.src.exprPos(n, ref.from)})
	}
	e.equals = equalities(root, nil)
}

// visitRef is a `visits.X` reference, checked once every state is known.
type visitRef struct {
	state string
	pos   Pos
}

type exprVisitor struct {
	progress bool
	visits   []struct {
		state string
		from  int
	}
}

func (v *exprVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if n.Value == "visits" || n.Value == "step" {
			v.progress = true
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok || id.Value != "visits" {
			return
		}
		if s, ok := n.Property.(*ast.StringNode); ok {
			v.visits = append(v.visits, struct {
				state string
				from  int
			}{s.Value, n.Property.Location().From})
		}
	}
}

// equalities collects the `X == literal` conjuncts of a condition.
func equalities(n ast.Node, acc []equality) []equality {
	b, ok := n.(*ast.BinaryNode)
	if !ok {
		return acc
	}
	switch b.Operator {
	case "&&", "and":
		acc = equalities(b.Left, acc)
		return equalities(b.Right, acc)
	case "==":
		if lit, ok := literal(b.Right); ok {
			if _, isLit := literal(b.Left); !isLit {
				return append(acc, equality{subject: b.Left.String(), literal: lit})
			}
		}
		if lit, ok := literal(b.Left); ok {
			if _, isLit := literal(b.Right); !isLit {
				return append(acc, equality{subject: b.Right.String(), literal: lit})
			}
		}
	}
	return acc
}

func literal(n ast.Node) (any, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.IntegerNode:
		return float64(v.Value), true
	case *ast.FloatNode:
		return v.Value, true
	case *ast.BoolNode:
		return v.Value, true
	case *ast.NilNode:
		return nil, true
	}
	return nil, false
}

// exclusive reports whether two conditions can never hold together: both
// require the same expression to equal different literals.
func exclusive(a, b *Expr) bool {
	if a == nil || b == nil {
		return false
	}
	for _, x := range a.equals {
		for _, y := range b.equals {
			if x.subject == y.subject && x.literal != y.literal {
				return true
			}
		}
	}
	return false
}
