package rules

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Workflow is a loaded, compiled and validated workflow file. It is
// immutable after Load and safe for concurrent use by any number of
// goroutines; the exported slices and maps must not be modified.
type Workflow struct {
	// File is the path or name the workflow was loaded from.
	File string
	// Name is the `workflow` key.
	Name string
	// Description is the `description` key.
	Description string
	// Initial is the state every instance starts in.
	Initial string
	// Version is the `version` key (1 when omitted).
	Version int
	// Hash is the hex SHA-256 of the source bytes, so that a running instance
	// can tell which revision of a version it started with.
	Hash string
	// Source is the file's bytes as loaded (a durable store keeps them under
	// Hash, so that an old version can be rebuilt for its instances).
	Source []byte
	// Agents lists the agents in file order.
	Agents []*Agent
	// States lists the states in file order.
	States []*State
	// Rules lists the rules in file order.
	Rules []*Rule
	// Limits holds the instance limits, defaults applied.
	Limits Limits
	// Input declares the fields of the start input; nil when the workflow
	// declares none.
	Input *Schema
	// Warnings holds the lint findings, sorted by position.
	Warnings []Diagnostic

	agents map[string]*Agent
	states map[string]*State
	rules  map[string]*Rule
	cands  map[candKey]*candidates
	vms    *sync.Pool
}

// candKey indexes the candidate rules of one agent outcome.
type candKey struct{ from, trigger string }

// candidates are the rules tried for one outcome, in order.
type candidates struct {
	rules []*Rule
	// fired[i] is the Tried list when rules[i] fires after every
	// conditional rule before it evaluated to false without error; shared,
	// so that Match does not allocate in the common cases.
	fired [][]Evaluation
}

// maxPrecomputed bounds the candidate lists whose Tried lists are built at
// load: their size grows with the square of the list's length.
const maxPrecomputed = 16

func newCandidates(rules []*Rule) *candidates {
	c := &candidates{rules: rules}
	if len(rules) > maxPrecomputed {
		return c
	}
	var prefix []Evaluation
	for _, r := range rules {
		if r.Condition == nil {
			c.fired = append(c.fired, prefix)
			continue
		}
		fired := append(slices.Clone(prefix), Evaluation{Rule: r, Result: true})
		c.fired = append(c.fired, fired[:len(fired):len(fired)])
		prefix = append(slices.Clone(prefix), Evaluation{Rule: r})
	}
	return c
}

// Agent returns the agent with that id.
func (w *Workflow) Agent(id string) (*Agent, bool) {
	a, ok := w.agents[id]
	return a, ok
}

// State returns the state with that name.
func (w *Workflow) State(name string) (*State, bool) {
	s, ok := w.states[name]
	return s, ok
}

// Rule returns the rule with that id.
func (w *Workflow) Rule(id string) (*Rule, bool) {
	r, ok := w.rules[id]
	return r, ok
}

// Owner returns the `from` key of the rules that leave state: the state's
// agent, the state's own name for a parallel state, and "" for a terminal or
// unknown state.
func (w *Workflow) Owner(state string) string {
	if s, ok := w.states[state]; ok {
		return s.owner
	}
	return ""
}

// Candidates returns the rules tried for an outcome of from in state, in the
// order Match tries them (priority, then file order). The slice is shared
// and must not be modified.
func (w *Workflow) Candidates(state, from, trigger string) []*Rule {
	s, ok := w.states[state]
	if !ok || s.owner != from || from == "" {
		return nil
	}
	if c := w.cands[candKey{from, trigger}]; c != nil {
		return c.rules
	}
	return nil
}

// DefaultConcurrency is how many runs of one agent an engine runs at once
// when the agent does not say.
const DefaultConcurrency = 16

// Agent is one entry of the `agents` map.
type Agent struct {
	// ID is the agent's key in the `agents` map.
	ID string
	// Type is the agent's `type`; it defaults to the agent's id.
	Type string
	// Capabilities lists what the agent can do, as written.
	Capabilities []string
	// Queue is the agent's mailbox capacity; 0 means the bus default.
	Queue int
	// Concurrency is how many runs of the agent one engine runs at once;
	// 0 means the default (DefaultConcurrency).
	Concurrency int
	// System agents accept hand-offs only from the supervisor.
	System bool
	// Selectable agents may be chosen directly by a user.
	Selectable bool
	// Expertise weighs the agent's vote in a weighted_vote merge, in [0, 1].
	Expertise float64
	// Accuracy is the agent's historical accuracy for weighted_vote, in [0, 1].
	Accuracy float64
	// URL makes the agent an HTTP agent: the engine POSTs its work there.
	URL string
	// SecretEnv names the environment variable whose value signs the calls
	// to URL (Baton-Signature).
	SecretEnv string
	// A2A makes the agent an Agent2Agent agent; nil for other kinds.
	A2A *A2A
	// MCP makes the agent a tool of an MCP server; nil for other kinds.
	MCP *MCP
	// LLM makes the agent a call of an OpenAI-compatible model; nil for
	// other kinds.
	LLM *LLM
	// Result declares the fields of the agent's results; nil when the agent
	// declares none.
	Result *Schema
	// Pos is the position of the agent's key.
	Pos Pos
}

