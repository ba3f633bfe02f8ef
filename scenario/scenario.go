package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/expr-lang/expr/vm"
	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/internal/suggest"
	"github.com/batonhq/baton/internal/yamlerr"
	"github.com/batonhq/baton/registry"
)

// Scenario is one scripted run of a workflow: every agent's replies and what
// must happen.
type Scenario struct {
	File     string // the scenario file's path as given
	Name     string
	Workflow string // the workflow file's path, resolved against File's folder
	Input    map[string]any
	Agents   map[string][]Reply
	Signals  []Signal // sent in order, each when the instance next waits for it
	Expect   Expect

	agentAt map[string]Pos // each scripted agent's key
	inputAt Pos            // the input's key, or none
	fieldAt map[string]Pos // each input field's value
}

// Pos is a 1-based line and column in a scenario file.
type Pos struct{ Line, Col int }

// Signal is one signal the scenario sends to the instance: when the
// instance next waits in a state that lists it, Delay after the waiting
// began on the scenario clock.
type Signal struct {
	Name      string
	Data      map[string]any
	Delay     time.Duration
	Line, Col int
}

// Reply is one scripted run of an agent: exactly one of a trigger, an error
// or a rejection.
type Reply struct {
	Trigger   string
	Result    map[string]any
	Error     string   // the run fails with this message
	Retryable bool     // with Error: whether the failure may be retried (default true)
	Kind      string   // with Error: the failure's kind (rate_limited, say); "" is kind error
	Reject    string   // the agent rejects the hand-off with this reason
	Handoff   *Handoff // the agent hands the step to another agent (a dynamic hand-off)
	Select    string   // the user selects this agent to take over the step
	Delay     time.Duration
	// Usage is what the run used: the agent reports it with its outcome
	// (a failure or a rejection too).
	Usage     registry.Usage
	Line, Col int

	triggerAt, toAt Pos // the trigger's value; the handoff's to or select's value
}

// Handoff is a dynamic hand-off in a reply:
// `handoff: {to, reason, explanation, task, payload, return_control}`.
type Handoff struct {
	To, Reason, Explanation, Task string
	Payload                       map[string]any
	ReturnControl                 bool
}

// Expect is what the scenario asserts. A nil slice is not checked.
type Expect struct {
	Status   string // completed (default) or failed
	Outcome  string
	States   []string
	Handoffs []string
	Error    string
	// Context holds keys the final context must have, each equal (as JSON)
	// to its value; nil is not checked.
	Context map[string]any
	// Steps is the number of agent runs; nil is not checked.
	Steps *int
	// ConditionErrors allows conditions that fail at run time; without it
	// any such failure fails the scenario.
	ConditionErrors bool
	// Property is an expression over the finished instance (PropertyEnv)
	// that must be true; "" is not checked.
	Property string

	property *vm.Program

	// Usage is the instance's usage totals the run must end with; nil is
	// not checked.
	Usage *ExpectUsage

	outcomeAt           Pos
	statesAt, handoffAt []Pos
}

// ExpectUsage is `expect.usage`: the instance's total tokens (input and
// output) and cost; a nil field is not checked.
type ExpectUsage struct {
	Tokens *int64
	Cost   *float64 // equal within CostTolerance
}

// CostTolerance is how far the total cost may be from expect.usage.cost:
// sums of decimal costs are not exact in binary.
const CostTolerance = 1e-9

// Error is a problem in a scenario file, with its position.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// Load reads and checks a scenario file. Every problem is reported, each with
// its position, joined with errors.Join.
func Load(path string) (*Scenario, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(path, src)
}

// Parse checks a scenario held in memory; file is used in positions and to
// resolve the workflow path.
func Parse(file string, src []byte) (*Scenario, error) {
	p := &parser{file: file}
	var doc yaml.Node
	if err := yamlerr.Unmarshal(src, &doc); err != nil {
		pr := yamlerr.Locate(src, err)
		return nil, &Error{File: file, Line: pr.Line, Col: pr.Col, Msg: pr.Message()}
	}
	s := &Scenario{File: file, Agents: map[string][]Reply{}, Input: map[string]any{}, agentAt: map[string]Pos{}}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Line: 1, Col: 1, Msg: "empty scenario"}
	}
	root := doc.Content[0]
	if isWorkflow(root) {
		return nil, &Error{File: file, Line: 1, Col: 1, Msg: "this file is a workflow, not a scenario: check it with `wfrun validate FILE`; a scenario names its workflow in `workflow:` and scripts its agents"}
	}
	fields := p.mapping(root, "scenario", scenarioKeys)
	if n := fields["scenario"]; n != nil {
		s.Name = p.str(n, "scenario")
	}
	if n := fields["workflow"]; n != nil {
		if wf := p.str(n, "workflow"); wf != "" {
			s.Workflow = filepath.Join(filepath.Dir(file), wf)
		}
	}
	if n := fields["input"]; n != nil {
		s.Input = p.object(n, "input")
		s.inputAt, s.fieldAt = Pos{n.Line, n.Column}, valuePositions(n)
	}
	if n := fields["agents"]; n != nil {
		p.agents(n, s)
	}
	if n := fields["signals"]; n != nil {
		p.signals(n, s)
	}
	s.Expect.Status = "completed"
	if n := fields["expect"]; n != nil {
		p.expect(n, &s.Expect)
	}
	if len(p.errs) > 0 {
		return nil, joinSorted(p.errs)
	}
	return s, nil
}

