package rules

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
)

// Budgets of one expression. Every condition, task and context value is
// evaluated at each step of an instance, so a hostile or careless
// expression must not be able to take the process's time or memory: past a
// budget the evaluation fails with an *EvalError wrapping ErrBudget, which
// for a condition counts as false and is recorded like any other failure.
const (
	// MaxExprNodes is the largest syntax tree an expression may have; a
	// larger one is a load error.
	MaxExprNodes = 10_000
	// MaxExprIterations bounds the iterations of one evaluation, counted over
	// every loop of its predicates (all, any, map, filter, reduce, …),
	// nested loops included.
	MaxExprIterations = 100_000
	// MaxExprMemory is expr-lang's memory budget of one evaluation, in
	// values held by the ranges, arrays and maps it builds.
	MaxExprMemory = 1_000_000
	// MaxExprString is the largest string or array one operation of an
	// evaluation may build (`+`, repeat, join, replace), in bytes or elements.
	MaxExprString = 1 << 20
	// MaxExprBytes bounds the bytes of all the strings and arrays one
	// evaluation builds with those operations.
	MaxExprBytes = 16 << 20
)

// ErrBudget is wrapped by the *EvalError of an evaluation that exceeded one
// of its budgets.
var ErrBudget = errors.New("rules: expression budget exceeded")

// budget is what remains of one evaluation's budgets. Eval gives each
// evaluation of an expression that loops or builds strings its own.
type budget struct {
	iterations int
	bytes      int
}

func newBudget() *budget { return &budget{iterations: MaxExprIterations, bytes: MaxExprBytes} }

// Names of the functions the budget patch calls. They start with "__" so
// that no workflow's own names collide with them.
const (
	fnTick = "__baton_tick"
	fnUsed = "__baton_used"
	sumVar = "__baton_sum"
)

// budgetFunctions adds to c the functions the patched expressions call, and
// replaces the builtins that can build a huge string in one call by versions
// that refuse to before allocating it.
func budgetFunctions(c *conf.Config) {
	c.Functions[fnTick] = &builtin.Function{Name: fnTick, Func: tick}
	c.Functions[fnUsed] = &builtin.Function{Name: fnUsed, Func: used}
	for name, limit := range map[string]func(args []any) (int, bool){
		"repeat":  repeatSize,
		"join":    joinSize,
		"replace": replaceSize,
	} {
		orig, ok := c.Builtins[name]
		if !ok || orig.Func == nil && orig.Safe == nil {
			continue
		}
		f := *orig
		call := orig.Func
		if call == nil {
			safe := orig.Safe
			call = func(args ...any) (any, error) {
				out, _, err := safe(args...)
				return out, err
			}
		}
		f.Safe, f.Fast = nil, nil
		f.Func = func(args ...any) (any, error) {
			if n, ok := limit(args); ok && n > MaxExprString {
				return nil, fmt.Errorf("%w: %s would build %d bytes, the limit is %d", ErrBudget, name, n, MaxExprString)
			}
			return call(args...)
		}
		c.Functions[name] = &f
	}
}

func repeatSize(args []any) (int, bool) {
	if len(args) != 2 {
		return 0, false
	}
	s, ok := args[0].(string)
	n, ok2 := toInt(args[1])
	if !ok || !ok2 || n <= 0 {
		return 0, false
	}
	if len(s) > 0 && n > MaxExprString/len(s)+1 {
		return MaxExprString + 1, true
	}
	return len(s) * n, true
}

func joinSize(args []any) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	glue := 0
	if len(args) == 2 {
		if g, ok := args[1].(string); ok {
			glue = len(g)
		}
	}
	total := 0
	v := reflect.ValueOf(args[0])
	if v.Kind() != reflect.Slice {
		return 0, false
	}
	for i := range v.Len() {
		if s, ok := v.Index(i).Interface().(string); ok {
			total += len(s) + glue
		}
		if total > MaxExprString {
			break
		}
	}
	return total, true
}

