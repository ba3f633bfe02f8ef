package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/expr-lang/expr/conf"

	"github.com/batonhq/baton/internal/suggest"
	"github.com/batonhq/baton/internal/yamlerr"
	"go.yaml.in/yaml/v3"
)

// Load reads, compiles and validates the workflow file at path. Every
// problem is reported at once in a *LoadError whose diagnostics carry path
// as given; a workflow that loads has its lint findings in Warnings.
func Load(path string) (*Workflow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rules: load workflow: %w", err)
	}
	defer f.Close()
	// Read one byte past the limit: enough for Parse to refuse the file
	// without reading all of a huge one.
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("rules: load workflow: %w", err)
	}
	return Parse(path, src)
}

// Parse compiles and validates a workflow from its source; filename is used
// in diagnostics only. It never panics, whatever src holds. A source over
// MaxFileSize, MaxStates or MaxRules is refused.
func Parse(filename string, src []byte) (*Workflow, error) {
	if len(src) > MaxFileSize {
		return nil, &LoadError{Diagnostics: []Diagnostic{{File: filename, Line: 1, Col: 1, Severity: SeverityError, Message: tooLarge(len(src))}}}
	}
	l := &loader{
		file:          filename,
		src:           newSource(src),
		vms:           newVMPool(),
		mergeBudget:   maxLiteralSize,
		literalBudget: maxLiteralSize,
	}
	sum := sha256.Sum256(src)
	w := l.load(src)
	if l.hasErrors() {
		return nil, &LoadError{Diagnostics: sortDiagnostics(l.diags)}
	}
	w.Hash = hex.EncodeToString(sum[:])
	w.Source = bytes.Clone(src)
	w.Warnings = sortDiagnostics(lint(w, l))
	return w, nil
}

// loader holds the state of one Parse.
type loader struct {
	file           string
	src            *source
	diags          []Diagnostic
	vms            *sync.Pool
	mergeBudget    int
	literalBudget  int
	exprConfigs    [3]*conf.Config
	typedConfigs   map[typedKey]*conf.Config // see typecheck.go
	taskConfigs    map[exprKind]*conf.Config // see taskexpr.go
	patch          *budgetPatch              // shared by exprConfigs; reset before each expression
	budgetWarnings []Diagnostic              // expressions that always exceed their budget

	w             *Workflow
	pendingVisits []visitRef
	sources       map[string][]string // agent -> the states it owns, shared by its rules
	explicitLimit bool                // limits.max_visits or max_steps was set
	overLimit     bool                // more states or rules than allowed: stop before resolving
	// noAgents, noStates and brokenFrom silence the reference errors that
	// would only repeat a missing or malformed section.
	noAgents, noStates, brokenFrom bool
	// emptyAgents is the node of an `agents: {}`, allowed when no state
	// runs an agent.
	emptyAgents   *yaml.Node
	stateNodes    map[string]*yaml.Node
	agentNodes    map[string]*yaml.Node
	ruleNodes     map[*Rule]*ruleNodes
	stateAgent    map[*State]*yaml.Node
	parallelNodes []parallelRef
	initialNode   *yaml.Node
	onLimitNode   *yaml.Node
}

func (l *loader) errorf(n *yaml.Node, format string, args ...any) {
	p := Pos{Line: 1, Col: 1}
	if n != nil {
		p = posOf(n)
	}
	l.errorAt(p, format, args...)
}

