package check

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/expr-lang/expr/vm"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// Built-in properties every explored run must hold.
const (
	PropConditionError = "condition_error" // no condition fails at run time
	PropNoRuleMatched  = "no_rule_matched" // some rule fires for every outcome
	PropInvalidResult  = "invalid_result"  // every result fits its declaration
	PropLimitHit       = "limit_hit"       // no limit is hit (unless allowed)
	PropWorstCase      = "worst_case"      // no run takes more agent runs than check's worst case
)

// ExploreOptions configures Explore.
type ExploreOptions struct {
	// Runs is how many random instances to run (default 1000).
	Runs int
	// Seed fixes the draws: the same seed gives the same runs.
	Seed uint64
	// Properties are expressions over the finished instance (status,
	// outcome, context, usage, steps, visits) that must be true.
	Properties []string
	// AllowLimits makes limit hits no violation.
	AllowLimits bool
	// Workers is how many runs go at once (default GOMAXPROCS); the result
	// does not depend on it.
	Workers int
	// Path is the workflow's file, which the runs' scenarios name; it
	// defaults to the workflow's File.
	Path string
}

// ExploreReport is what Explore found.
type ExploreReport struct {
	// Runs is how many runs were made before the first violation (or all).
	Runs int `json:"runs"`
	// Violation is the first violation, shrunk; nil when every run held.
	Violation *Violation `json:"violation,omitempty"`
	// Coverage counts what the runs exercised.
	Coverage ExploreCoverage `json:"coverage"`
}

// ExploreCoverage counts the rules fired, the states visited and the
// terminal states reached by the runs, each of its total.
type ExploreCoverage struct {
	RulesFired      int `json:"rules_fired"`
	Rules           int `json:"rules"`
	StatesVisited   int `json:"states_visited"`
	States          int `json:"states"`
	OutcomesReached int `json:"outcomes_reached"`
	Outcomes        int `json:"outcomes"`
}

// String renders the coverage line: `coverage: rules 9/14, states 8/8, outcomes 3/3`.
func (c ExploreCoverage) String() string {
	return fmt.Sprintf("coverage: rules %d/%d, states %d/%d, outcomes %d/%d", c.RulesFired, c.Rules, c.StatesVisited, c.States, c.OutcomesReached, c.Outcomes)
}

// Violation is a run that broke a property, shrunk to a minimal script.
type Violation struct {
	// Property is a built-in property's name or a --property expression.
	Property string `json:"property"`
	// Message says how the run broke it.
	Message string `json:"message"`
	// Run is the index of the run that first broke it (from 0).
	Run int `json:"run"`
	// Replies counts the agent replies of the shrunk script.
	Replies int `json:"replies"`
	// States is the path of the shrunk run.
	States []string `json:"states"`
	// State and Trigger are the outcome that matched no rule, for
	// no_rule_matched (in a child's workflow when the child's rules failed).
	State   string `json:"state,omitempty"`
	Trigger string `json:"trigger,omitempty"`

	plan   *plan
	status string // how the shrunk run ended
}

// plan is one run's script: the input, each agent's replies in order, and
// the choice made at each wait (a signal, or nothing: the timeout).
type plan struct {
	input   map[string]any
	replies map[string][]scenario.Reply
	waits   []*scenario.Signal
}

func (p *plan) clone() *plan {
	c := &plan{input: cloneMap(p.input), replies: map[string][]scenario.Reply{}, waits: slices.Clone(p.waits)}
	for a, rs := range p.replies {
		out := make([]scenario.Reply, len(rs))
		for i, r := range rs {
			r.Result = cloneMap(r.Result)
			out[i] = r
		}
		c.replies[a] = out
	}
	return c
}