// State is one entry of the `states` map.
type State struct {
	// Name is the state's key in the `states` map.
	Name string
	// Agent owns the state; empty for terminal and parallel states.
	Agent string
	// Agents are the branches of a parallel state, in hand-off order.
	Agents []string
	// Terminal states complete the instance.
	Terminal bool
	// Timeout bounds one run of the state's agent; 0 means none.
	Timeout time.Duration
	// Retry is the state's retry policy; the zero value retries nothing.
	Retry Retry
	// MaxVisits is the effective visit budget: the state's own max_visits,
	// else limits.max_visits.
	MaxVisits int
	// MaxTokens and MaxCost bound the usage of the runs of one visit of
	// the state (0: no budget of the state's own).
	MaxTokens int64
	MaxCost   float64
	// Join is how a parallel state completes; nil for other states.
	Join *Join
	// Merge is the parallel state's merge strategy, or "".
	Merge string
	// Wait makes the state wait for a signal; nil for other states.
	Wait *Wait
	// Foreach makes the state run an agent over every item of a list; nil
	// for other states.
	Foreach *Foreach
	// Child makes the state run a child workflow; nil for other states.
	Child *Child
	// Heartbeat is how long an external run may go without a heartbeat
	// before it has failed (kind heartbeat); 0 means no heartbeat is asked.
	Heartbeat time.Duration
	// Pos is the position of the state's key.
	Pos Pos

	explicitMaxVisits bool
	owner             string // the `from` key of the rules leaving the state
}

// Parallel reports whether the state fans out to several agents.
func (s *State) Parallel() bool { return len(s.Agents) > 0 }

// Waits reports whether the state waits for a signal.
func (s *State) Waits() bool { return s.Wait != nil }

// Wait is a wait state's `wait`: the signals it accepts.
type Wait struct {
	// Signals are the signal names the state accepts, in file order; each
	// is an outcome (trigger) of the state.
	Signals []string
}

// Accepts reports whether name is one of the wait's signals.
func (w *Wait) Accepts(name string) bool { return w != nil && slices.Contains(w.Signals, name) }

// Retry is a state's retry policy.
type Retry struct {
	// Max counts retries after the first run.
	Max int
	// Backoff is the wait before each retry; its last value repeats. It is
	// the list form of `backoff`; Initial is set instead by the object form.
	Backoff []time.Duration
	// Initial is the object form's first delay; Rate multiplies it for each
	// further retry (default 2); MaxDelay caps it (0: no cap).
	Initial  time.Duration
	Rate     float64
	MaxDelay time.Duration
	// Jitter is none or full (a uniform delay in [0, computed]); "" for the
	// list form.
	Jitter string
	// On lists the error kinds retried; empty means every retryable
	// failure. Except lists kinds never retried.
	On, Except []string
}

// Delay returns the wait before retry n (1-based), before any jitter: the
// n-th backoff value of the list form (the last one when n is past the end),
// or initial * rate^(n-1) capped by max for the object form; 0 without
// backoff or for n < 1.
func (r Retry) Delay(n int) time.Duration {
	if n < 1 {
		return 0
	}
	if r.Initial > 0 {
		d := float64(r.Initial) * math.Pow(max(r.Rate, 1), float64(n-1))
		if r.MaxDelay > 0 && d > float64(r.MaxDelay) {
			return r.MaxDelay
		}
		if d > float64(math.MaxInt64) {
			return time.Duration(math.MaxInt64)
		}
		return time.Duration(d)
	}
	if len(r.Backoff) == 0 {
		return 0
	}
	if n > len(r.Backoff) {
		n = len(r.Backoff)
	}
	return r.Backoff[n-1]
}