func (l *loader) errorAt(p Pos, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{File: l.file, Line: max(p.Line, 1), Col: max(p.Col, 1), Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
}

func (l *loader) hasErrors() bool {
	for _, d := range l.diags {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// topKeys are the workflow file's own keys. "$schema" names the JSON Schema
// an editor checks the file against; the loader ignores its value.
var topKeys = keySpec{
	required: []string{"workflow", "initial", "states"},
	optional: []string{"$schema", "version", "description", "input", "agents", "limits", "rules"},
}

// load decodes the document, then resolves and checks every reference.
func (l *loader) load(src []byte) *Workflow {
	root, ok := l.parseYAML(src)
	if !ok {
		return nil
	}
	w := &Workflow{
		File:    l.file,
		Version: 1,
		Limits:  Limits{MaxSteps: DefaultMaxSteps, MaxVisits: DefaultMaxVisits, HandoffWindow: DefaultHandoffWindow, HandoffRepeats: DefaultHandoffRepeats},
		agents:  map[string]*Agent{},
		states:  map[string]*State{},
		rules:   map[string]*Rule{},
		cands:   map[candKey]*candidates{},
		vms:     l.vms,
	}
	l.w = w
	l.stateNodes = map[string]*yaml.Node{}
	l.agentNodes = map[string]*yaml.Node{}
	l.ruleNodes = map[*Rule]*ruleNodes{}
	l.stateAgent = map[*State]*yaml.Node{}

	fs, ok := l.mapping(root, "workflow file")
	if !ok {
		return nil
	}
	if len(fs.ordered) == 0 {
		l.errorf(root, "empty workflow file")
		return nil
	}
	if f, ok := fs.get("scenario"); ok {
		if _, ok := fs.get("states"); !ok {
			l.errorf(f.key, "this file is a scenario, not a workflow: run it with `wfrun run FILE`, and validate the workflow file its `workflow:` key names")
			return nil
		}
	}
	l.checkKeys(fs, topKeys, "")
	if f, ok := fs.get("workflow"); ok {
		w.Name, _ = l.name(f.val, "workflow name", workflowName)
	}
	if f, ok := fs.get("version"); ok {
		if v, ok := l.integer(f.val, "version", 1); ok {
			w.Version = v
		}
	}
	if f, ok := fs.get("description"); ok && !isNull(f.val) {
		w.Description, _ = l.scalar(f.val, "description")
	}
	if f, ok := fs.get("input"); ok {
		w.Input = l.declaration(f.val, "input")
	}
	l.noAgents, l.noStates = true, true
	if f, ok := fs.get("agents"); ok {
		l.agents(f.val)
	}
	if f, ok := fs.get("limits"); ok {
		l.limits(f.val)
	}
	if f, ok := fs.get("states"); ok {
		l.states(f.val)
	}
	if l.overLimit {
		return nil
	}
	if _, ok := fs.get("agents"); !ok && l.runsAgents() && !nearMiss(fs, "agents") {
		// Agents may be left out only when no state runs one (a near
		// miss of the key was reported as one already).
		l.errorf(fs.node, "missing required key %q", "agents")
	}
	if l.emptyAgents != nil && l.runsAgents() {
		l.errorf(l.emptyAgents, "agents must declare at least one agent: a state runs one")
	}
	if f, ok := fs.get("initial"); ok {
		if s, ok := l.scalar(f.val, "initial"); ok {
			w.Initial = s
			l.initialNode = f.val
		}
	}
	if f, ok := fs.get("rules"); ok {
		l.rules(f.val)
	}
	if l.overLimit {
		return nil
	}
	l.resolve()
	return w
}

// parseYAML decodes src into a node tree. Malformed YAML stops the load
// with one error at the offending token, in plain words first.
func (l *loader) parseYAML(src []byte) (root *yaml.Node, ok bool) {
	var doc yaml.Node
	if err := yamlerr.Unmarshal(src, &doc); err != nil {
		p := yamlerr.Locate(src, err)
		l.errorAt(Pos{Line: p.Line, Col: p.Col}, "%s", p.Message())
		return nil, false
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		l.errorAt(Pos{Line: 1, Col: 1}, "empty workflow file")
		return nil, false
	}
	return doc.Content[0], true
}

// runsAgents reports whether a state of the workflow runs an agent.
func (l *loader) runsAgents() bool {
	for _, st := range l.w.States {
		if st.Agent != "" || len(st.Agents) > 0 || st.Iterates() {
			return true
		}
	}
	return false
}

// nearMiss reports whether fs has an unknown key that is a typo of key.
func nearMiss(fs fieldSet, key string) bool {
	for _, f := range fs.ordered {
		if k := deref(f.key).Value; k != key && suggest.Nearest(k, []string{key}) != "" {
			return true
		}
	}
	return false
}
