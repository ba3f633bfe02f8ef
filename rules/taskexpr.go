package rules

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/registry"
)

// TaskEnv is the environment of an agent's own expressions (an MCP agent's
// `arguments`, an LLM agent's `prompt`): the hand-off as the agent receives
// it. Input, Context and PreviousResult are never nil to an expression.
type TaskEnv struct {
	// Input is the instance's start input.
	Input map[string]any `expr:"input"`
	// Context is the instance context the hand-off carries.
	Context map[string]any `expr:"context"`
	// PreviousResult is the result of the agent that handed the work over.
	PreviousResult map[string]any `expr:"previous_result"`
	// Item and Index are, for a run over one item of a list, the item and
	// its index from 0 (nil and 0 otherwise).
	Item  any `expr:"item"`
	Index int `expr:"index"`

	budget *budget
}

// TaskEnvOf is the environment of t's expressions.
func TaskEnvOf(t *registry.Task) *TaskEnv {
	env := &TaskEnv{Input: t.Input, Context: t.Context, PreviousResult: t.PreviousResult}
	if t.HasItem {
		env.Item, env.Index = t.Item, t.Index
	}
	return env
}

// taskEnvNames are the names of TaskEnv, for suggestions.
var taskEnvNames = []string{"input", "context", "previous_result", "item", "index"}

// kindArguments is an expression that must produce a map.
const kindArguments exprKind = kindValue + 1

// compileTaskExpr compiles the expression held by the scalar n over
// TaskEnv; kind is kindTask (a string) or kindArguments (a map).
func (l *loader) compileTaskExpr(n *yaml.Node, kind exprKind, label string) *Expr {
	src := n.Value
	if strings.TrimSpace(src) == "" {
		l.errorf(n, "empty %s expression", label)
		return nil
	}
	if l.w.Input != nil && !l.checkTaskTyped(n, kind, label) {
		return nil
	}
	cfg := l.taskConfig(kind)
	*l.patch.patched = false
	prog, err := safeCompile(src, cfg)
	if err != nil {
		off, msg := 0, err.Error()
		var fe *file.Error
		if errors.As(err, &fe) {
			off, msg = fe.From, fe.Message
		}
		if m := unknownName.FindStringSubmatch(msg); m != nil {
			msg += " (" + label + " reads input, context, previous_result, item and index)" + didYouMean(m[1], taskEnvNames)
		}
		l.errorAt(l.src.exprPos(n, off), "%s: %s", label, typeWords.Replace(msg))
		return nil
	}
	return &Expr{Source: src, Pos: posOf(n), prog: prog, vms: l.vms, budgeted: *l.patch.patched}
}

// checkTaskTyped type-checks the expression held by n against the
// workflow's input declaration, as rules' expressions are (see
// typecheck.go), and reports the first type error inside the expression.
func (l *loader) checkTaskTyped(n *yaml.Node, kind exprKind, label string) bool {
	key := kind + typedTaskKinds
	c := l.taskConfigs[key]
	if c == nil {
		m := types.Map{}
		t := reflect.TypeFor[TaskEnv]()
		for i := range t.NumField() {
			f := t.Field(i)
			if name := f.Tag.Get("expr"); name != "" && name != "-" {
				m[name] = types.TypeOf(reflect.Zero(f.Type).Interface())
			}
		}
		m["input"] = schemaType(l.w.Input)
		c = newExprConfig(m, kindValue)
		expectKind(c, kind)
		c.Check()
		if l.taskConfigs == nil {
			l.taskConfigs = map[exprKind]*conf.Config{}
		}
		l.taskConfigs[key] = c
	}
	_, err := safeCheck(n.Value, c)
	if err == nil {
		return true
	}
	off, msg := 0, err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		off, msg = fe.From, fe.Message
	}
	if m := unknownDeclared.FindStringSubmatch(msg); m != nil && memberRoot(n.Value, off) == "input" {
		msg = fmt.Sprintf("input has no field %s: its declaration lists %s%s", m[1], fieldList(l.w.Input), didYouMean(m[1], l.w.Input.names()))
	} else if m := unknownName.FindStringSubmatch(msg); m != nil {
		msg += " (" + label + " reads input, context, previous_result, item and index)" + didYouMean(m[1], taskEnvNames)
	}
	l.errorAt(l.src.exprPos(n, off), "%s: %s", label, typeWords.Replace(msg))
	return false
}

// typedTaskKinds sets apart, in loader.taskConfigs, the checking
// configurations with the declared input from the compiling ones.
const typedTaskKinds exprKind = 100

// expectKind makes c expect what an expression of kind produces.
func expectKind(c *conf.Config, kind exprKind) {
	switch kind {
	case kindTask:
		expr.AsKind(reflect.String)(c)
	case kindArguments:
		expr.AsKind(reflect.Map)(c)
	}
}

// taskConfig returns the compiler configuration of TaskEnv expressions of
// kind, built once per load.
func (l *loader) taskConfig(kind exprKind) *conf.Config {
	if c := l.taskConfigs[kind]; c != nil {
		return c
	}
	c := newExprConfig(TaskEnv{}, kindValue)
	expectKind(c, kind)
	if l.patch == nil {
		l.patch = &budgetPatch{patched: new(bool)}
	}
	c.Visitors = append(c.Visitors, l.patch)
	c.Check()
	if l.taskConfigs == nil {
		l.taskConfigs = map[exprKind]*conf.Config{}
	}
	l.taskConfigs[kind] = c
	return c
}

// EvalTask runs an agent's expression in env. A run-time failure is an
// *EvalError.
func (e *Expr) EvalTask(env *TaskEnv) (any, error) {
	if e == nil || e.prog == nil {
		return nil, &EvalError{Message: "expression was not compiled by the loader"}
	}
	c := *env
	if c.Input == nil {
		c.Input = map[string]any{}
	}
	if c.Context == nil {
		c.Context = map[string]any{}
	}
	if c.PreviousResult == nil {
		c.PreviousResult = map[string]any{}
	}
	if e.budgeted {
		c.budget = newBudget()
	}
	m := e.vms.Get().(*vm.VM)
	out, err := m.Run(e.prog, &c)
	e.vms.Put(m)
	if err != nil {
		return nil, e.fail(err)
	}
	return out, nil
}

// EvalArguments computes the tool's arguments for the hand-off in env.
func (m *MCP) EvalArguments(env *TaskEnv) (map[string]any, error) {
	out, err := m.Arguments.EvalTask(env)
	if err != nil {
		return nil, err
	}
	args, ok := out.(map[string]any)
	if !ok {
		return nil, &EvalError{Source: m.Arguments.Source, Pos: m.Arguments.Pos, Message: fmt.Sprintf("arguments produced %s, want a map", describe(out))}
	}
	return args, nil
}

// EvalPrompt computes the user message for the hand-off in env.
func (m *LLM) EvalPrompt(env *TaskEnv) (string, error) {
	out, err := m.Prompt.EvalTask(env)
	if err != nil {
		return "", err
	}
	s, ok := out.(string)
	if !ok {
		return "", &EvalError{Source: m.Prompt.Source, Pos: m.Prompt.Pos, Message: fmt.Sprintf("prompt produced %s, want a string", describe(out))}
	}
	return s, nil
}

// dirOf is the folder of the workflow file named file, where the relative
// paths of the file are resolved.
func dirOf(file string) string {
	if file == "" {
		return "."
	}
	return filepath.Dir(file)
}