type parser struct {
	file string
	errs []*Error
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, n.Column
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

// joinSorted joins errs in the order of their positions.
func joinSorted(errs []*Error) error {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// isWorkflow tells a workflow file given as a scenario: it declares states
// and has no scenario key.
func isWorkflow(root *yaml.Node) bool {
	if root.Kind != yaml.MappingNode {
		return false
	}
	keys := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		keys[root.Content[i].Value] = true
	}
	return keys["states"] && !keys["scenario"]
}

// mapping returns a mapping's values by key, reporting unknown and missing keys.
func (p *parser) mapping(n *yaml.Node, what string, keys KeyTable) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping", what)
		return out
	}
	required := keys.Required
	allowed := append(slices.Clone(required), keys.Optional...)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(allowed, k.Value):
			if s := suggest.Nearest(k.Value, allowed); s != "" {
				p.errorf(k, "unknown key %q in %s (did you mean %q?)", k.Value, what, s)
			} else {
				p.errorf(k, "unknown key %q in %s", k.Value, what)
			}
		case out[k.Value] != nil:
			p.errorf(k, "duplicate key %q in %s", k.Value, what)
		default:
			out[k.Value] = v
		}
	}
	for _, r := range required {
		if out[r] == nil {
			p.errorf(n, "missing required key %q in %s", r, what)
		}
	}
	return out
}

func (p *parser) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, "%s must be a string", what)
		return ""
	}
	return n.Value
}

func (p *parser) strs(n *yaml.Node, what string) ([]string, []Pos) {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "%s must be a list", what)
		return nil, nil
	}
	out, at := []string{}, []Pos{}
	for _, c := range n.Content {
		out = append(out, p.str(c, what+" item"))
		at = append(at, Pos{c.Line, c.Column})
	}
	return out, at
}

func (p *parser) object(n *yaml.Node, what string) map[string]any {
	if n.Tag == "!!null" {
		return map[string]any{}
	}
	var m map[string]any
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping", what)
		return map[string]any{}
	}
	if err := n.Decode(&m); err != nil {
		p.errorf(n, "%s: %v", what, err)
		return map[string]any{}
	}
	return normalize(m).(map[string]any)
}

func (p *parser) agents(n *yaml.Node, s *Scenario) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "agents must be a mapping of agent id to a list of replies")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := s.Agents[k.Value]; dup {
			p.errorf(k, "duplicate agent %q", k.Value)
			continue
		}
		if v.Kind != yaml.SequenceNode {
			p.errorf(v, "agent %s: replies must be a list", k.Value)
			continue
		}
		s.agentAt[k.Value] = Pos{k.Line, k.Column}
		replies := []Reply{}
		for _, rn := range v.Content {
			replies = append(replies, p.reply(rn, k.Value))
		}
		s.Agents[k.Value] = replies
	}
}

func (p *parser) reply(n *yaml.Node, agent string) Reply {
	r := Reply{Line: n.Line, Col: n.Column, Retryable: true}
	f := p.mapping(n, "reply of "+agent, replyKeys)
	kinds := 0
	if v := f["handoff"]; v != nil {
		r.Handoff = p.handoff(v, agent, &r.toAt)
		kinds++
	}
	if v := f["select"]; v != nil {
		r.Select = p.str(v, "select")
		r.toAt = Pos{v.Line, v.Column}
		kinds++
	}
	if v := f["trigger"]; v != nil {
		r.Trigger = p.str(v, "trigger")
		r.triggerAt = Pos{v.Line, v.Column}
		kinds++
	}
	if v := f["error"]; v != nil {
		r.Error = p.str(v, "error")
		kinds++
	}
	if v := f["reject"]; v != nil {
		r.Reject = p.str(v, "reject")
		kinds++
	}
	if kinds != 1 {
		p.errorf(n, "reply of %s needs exactly one of trigger, error, reject, handoff or select", agent)
	}
	if v := f["result"]; v != nil {
		r.Result = p.object(v, "result")
	}
	if v := f["retryable"]; v != nil {
		if err := decodeBool(v, &r.Retryable); err != nil {
			p.errorf(v, "retryable must be true or false")
		}
		if r.Error == "" {
			p.errorf(v, "retryable goes with error")
		}
	}
	if v := f["kind"]; v != nil {
		r.Kind = p.str(v, "kind")
		if r.Error == "" {
			p.errorf(v, "kind goes with error")
		}
	}
	if v := f["delay"]; v != nil {
		r.Delay = p.delay(v)
	}
	if v := f["usage"]; v != nil {
		r.Usage = p.usage(v, agent)
	}
	return r
}