func replaceSize(args []any) (int, bool) {
	if len(args) < 3 {
		return 0, false
	}
	s, ok1 := args[0].(string)
	old, ok2 := args[1].(string)
	repl, ok3 := args[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	var n int
	if old == "" {
		n = len(s) + 1
	} else {
		n = strings.Count(s, old)
	}
	grow := len(repl) - len(old)
	if grow <= 0 {
		return len(s), true
	}
	if n > 0 && grow > (MaxExprString+1)/n+1 {
		return MaxExprString + 1, true
	}
	return len(s) + n*grow, true
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	}
	rv := reflect.ValueOf(v)
	if rv.CanInt() {
		return int(rv.Int()), true
	}
	return 0, false
}

// tick counts one iteration of a predicate's loop against the evaluation's
// budget.
func tick(args ...any) (any, error) {
	b := budgetOf(args)
	if b == nil {
		return true, nil
	}
	b.iterations--
	if b.iterations < 0 {
		return nil, fmt.Errorf("%w: more than %d iterations", ErrBudget, MaxExprIterations)
	}
	return true, nil
}

// used counts the size of a value built by `+`, repeat, join or replace
// against the evaluation's budget, and refuses a single value over
// MaxExprString. It returns true; the patched expression yields the value.
func used(args ...any) (any, error) {
	if len(args) != 2 {
		return true, nil
	}
	var size int
	switch v := args[1].(type) {
	case string:
		size = len(v)
	case []any:
		size = len(v)
	default:
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice {
			return true, nil
		}
		size = rv.Len()
	}
	if size > MaxExprString {
		return nil, fmt.Errorf("%w: a value of %d bytes or elements, the limit is %d", ErrBudget, size, MaxExprString)
	}
	if b := budgetOf(args); b != nil {
		b.bytes -= size
		if b.bytes < 0 {
			return nil, fmt.Errorf("%w: more than %d bytes built", ErrBudget, MaxExprBytes)
		}
	}
	return true, nil
}

func budgetOf(args []any) *budget {
	if len(args) == 0 {
		return nil
	}
	switch env := args[0].(type) {
	case *Env:
		return env.budget
	case *TaskEnv:
		return env.budget
	}
	return nil
}

// budgetPatch rewrites an expression so that its evaluation keeps to its
// budget: each predicate body first counts an iteration
// (`__baton_tick($env); body`), and each `+` and call of repeat, join or
// replace counts the size of what it built
// (`let __baton_sum = a + b; __baton_used($env, __baton_sum); __baton_sum`).
// The rewritten nodes keep their type, so type checking is unchanged.
type budgetPatch struct {
	patched *bool
}

func (p budgetPatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.PredicateNode:
		n.Node = sequence(n.Node, call(n.Node, fnTick, envNode(n.Node)), n.Node)
		*p.patched = true
	case *ast.BinaryNode:
		if n.Operator == "+" {
			*node = measured(n)
			*p.patched = true
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && (id.Value == "repeat" || id.Value == "join" || id.Value == "replace") {
			*node = measured(n)
			*p.patched = true
		}
	}
}

// measured wraps n as `let __baton_sum = n; __baton_used($env, __baton_sum); __baton_sum`.
func measured(n ast.Node) ast.Node {
	v := &ast.VariableDeclaratorNode{
		Name:  sumVar,
		Value: n,
		Expr:  sequence(n, call(n, fnUsed, envNode(n), ident(n, sumVar)), ident(n, sumVar)),
	}
	v.SetLocation(n.Location())
	return v
}

func sequence(at ast.Node, nodes ...ast.Node) ast.Node {
	s := &ast.SequenceNode{Nodes: nodes}
	s.SetLocation(at.Location())
	return s
}

func call(at ast.Node, fn string, args ...ast.Node) ast.Node {
	c := &ast.CallNode{Callee: ident(at, fn), Arguments: args}
	c.SetLocation(at.Location())
	return c
}

