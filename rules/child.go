package rules

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// childOutcomes are the outcomes a workflow state reports besides its
// child's terminal states.
var childOutcomes = []string{"error", "timeout"}

// Child is a workflow state's call of another workflow: a child instance
// of the workflow named Workflow, whose terminal state is the state's
// outcome.
type Child struct {
	// Workflow is the `workflow:` name of the workflow called.
	Workflow string
	// Input computes the child's start input, key by key; when HasInput is
	// false the child starts with the parent's context.
	Input    []ContextEntry
	HasInput bool
	// Target is the workflow called, set by LoadSet; nil for a workflow
	// parsed on its own.
	Target *Workflow
	// Pos is the position of the `workflow` key's value.
	Pos Pos
}

// Calls reports whether the state runs a child workflow.
func (s *State) Calls() bool { return s.Child != nil }

// EvalInput computes the child's start input in env: the `input`
// expressions, or a copy of the context without them. A failing expression
// is a *DecideError naming the key.
func (c *Child) EvalInput(state string, env *Env) (map[string]any, error) {
	if !c.HasInput {
		out := make(map[string]any, len(env.Context))
		for k, v := range env.Context {
			out[k] = v
		}
		return out, nil
	}
	out := make(map[string]any, len(c.Input))
	for _, in := range c.Input {
		v, err := in.Expr.Eval(env)
		if err != nil {
			return nil, &DecideError{Rule: "state " + state, Part: "input", Key: in.Key, Err: err}
		}
		out[in.Key] = v
	}
	return out, nil
}

// childSpec decodes a workflow state: `workflow` names the workflow called,
// `input` its start input.
func (l *loader) childSpec(s *State, q string, spec fieldSet, wf field) {
	for _, k := range []string{"agent", "agents", "wait", "foreach"} {
		if f, ok := spec.get(k); ok {
			l.errorf(f.key, "state %s has both workflow and %s: a workflow state runs a child workflow", q, k)
			return
		}
	}
	c := &Child{Pos: posOf(wf.val)}
	s.Child = c
	c.Workflow, _ = l.name(wf.val, "workflow name", workflowName)
	in, ok := spec.get("input")
	if !ok {
		return
	}
	c.HasInput = true
	fs, ok := l.mapping(in.val, "input")
	if !ok {
		return
	}
	for _, f := range fs.ordered {
		key, ok := l.name(f.key, "input key", identName)
		if !ok {
			continue
		}
		if _, ok := l.scalar(f.val, "input value "+quote(key)); !ok {
			continue
		}
		if e := l.compileExpr(deref(f.val), kindValue, "input "+quote(key)); e != nil {
			c.Input = append(c.Input, ContextEntry{Key: key, Expr: e})
		}
	}
}

// checkChildTriggers refuses the outcomes a workflow state never reports,
// as far as one file tells: reserved outcomes of other kinds of state.
func (l *loader) checkChildTriggers(r *Rule, rn *ruleNodes) {
	for i, t := range r.Triggers {
		if t == "rejected" || slices.Contains(reservedParallel, t) {
			l.errorf(rn.triggers[i], "workflow state %q reports its child's terminal states, error and timeout, not %q", r.From, t)
		}
	}
}

// Set is a set of workflows loaded together, whose workflow states call
// one another by name.
type Set struct {
	// Workflows lists the workflows in file order.
	Workflows []*Workflow
	byName    map[string]*Workflow
}

// Workflow returns the workflow of the set with that `workflow:` name.
func (s *Set) Workflow(name string) (*Workflow, bool) {
	w, ok := s.byName[name]
	return w, ok
}

// LoadSet loads workflow files that call one another: each path is a
// directory (every .yaml and .yml file directly in it) or a file. Every
// file is loaded as Load does, then the set is cross-checked: a workflow
// state must name a workflow of the set (with a did-you-mean), no workflow
// may reach itself through its children, rules leaving a workflow state
// must name a terminal state of its child (or error, timeout), and two
// files may not share a `workflow:` name. Every problem of every file is
// reported at once in one *LoadError; lint findings of the set join the
// calling workflow's Warnings.
func LoadSet(paths ...string) (*Set, error) {
	files, err := setFiles(paths)
	if err != nil {
		return nil, err
	}
	set := &Set{byName: map[string]*Workflow{}}
	var diags []Diagnostic
	for _, f := range files {
		w, err := Load(f)
		if err != nil {
			le, ok := err.(*LoadError)
			if !ok {
				return nil, err
			}
			diags = append(diags, le.Diagnostics...)
			continue
		}
		if prev, dup := set.byName[w.Name]; dup {
			diags = append(diags, Diagnostic{File: w.File, Line: 1, Col: 1, Severity: SeverityError,
				Message: fmt.Sprintf("workflow %q is also in %s: the workflows of a set have distinct names", w.Name, prev.File)})
			continue
		}
		set.byName[w.Name] = w
		set.Workflows = append(set.Workflows, w)
	}
	diags = append(diags, set.link(len(diags) > 0)...)
	if slices.ContainsFunc(diags, func(d Diagnostic) bool { return d.Severity == SeverityError }) {
		return nil, &LoadError{Diagnostics: sortDiagnostics(diags)}
	}
	return set, nil
}