func (p *parser) delay(v *yaml.Node) time.Duration {
	d, err := time.ParseDuration(p.str(v, "delay"))
	if err != nil || d < 0 {
		p.errorf(v, "delay %q is not a duration (100ms, 2s, 1h)", v.Value)
	}
	return d
}

func (p *parser) signals(n *yaml.Node, s *Scenario) {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "signals must be a list of {signal, data, delay}")
		return
	}
	for _, sn := range n.Content {
		f := p.mapping(sn, "signal", signalKeys)
		sig := Signal{Line: sn.Line, Col: sn.Column, Data: map[string]any{}}
		if v := f["signal"]; v != nil {
			sig.Name = p.str(v, "signal")
		}
		if v := f["data"]; v != nil {
			sig.Data = p.object(v, "data")
		}
		if v := f["delay"]; v != nil {
			sig.Delay = p.delay(v)
		}
		s.Signals = append(s.Signals, sig)
	}
}

func (p *parser) handoff(n *yaml.Node, agent string, toAt *Pos) *Handoff {
	f := p.mapping(n, "handoff of "+agent, handoffKeys)
	h := &Handoff{}
	if v := f["to"]; v != nil {
		h.To = p.str(v, "to")
		*toAt = Pos{v.Line, v.Column}
	}
	if v := f["reason"]; v != nil {
		h.Reason = p.str(v, "reason")
	}
	if v := f["explanation"]; v != nil {
		h.Explanation = p.str(v, "explanation")
	}
	if v := f["task"]; v != nil {
		h.Task = p.str(v, "task")
	}
	if v := f["payload"]; v != nil {
		h.Payload = p.object(v, "payload")
	}
	if v := f["return_control"]; v != nil {
		if err := decodeBool(v, &h.ReturnControl); err != nil {
			p.errorf(v, "return_control must be true or false")
		}
	}
	return h
}

func (p *parser) expect(n *yaml.Node, e *Expect) {
	f := p.mapping(n, "expect", expectKeys)
	if v := f["status"]; v != nil {
		e.Status = p.str(v, "status")
		if e.Status != "completed" && e.Status != "failed" {
			p.errorf(v, "status must be completed or failed, got %q", e.Status)
		}
	}
	if v := f["outcome"]; v != nil {
		e.Outcome = p.str(v, "outcome")
		e.outcomeAt = Pos{v.Line, v.Column}
	}
	if v := f["states"]; v != nil {
		e.States, e.statesAt = p.strs(v, "states")
	}
	if v := f["handoffs"]; v != nil {
		e.Handoffs, e.handoffAt = p.strs(v, "handoffs")
	}
	if v := f["error"]; v != nil {
		e.Error = p.str(v, "error")
	}
	if v := f["context"]; v != nil {
		e.Context = p.object(v, "context")
	}
	if v := f["steps"]; v != nil {
		var n int
		if err := v.Decode(&n); err != nil || n < 0 || v.Tag != "!!int" {
			p.errorf(v, "steps must be a count, got %q", v.Value)
		}
		e.Steps = &n
	}
	if v := f["condition_errors"]; v != nil {
		if err := v.Decode(&e.ConditionErrors); err != nil || v.Tag != "!!bool" {
			p.errorf(v, "condition_errors must be true or false")
		}
	}
	if v := f["property"]; v != nil {
		e.Property = p.str(v, "property")
		if e.Property != "" {
			prog, err := CompileProperty(e.Property)
			if err != nil {
				p.errorf(v, "property %q does not compile: %v", e.Property, err)
			}
			e.property = prog
		}
	}
	if v := f["usage"]; v != nil {
		e.Usage = p.expectUsage(v)
	}
}

// decodeBool reads true or false, and nothing else: YAML 1.1's yes, no, on
// and off read as strings everywhere else, in workflows too.
func decodeBool(n *yaml.Node, dst *bool) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return fmt.Errorf("not a bool: %q", n.Value)
	}
	return n.Decode(dst)
}

// normalize turns YAML-decoded values into the plain JSON-like values the
// rules see: map[string]any, []any, string, int, float64, bool.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []any:
		for i, x := range t {
			t[i] = normalize(x)
		}
		return t
	default:
		return v
	}
}