func envNode(at ast.Node) ast.Node { return ident(at, "$env") }

func ident(at ast.Node, name string) ast.Node {
	id := &ast.IdentifierNode{Value: name}
	id.SetLocation(at.Location())
	return id
}

// staticIterations estimates, from literal ranges and arrays only, how many
// iterations an evaluation of the expression makes at least: the product of
// the sizes of nested predicates' collections. It is 0 when nothing is known.
func staticIterations(n ast.Node, lets map[string]int) int {
	if n == nil {
		return 0
	}
	switch v := n.(type) {
	case *ast.BuiltinNode:
		total := 0
		for _, a := range v.Arguments {
			if p, ok := a.(*ast.PredicateNode); ok && len(v.Arguments) > 0 {
				size := staticSize(v.Arguments[0], lets)
				total = satAdd(total, satMul(size, 1+staticIterations(p.Node, lets)))
				continue
			}
			total = satAdd(total, staticIterations(a, lets))
		}
		return total
	case *ast.VariableDeclaratorNode:
		inner := lets
		if size := staticSize(v.Value, lets); size > 0 {
			inner = make(map[string]int, len(lets)+1)
			for k, s := range lets {
				inner[k] = s
			}
			inner[v.Name] = size
		}
		return satAdd(staticIterations(v.Value, lets), staticIterations(v.Expr, inner))
	case *ast.SequenceNode:
		total := 0
		for _, c := range v.Nodes {
			total = satAdd(total, staticIterations(c, lets))
		}
		return total
	case *ast.BinaryNode:
		return satAdd(staticIterations(v.Left, lets), staticIterations(v.Right, lets))
	case *ast.UnaryNode:
		return staticIterations(v.Node, lets)
	case *ast.ConditionalNode:
		return satAdd(staticIterations(v.Cond, lets), max(staticIterations(v.Exp1, lets), staticIterations(v.Exp2, lets)))
	case *ast.CallNode:
		total := 0
		for _, a := range v.Arguments {
			total = satAdd(total, staticIterations(a, lets))
		}
		return total
	case *ast.ChainNode:
		return staticIterations(v.Node, lets)
	case *ast.MemberNode:
		return satAdd(staticIterations(v.Node, lets), staticIterations(v.Property, lets))
	case *ast.ArrayNode:
		total := 0
		for _, a := range v.Nodes {
			total = satAdd(total, staticIterations(a, lets))
		}
		return total
	}
	return 0
}

// staticSize is the size of a literal range, a literal array, a constant
// slice or a name bound by let to one of them; 0 when unknown.
func staticSize(n ast.Node, lets map[string]int) int {
	switch v := n.(type) {
	case *ast.BinaryNode:
		if v.Operator != ".." {
			return 0
		}
		lo, ok1 := v.Left.(*ast.IntegerNode)
		hi, ok2 := v.Right.(*ast.IntegerNode)
		if ok1 && ok2 && hi.Value >= lo.Value {
			return hi.Value - lo.Value + 1
		}
	case *ast.ArrayNode:
		return len(v.Nodes)
	case *ast.ConstantNode:
		if rv := reflect.ValueOf(v.Value); rv.Kind() == reflect.Slice {
			return rv.Len()
		}
	case *ast.IdentifierNode:
		return lets[v.Value]
	}
	return 0
}

func satAdd(a, b int) int {
	if a > MaxExprIterations*1000-b {
		return MaxExprIterations * 1000
	}
	return a + b
}

func satMul(a, b int) int {
	if a != 0 && b > MaxExprIterations*1000/a {
		return MaxExprIterations * 1000
	}
	return a * b
}

// countText writes a large count readably: 8000000000 as "8e+09".
func countText(n int) string {
	if n >= MaxExprIterations*1000 {
		return fmt.Sprintf("%.0e", float64(n))
	}
	return fmt.Sprint(n)
}