func (p *plan) signals() []scenario.Signal {
	var out []scenario.Signal
	for _, s := range p.waits {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// replyCount counts the replies of the plan.
func (p *plan) replyCount() int {
	n := 0
	for _, rs := range p.replies {
		n += len(rs)
	}
	return n
}

type explorer struct {
	w       *rules.Workflow
	path    string
	opts    ExploreOptions
	gen     *generator
	props   []*vm.Program
	worst   WorstCase
	load    scenario.Loader
	maxIter int
}

// outcome of one run.
type runResult struct {
	rep       *scenario.Report
	prop, msg string
	plan      *plan
	err       error
}

// Explore runs random instances of w on the scenario clock and checks that
// each holds the built-in properties and opts.Properties. Replies are drawn
// from the triggers the rules name, the agents' result declarations and the
// literals the conditions compare with; a wait gets one of its signals or
// its timeout. The first violation (by run index, whatever the number of
// workers) is shrunk to a minimal script that still breaks the same
// property.
func Explore(ctx context.Context, w *rules.Workflow, opts ExploreOptions) (*ExploreReport, error) {
	if w == nil {
		return nil, ErrNoWorkflow
	}
	if opts.Runs <= 0 {
		opts.Runs = 1000
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Path == "" {
		opts.Path = w.File
	}
	x, err := newExplorer(w, opts)
	if err != nil {
		return nil, err
	}
	cov := newCoverage(w)
	out := &ExploreReport{}
	const batch = 64
	for start := 0; start < opts.Runs; start += batch {
		n := min(batch, opts.Runs-start)
		results := x.batch(ctx, start, n)
		for i, r := range results {
			if r.err != nil {
				return nil, r.err
			}
			cov.add(r.rep)
			if r.prop == "" {
				continue
			}
			out.Runs = start + i + 1
			out.Violation = x.shrink(ctx, r, start+i)
			out.Coverage = cov.counts()
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	out.Runs = opts.Runs
	out.Coverage = cov.counts()
	return out, nil
}

func newExplorer(w *rules.Workflow, opts ExploreOptions) (*explorer, error) {
	x := &explorer{w: w, path: opts.Path, opts: opts, gen: newGenerator(w), maxIter: 16}
	x.load = func(string) (*rules.Workflow, error) { return w, nil }
	x.worst = Check(w).WorstCase
	for _, src := range opts.Properties {
		prog, err := scenario.CompileProperty(src)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrProperty, src, err)
		}
		x.props = append(x.props, prog)
	}
	return x, nil
}

// batch makes runs start..start+n-1 on the workers and returns their
// results in run order.
func (x *explorer) batch(ctx context.Context, start, n int) []runResult {
	out := make([]runResult, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(x.opts.Workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = x.runIndex(ctx, start+i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// runIndex draws run i's plan from the seed and runs it. Each agent draws
// its replies from a stream of its own, a few at first and more when a run
// asks for them, and each wait gets its choice as the run gets there: the
// run is replayed from the start after each addition, which changes
// nothing before it.
func (x *explorer) runIndex(ctx context.Context, i int) runResult {
	rng := rand.New(rand.NewPCG(x.opts.Seed, uint64(i)))
	p := &plan{input: x.gen.data(rng, x.gen.input, x.gen.pools["input"]), replies: map[string][]scenario.Reply{}}
	streams := map[string]*rand.Rand{}
	for ai, a := range x.gen.agents {
		streams[a] = rand.New(rand.NewPCG(x.opts.Seed+uint64(ai+1)*0x9E3779B97F4A7C15, uint64(i)))
		p.replies[a] = x.gen.replies(streams[a], a, initialReplies)
	}
	var rep *scenario.Report
	for range x.maxIter {
		var err error
		rep, err = x.exec(ctx, p)
		if err != nil {
			return runResult{err: err}
		}
		added := false
		for _, a := range starved(rep) {
			if rs := p.replies[a]; len(rs) < x.gen.length {
				p.replies[a] = append(rs, x.gen.replies(streams[a], a, len(rs))...)
				added = true
			}
		}
		if added {
			continue
		}
		for _, st := range waitsOf(rep.History)[len(p.waits):] {
			s, ok := x.w.State(st)
			if !ok || !s.Waits() {
				break
			}
			var sig *scenario.Signal
			if s.Timeout == 0 || rng.IntN(10) != 0 {
				sig = &scenario.Signal{Name: pick(rng, s.Wait.Signals), Data: x.gen.data(rng, nil, x.gen.pools[s.Name])}
			}
			p.waits = append(p.waits, sig)
			if sig != nil {
				added = true
				break
			}
		}
		if !added {
			break
		}
	}
	prop, msg := x.violation(rep)
	return runResult{rep: rep, prop: prop, msg: msg, plan: p}
}

// initialReplies is how many replies each agent draws before a run asks
// for more.
const initialReplies = 4

// starved lists the agents the run found without a reply, in order.
func starved(rep *scenario.Report) []string {
	var out []string
	for _, f := range rep.Failures {
		if a, ok := strings.CutPrefix(f, "agent "); ok {
			if name, _, ok := strings.Cut(a, " has no reply left"); ok && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

func waitsOf(h []record.Entry) []string {
	var out []string
	for _, e := range h {
		if e.Kind == record.KindWaiting {
			out = append(out, e.State)
		}
	}
	return out
}

// exec replays a plan as a scenario.
func (x *explorer) exec(ctx context.Context, p *plan) (*scenario.Report, error) {
	s := &scenario.Scenario{File: "explore", Name: "explore", Workflow: x.path, Input: p.input,
		Agents: p.replies, Signals: p.signals(), Expect: scenario.Expect{Status: "completed", ConditionErrors: true}}
	return scenario.Run(ctx, s, x.load)
}

// scripted reports whether the run went as its plan says: an agent left
// without a reply fails its run in the script's place, which no real agent
// would do, so such a run proves nothing.
func scripted(rep *scenario.Report) bool {
	for _, f := range rep.Failures {
		if strings.Contains(f, "has no reply left") || strings.Contains(f, "was refused") {
			return false
		}
	}
	return true
}

// violation returns the first property the run broke and how, or "".
func (x *explorer) violation(rep *scenario.Report) (prop, msg string) {
	if !scripted(rep) {
		return "", ""
	}
	for _, row := range rep.Steps {
		if len(row.ConditionErrors) > 0 {
			return PropConditionError, fmt.Sprintf("step %d (state %s): %s", row.Step, row.State, row.ConditionErrors[0])
		}
	}
	var nm *rules.NoMatchError
	if err := rep.Result.Err; err != nil && (errors.As(err, &nm) || strings.Contains(err.Error(), "no rule matched")) {
		return PropNoRuleMatched, err.Error()
	}
	for _, e := range rep.History {
		if e.Kind == record.KindAgentRun && e.ErrorKind == "invalid_result" {
			return PropInvalidResult, fmt.Sprintf("step %d (state %s): %s", e.Step, e.State, e.Error)
		}
	}
	if !x.opts.AllowLimits {
		for _, e := range rep.History {
			if e.Kind == record.KindLimitHit {
				return PropLimitHit, e.Error
			}
		}
	}
	if x.worst.PerItem == 0 && rep.Result.Steps > x.worst.Runs {
		return PropWorstCase, fmt.Sprintf("%d agent runs, more than check's worst case of %d", rep.Result.Steps, x.worst.Runs)
	}
	for i, prog := range x.props {
		ok, err := scenario.HoldsProperty(prog, rep.Result, rep.States)
		if err != nil || !ok {
			msg := fmt.Sprintf("false for status %s, outcome %q, steps %d", rep.Result.Status, rep.Result.Outcome, rep.Result.Steps)
			if err != nil {
				msg = err.Error()
			}
			return x.opts.Properties[i], msg
		}
	}
	return "", ""
}

// coverage accumulates what the runs exercised.
type coverage struct {
	w                       *rules.Workflow
	rules, states, outcomes map[string]bool
}

func newCoverage(w *rules.Workflow) *coverage {
	return &coverage{w: w, rules: map[string]bool{}, states: map[string]bool{}, outcomes: map[string]bool{}}
}

func (c *coverage) add(rep *scenario.Report) {
	if rep == nil {
		return
	}
	for _, s := range rep.States {
		c.states[s] = true
	}
	for _, e := range rep.History {
		if e.Kind == record.KindRuleFired {
			c.rules[e.Rule] = true
		}
	}
	if rep.Result.Outcome != "" {
		c.outcomes[rep.Result.Outcome] = true
	}
}

func (c *coverage) counts() ExploreCoverage {
	terminals := 0
	for _, s := range c.w.States {
		if s.Terminal {
			terminals++
		}
	}
	return ExploreCoverage{RulesFired: len(c.rules), Rules: len(c.w.Rules), StatesVisited: len(c.states), States: len(c.w.States),
		OutcomesReached: len(c.outcomes), Outcomes: terminals}
}