// setFiles expands LoadSet's paths into files, each once, in order.
func setFiles(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("rules: load set: no paths")
	}
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("rules: load set: %w", err)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("rules: load set: %w", err)
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	return files, nil
}

// link resolves every workflow state's child, then checks the triggers of
// the rules leaving it and the cycles. With others set (some file did not
// load), an unknown name may be the file that failed: it is not reported.
func (s *Set) link(others bool) []Diagnostic {
	var diags []Diagnostic
	names := make([]string, 0, len(s.Workflows))
	for _, w := range s.Workflows {
		names = append(names, w.Name)
	}
	for _, w := range s.Workflows {
		for _, st := range w.States {
			if !st.Calls() {
				continue
			}
			target, ok := s.byName[st.Child.Workflow]
			if !ok {
				if !others {
					diags = append(diags, Diagnostic{File: w.File, Line: st.Child.Pos.Line, Col: st.Child.Pos.Col, Severity: SeverityError,
						Message: fmt.Sprintf("state %q calls unknown workflow %q%s", st.Name, st.Child.Workflow, didYouMean(st.Child.Workflow, names))})
				}
				continue
			}
			st.Child.Target = target
			diags = append(diags, childRules(w, st, target)...)
		}
	}
	return append(diags, s.cycles()...)
}

// childRules checks the rules leaving workflow state st against the
// terminal states of its child: a trigger it never reports is an error; a
// terminal state no rule covers is a warning (that outcome fails the
// parent with no rule matched).
func childRules(w *Workflow, st *State, child *Workflow) []Diagnostic {
	var diags []Diagnostic
	var terminals []string
	for _, cs := range child.States {
		if cs.Terminal {
			terminals = append(terminals, cs.Name)
		}
	}
	allowed := append(slices.Clone(terminals), childOutcomes...)
	covered := map[string]bool{}
	for _, r := range w.Rules {
		if r.From != st.Name {
			continue
		}
		for _, t := range r.Triggers {
			covered[t] = true
			if !slices.Contains(allowed, t) {
				diags = append(diags, Diagnostic{File: w.File, Line: r.Pos.Line, Col: r.Pos.Col, Severity: SeverityError,
					Message: fmt.Sprintf("rule %q: workflow %q never ends in %q: state %q reports %s%s", r.ID, child.Name, t, st.Name, strings.Join(allowed, ", "), didYouMean(t, allowed))})
			}
		}
	}
	for _, t := range terminals {
		if !covered[t] {
			d := Diagnostic{File: w.File, Line: st.Pos.Line, Col: st.Pos.Col, Severity: SeverityWarning,
				Message: fmt.Sprintf("no rule from workflow state %q covers its child's terminal state %q: a child that ends there fails the instance", st.Name, t)}
			w.Warnings = append(w.Warnings, d)
		}
	}
	w.Warnings = sortDiagnostics(w.Warnings)
	return diags
}

// cycles reports each workflow that reaches itself through its children, at
// the workflow state that closes the cycle.
func (s *Set) cycles() []Diagnostic {
	var diags []Diagnostic
	const (
		unseen = iota
		active
		done
	)
	mark := map[*Workflow]int{}
	var path []*Workflow
	var visit func(w *Workflow)
	visit = func(w *Workflow) {
		mark[w] = active
		path = append(path, w)
		for _, st := range w.States {
			t := childOf(st)
			if t == nil {
				continue
			}
			switch mark[t] {
			case active:
				start := slices.Index(path, t)
				chain := make([]string, 0, len(path)-start+1)
				for _, p := range path[start:] {
					chain = append(chain, p.Name)
				}
				chain = append(chain, t.Name)
				diags = append(diags, Diagnostic{File: w.File, Line: st.Child.Pos.Line, Col: st.Child.Pos.Col, Severity: SeverityError,
					Message: fmt.Sprintf("state %q makes workflow %q reach itself through its children: %s", st.Name, t.Name, strings.Join(chain, " -> "))})
			case unseen:
				visit(t)
			}
		}
		path = path[:len(path)-1]
		mark[w] = done
	}
	ws := slices.Clone(s.Workflows)
	slices.SortStableFunc(ws, func(a, b *Workflow) int { return cmp.Compare(a.File, b.File) })
	for _, w := range ws {
		if mark[w] == unseen {
			visit(w)
		}
	}
	return diags
}

func childOf(st *State) *Workflow {
	if st.Child == nil {
		return nil
	}
	return st.Child.Target
}

// LoadBeside loads the workflow file at path as Load does; when its
// workflow states call other workflows, it loads the directory the file is
// in as a set (LoadSet) and returns the file's workflow linked to its
// children. This is how wfrun finds children: among the workflow files
// beside the caller, whatever their names.
func LoadBeside(path string) (*Workflow, error) {
	w, err := Load(path)
	if err != nil || !slices.ContainsFunc(w.States, (*State).Calls) {
		return w, err
	}
	set, err := LoadSet(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	for _, sw := range set.Workflows {
		if sw.Name == w.Name && sw.Hash == w.Hash {
			return sw, nil
		}
	}
	return nil, fmt.Errorf("rules: load %s: its workflow %q is not the one of that name beside it", path, w.Name)
}