// Jittered returns Delay(n) with the policy's jitter applied: with full
// jitter, u (in [0, 1)) picks the delay uniformly in [0, Delay(n)], in
// whole milliseconds.
func (r Retry) Jittered(n int, u float64) time.Duration {
	d := r.Delay(n)
	if r.Jitter != JitterFull || d <= 0 {
		return d
	}
	// Whole milliseconds: finer delays mean nothing to a retry and only
	// clutter step tables and histories.
	return time.Duration(u * float64(d+1)).Truncate(time.Millisecond)
}

// Retries reports whether the policy retries a failure of that kind, as far
// as kinds go (Max and the failure's own retryable flag are the caller's):
// never a rejection, never a kind in Except, and, when On is set, only its
// kinds.
func (r Retry) Retries(kind string) bool {
	if kind == "rejected" || slices.Contains(r.Except, kind) {
		return false
	}
	return len(r.On) == 0 || slices.Contains(r.On, kind)
}

// Join strategies of a parallel state.
const (
	JoinAll      = "all"
	JoinAny      = "any"
	JoinMajority = "majority"
	JoinQuorum   = "quorum"
)

// On-partial policies of a join that times out.
const (
	OnPartialProceed = "proceed"
	OnPartialFail    = "fail"
)

// Join says when a parallel state has heard enough.
type Join struct {
	// Strategy is all, any, majority or quorum (default all).
	Strategy string
	// Quorum is the replies needed by the quorum strategy.
	Quorum int
	// Timeout bounds the wait for the join; 0 means no join timeout.
	Timeout time.Duration
	// OnPartial is what a timed-out join does: proceed or fail (default fail,
	// so that partial results are only ever used when the author opted in).
	OnPartial string
}

// Needed returns how many of n branches satisfy the join's strategy.
func (j *Join) Needed(n int) int {
	switch j.Strategy {
	case JoinAny:
		return min(1, n)
	case JoinMajority:
		return n/2 + 1
	case JoinQuorum:
		return min(j.Quorum, n)
	default:
		return n
	}
}

// Limits bound every instance of the workflow.
type Limits struct {
	// MaxSteps bounds the agent runs per instance (default 100).
	MaxSteps int
	// MaxVisits bounds the entries into any one state (default 10).
	MaxVisits int
	// HandoffWindow is how many recent dynamic hand-offs loop detection
	// looks at (default 5).
	HandoffWindow int
	// HandoffRepeats is how many of them may target one agent (default 2).
	HandoffRepeats int
	// MaxTokens bounds the tokens (input and output) the instance's runs
	// use; 0 means no budget.
	MaxTokens int64
	// MaxCost bounds the sum of the runs' cost; 0 means no budget.
	MaxCost float64
	// MaxDuration bounds the time since the instance started, waits
	// included; 0 means none.
	MaxDuration time.Duration
	// OnLimit is the state entered when a limit is hit; "" fails the instance.
	OnLimit string
}

// Default limits of a workflow without a limits section.
const (
	DefaultMaxSteps       = 100
	DefaultMaxVisits      = 10
	DefaultHandoffWindow  = 5
	DefaultHandoffRepeats = 2
)

// Rule is one entry of the `rules` list.
type Rule struct {
	// ID is the rule's unique id.
	ID string
	// From is the agent whose outcome the rule reads, or a parallel state.
	From string
	// Triggers are the outcomes the rule answers; any member matches.
	Triggers []string
	// Condition must hold for the rule to fire; nil means always.
	Condition *Expr
	// Priority orders candidates, lowest first (default 5, normal).
	Priority int
	// To is the effective hand-off target: the explicit `to`, else the agent
	// owning Next; "" when Next is terminal without `to`, or parallel.
	To string
	// Next is the state entered when the rule fires.
	Next string
	// Reason is the hand-off's reason.
	Reason string
	// Task computes the hand-off's task description; nil when omitted.
	Task *Expr
	// Context lists the values merged into the instance context, in file order.
	Context []ContextEntry
	// Constraints are passed to the target as written (plain Go values).
	Constraints map[string]any
	// Sources are the states the rule leaves from, in file order. Rules
	// from the same agent share one slice: do not modify it.
	Sources []string
	// Index is the rule's position in file order, from 0.
	Index int
	// Pos is the position of the rule's mapping.
	Pos Pos
}

// FinalNotice reports whether the rule's hand-off goes to an agent that does
// not own Next: a notice sent on entering a terminal state.
func (r *Rule) FinalNotice(w *Workflow) bool {
	s, ok := w.states[r.Next]
	return ok && s.Terminal && r.To != ""
}

// ContextEntry is one key of a rule's `context`.
type ContextEntry struct {
	// Key is the context key the value is merged under.
	Key string
	// Expr computes the value.
	Expr *Expr
}
