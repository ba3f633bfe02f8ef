package scenario

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/suggest"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// Epoch is the scenario clock's start: every replay begins at this instant.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Report is the outcome of replaying a scenario.
type Report struct {
	Scenario *Scenario
	Workflow *rules.Workflow
	Result   engine.Result
	History  []record.Entry
	Steps    []Row    // the step table
	States   []string // the path of states entered, the initial state first
	Handoffs []string // agent-to-agent hand-offs as "from->to", final notices included
	Failures []string // every expectation that did not hold; empty when the scenario passed
	Duration time.Duration
}

// Passed reports whether every expectation held.
func (r *Report) Passed() bool { return len(r.Failures) == 0 }

// Row is one line of the step table: one agent run.
type Row struct {
	Step    int    `json:"step"`
	State   string `json:"state"`
	Agent   string `json:"agent"`
	Trigger string `json:"trigger"`
	Rule    string `json:"rule,omitempty"`
	Next    string `json:"next,omitempty"`
	Handoff string `json:"handoff,omitempty"`
	// Usage is what the run used, as its agent reported it.
	Usage registry.Usage `json:"usage,omitzero"`
	// ConditionErrors lists the conditions that failed at run time while
	// the step's outcome was matched (each counted as false), as
	// "rule ID: `condition`: error".
	ConditionErrors []string `json:"condition_errors,omitempty"`
}

// Loader loads workflows; a cache lets `wfrun test` load each workflow once.
type Loader func(path string) (*rules.Workflow, error)

// Run replays the scenario against its workflow on a simulated clock, in one
// goroutine, and checks its expectations. The error is non-nil only when the
// scenario could not be run at all: its workflow does not load, or Check
// finds names the workflow lacks (positioned *Error values). A failed
// expectation is reported in Report.Failures.
//
// Extra engine options (a durable store, say) are applied after the
// simulator's.
func Run(ctx context.Context, s *Scenario, load Loader, opts ...engine.Option) (*Report, error) {
	return RunFrom(ctx, s, load, Epoch, opts...)
}

// RunFrom is Run with the scenario clock starting at start instead of
// Epoch. A replay kept in a durable store starts at the wall clock's now, so
// that its instance's times say when it ran; delays, backoffs and timeouts
// still pass on the simulated clock, and ids and times stay deterministic
// for a given start.
func RunFrom(ctx context.Context, s *Scenario, load Loader, start time.Time, opts ...engine.Option) (*Report, error) {
	if ctx == nil {
		return nil, errors.New("scenario: run: nil context")
	}
	if s == nil {
		return nil, errors.New("scenario: run: nil scenario")
	}
	if load == nil {
		load = rules.LoadBeside
	}
	w, err := load(s.Workflow)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: workflow: %w", s.File, err)
	}
	if err := Check(s, w); err != nil {
		return nil, err
	}
	rep := &Report{Scenario: s, Workflow: w}
	var signals []string
	for _, fw := range workflows(w) {
		for _, st := range fw.States {
			if st.Waits() {
				signals = append(signals, st.Wait.Signals...)
			}
		}
	}
	for _, sig := range s.Signals {
		if !slices.Contains(signals, sig.Name) {
			msg := fmt.Sprintf("%s:%d:%d: no wait state of workflow %s lists signal %q", s.File, sig.Line, sig.Col, w.Name, sig.Name)
			if near := suggest.Nearest(sig.Name, signals); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			rep.Failures = append(rep.Failures, msg)
		}
	}
	slices.Sort(rep.Failures)

	sim := clock.NewSim(start)
	reg, err := engine.NewRegistry(w, nil) // every agent is external: the script plays them on the bus
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	// The script plays the agents on an in-memory bus on the simulated
	// clock, drawing ids from the engine's counter.
	ids := counter()
	b := bus.New(bus.WithClock(sim), bus.WithIDs(ids), bus.WithAckMessages(false))
	defer b.Close()
	all := append([]engine.Option{engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(ids), engine.WithTransport(b)}, opts...)
	eng, err := engine.New(w, reg, all...)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	defer eng.Close()
	script := newScript(s, w, eng, sim)

	inst, err := eng.Start(ctx, s.Input)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	script.inst = inst
	finished := func() bool {
		select {
		case <-inst.Done():
			return true
		default:
			return false
		}
	}
	if err := script.play(ctx, finished); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	rep.Result = inst.Result()
	rep.Duration = sim.Now().Sub(start)
	if rep.History, err = inst.History(ctx); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	rep.build()
	if !finished() {
		rep.Failures = append(rep.Failures, fmt.Sprintf("instance did not finish: it waits in state %s with nothing left to run", rep.Result.State))
	}
	rep.Failures = append(rep.Failures, script.problems()...)
	rep.check()
	return rep, nil
}

// build derives the step table, the path and the hand-offs from the history.
func (r *Report) build() { r.Steps, r.States, r.Handoffs = Trace(r.History) }

// Trace derives from an instance's history its step table, the path of
// states it entered (the initial state first) and its agent-to-agent
// hand-offs ("from->to", final notices included). A row is a step: one agent
// run, or the join of a parallel state; hand-offs go on the row whose
// outcome caused them, and late replies follow the step they came for.
func Trace(history []record.Entry) (steps []Row, states, handoffs []string) {
	// Rows sort by step, then by kind: the agent's run, the join of a
	// parallel state (which reports on the last branch's step), late replies.
	const (
		runRow = iota
		joinRow
		lateRow
	)
	type keyed struct {
		row  *Row
		kind int
	}
	runs := map[int]*Row{}
	var all []keyed
	var cur *Row
	waiting := "" // the wait state entered last: its outcome is a signal or its timeout
	add := func(r *Row, kind int) *Row {
		all = append(all, keyed{r, kind})
		return r
	}
	run := func(step int) *Row {
		if r, ok := runs[step]; ok {
			return r
		}
		r := add(&Row{Step: step}, runRow)
		runs[step] = r
		return r
	}
	for _, en := range history {
		switch en.Kind {
		case record.KindStarted:
			states = append(states, en.State)
		case record.KindTransition:
			states = append(states, en.Next)
			if cur != nil {
				cur.Next = en.Next
				if strings.HasPrefix(en.Rule, "@") {
					cur.Rule = en.Rule
				}
			}
		case record.KindAgentRun:
			cur = run(en.Step)
			cur.State, cur.Agent, cur.Usage = en.State, en.Agent, en.Usage
			switch {
			case en.Error != "":
				cur.Trigger = "error: " + en.Error
			case en.To != "":
				cur.Trigger = en.Detail + " to " + en.To
			default:
				cur.Trigger = en.Trigger
			}
		case record.KindLateReply:
			add(&Row{Step: en.Step, State: en.State, Agent: en.Agent, Trigger: "late reply: " + cmp.Or(en.Trigger, en.Error)}, lateRow)
		case record.KindWaiting:
			waiting = en.State
		case record.KindOutcome:
			if en.State == waiting && en.Agent == en.State { // a wait's signal or timeout: a row of its own
				waiting = ""
				cur = add(&Row{Step: en.Step, State: en.State, Agent: "(wait)"}, joinRow)
				cur.Trigger = "signal " + en.Trigger
				if en.Error != "" {
					cur.Trigger = en.Trigger + ": " + en.Error
				}
				continue
			}
			if en.Agent == en.State { // a parallel state's join: a row of its own
				cur = add(&Row{Step: en.Step, State: en.State, Agent: en.Agent}, joinRow)
			} else {
				cur = run(en.Step)
				if cur.State == "" {
					cur.State, cur.Agent = en.State, en.Agent
				}
			}
			cur.Trigger = en.Trigger
			if en.Error != "" {
				cur.Trigger += ": " + en.Error
			}
		case record.KindRetry:
			if cur != nil {
				cur.Next = fmt.Sprintf("retry in %s", en.Delay)
			}
		case record.KindRuleFired:
			if cur != nil {
				cur.Rule = en.Rule
			}
		case record.KindCondition:
			if cur != nil {
				cur.ConditionErrors = append(cur.ConditionErrors, fmt.Sprintf("rule %s: `%s`: %s", en.Rule, en.Condition, en.Error))
			}
		case record.KindHandoff, record.KindFinalNotice:
			h := en.From + "->" + en.To
			handoffs = append(handoffs, h)
			if cur != nil {
				if cur.Handoff != "" {
					cur.Handoff += ", "
				}
				cur.Handoff += h
			}
		}
	}
	slices.SortStableFunc(all, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.row.Step, b.row.Step), cmp.Compare(a.kind, b.kind))
	})
	for _, k := range all {
		steps = append(steps, *k.row)
	}
	return steps, states, handoffs
}

// check compares the run with the scenario's expectations.
func (r *Report) check() {
	e := r.Scenario.Expect
	res := r.Result
	if string(res.Status) != e.Status {
		msg := fmt.Sprintf("status: got %s, want %s", res.Status, e.Status)
		if res.Err != nil {
			msg += " (" + res.Err.Error() + ")"
		}
		r.Failures = append(r.Failures, msg)
	}
	if e.Outcome != "" && res.Outcome != e.Outcome {
		r.Failures = append(r.Failures, fmt.Sprintf("outcome: got %q, want %q", res.Outcome, e.Outcome))
	}
	if e.States != nil && !slices.Equal(r.States, e.States) {
		r.Failures = append(r.Failures, fmt.Sprintf("states: got [%s], want [%s]", strings.Join(r.States, ", "), strings.Join(e.States, ", ")))
	}
	if e.Handoffs != nil && !slices.Equal(r.Handoffs, e.Handoffs) {
		r.Failures = append(r.Failures, fmt.Sprintf("handoffs: got [%s], want [%s]", strings.Join(r.Handoffs, ", "), strings.Join(e.Handoffs, ", ")))
	}
	if e.Error != "" {
		got := ""
		if res.Err != nil {
			got = res.Err.Error()
		}
		if !strings.Contains(got, e.Error) {
			r.Failures = append(r.Failures, fmt.Sprintf("error: got %q, want it to contain %q", got, e.Error))
		}
	}
	if e.Steps != nil && res.Steps != *e.Steps {
		r.Failures = append(r.Failures, fmt.Sprintf("steps: got %d, want %d", res.Steps, *e.Steps))
	}
	r.checkContext()
	if e.Property != "" {
		prog := e.property
		if prog == nil { // a Scenario built in Go rather than loaded
			var err error
			if prog, err = CompileProperty(e.Property); err != nil {
				r.Failures = append(r.Failures, fmt.Sprintf("property %q does not compile: %v", e.Property, err))
			}
		}
		if prog != nil {
			if ok, err := HoldsProperty(prog, res, r.States); err != nil {
				r.Failures = append(r.Failures, fmt.Sprintf("property %q failed: %v", e.Property, err))
			} else if !ok {
				r.Failures = append(r.Failures, fmt.Sprintf("property %q is false (status %s, outcome %q, steps %d)", e.Property, res.Status, res.Outcome, res.Steps))
			}
		}
	}
	r.checkUsage()
	if !e.ConditionErrors {
		for _, row := range r.Steps {
			for _, ce := range row.ConditionErrors {
				r.Failures = append(r.Failures, fmt.Sprintf("condition failed at run time at step %d (counted as false): %s (a scenario that expects it says expect: {condition_errors: true})", row.Step, ce))
			}
		}
	}
}

// checkContext compares the keys expect.context names with the final
// context, as JSON.
func (r *Report) checkContext() {
	want := r.Scenario.Expect.Context
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w, _ := json.Marshal(want[k])
		got, ok := r.Result.Context[k]
		if !ok {
			r.Failures = append(r.Failures, fmt.Sprintf("context.%s: missing, want %s", k, w))
			continue
		}
		g, err := json.Marshal(got)
		if err != nil || !jsonEqual(g, w) {
			r.Failures = append(r.Failures, fmt.Sprintf("context.%s: got %s, want %s", k, g, w))
		}
	}
}

// jsonEqual reports whether two JSON texts hold the same value (numbers
// compared as numbers, objects whatever their key order).
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// script plays the scenario's agents as external agents: it takes each
// hand-off from the agent's mailbox, consumes the agent's next reply, and
// reports it through the engine after the reply's delay on the simulated
// clock. Replies of parallel branches therefore overlap in time, timeouts
// fire from the engine's own timers, and a reply that comes too late is
// recorded as late, as in production.
type script struct {
	eng     *engine.Engine
	inst    *engine.Instance
	wf      *rules.Workflow
	sim     *clock.Sim
	signals []Signal    // not sent yet, in order
	armed   clock.Timer // sends signals[0] into the wait under way
	armedAt time.Time   // the start of the wait it was armed for
	agents  []string    // the workflow's agents, in file order: the polling order
	replies map[string][]Reply
	missing []string
	pending int // replies scheduled but not yet reported
}

func newScript(s *Scenario, w *rules.Workflow, eng *engine.Engine, sim *clock.Sim) *script {
	sc := &script{eng: eng, wf: w, sim: sim, replies: map[string][]Reply{}, signals: slices.Clone(s.Signals)}
	for _, fw := range workflows(w) {
		for _, a := range fw.Agents {
			if !slices.Contains(sc.agents, a.ID) {
				sc.agents = append(sc.agents, a.ID)
			}
		}
	}
	for a, rs := range s.Agents {
		sc.replies[a] = slices.Clone(rs)
	}
	return sc
}

// play drives the simulation until done reports true or nothing is left to
// happen: queued work first, then the agents' mailboxes, then the next timer.
func (s *script) play(ctx context.Context, done func() bool) error {
	for {
		if err := s.sim.RunReady(ctx); err != nil {
			return err
		}
		if s.poll(ctx) {
			continue
		}
		s.armSignal(ctx)
		if done() && s.pending == 0 {
			return nil // what is left are timers of the bus and the engine with nothing to do
		}
		if !s.sim.FireNext() {
			return nil
		}
	}
}

// armSignal arms the next signal when the instance waits in a state that
// lists it: it is sent its delay after the waiting began. A signal armed
// for a wait that ended without it (a timeout) waits for the next one.
func (s *script) armSignal(ctx context.Context) {
	if len(s.signals) == 0 || s.inst == nil {
		return
	}
	target, res := s.waiter()
	if s.armed != nil {
		if res.Waiting != "" && res.Since.Equal(s.armedAt) {
			return
		}
		s.armed.Stop()
		s.armed = nil
	}
	if res.Waiting == "" {
		return
	}
	st := waitState(workflows(s.wf), res.Waiting)
	if st == nil || !st.Wait.Accepts(s.signals[0].Name) {
		return
	}
	sig := s.signals[0]
	s.armedAt = res.Since
	s.armed = s.sim.AfterFunc(max(res.Since.Add(sig.Delay).Sub(s.sim.Now()), 0), func() {
		s.armed = nil
		if err := target.Signal(ctx, sig.Name, sig.Data); err == nil {
			s.signals = s.signals[1:]
		}
	})
}

// waiter returns the instance that waits for a signal: the scenario's
// instance, or the child (or grandchild) its workflow state waits for.
func (s *script) waiter() (*engine.Instance, engine.Result) {
	inst := s.inst
	res := inst.Result()
	for res.Waiting == "" && res.Child != "" {
		child, err := s.eng.Instance(res.Child)
		if err != nil {
			break
		}
		inst, res = child, child.Result()
	}
	return inst, res
}

// waitState finds the wait state named name among the workflows (a child's
// wait state is in the child's workflow).
func waitState(ws []*rules.Workflow, name string) *rules.State {
	for _, w := range ws {
		if st, ok := w.State(name); ok && st.Waits() {
			return st
		}
	}
	return nil
}

// poll takes every message waiting in the agents' mailboxes; it reports
// whether there was any.
func (s *script) poll(ctx context.Context) bool {
	any := false
	for _, agent := range s.agents {
		msgs, err := s.eng.Transport().TakeWork(ctx, agent, 0)
		if err != nil {
			continue
		}
		for _, m := range msgs {
			any = true
			s.take(ctx, agent, m)
		}
	}
	return any
}

// take plays one piece of work as an external agent would: it reads the
// work with the wire codec, acks it, and reports the agent's next reply.
func (s *script) take(ctx context.Context, agent string, m *transport.Message) {
	if m.RequiresAck {
		// The script is the agent's only worker and never crashes: it
		// takes the message for good, whatever the reply's delay.
		_ = s.eng.Transport().Ack(ctx, m)
	}
	t, err := wire.Decode(m)
	if err != nil {
		s.missing = append(s.missing, fmt.Sprintf("agent %s got a message that is not work: %v", agent, err))
		return
	}
	if t.Notice {
		// A final notice is delivered but consumes no reply.
		rep := wire.Report{InstanceID: t.InstanceID, Step: t.Step, Agent: agent, Trigger: "taken"}
		s.eng.HandleReport(ctx, &rep)
		return
	}
	queue := s.replies[agent]
	if len(queue) == 0 {
		state := "?"
		if inst, err := s.eng.Instance(t.InstanceID); err == nil {
			state = inst.Result().State
		}
		s.missing = append(s.missing, fmt.Sprintf("agent %s has no reply left for step %d (state %s)", agent, t.Step, state))
		s.report(ctx, t, 0, registry.Outcome{}, registry.Permanent(errors.New("scenario: no reply left for "+agent)))
		return
	}
	r := queue[0]
	s.replies[agent] = queue[1:]
	out, err := outcomeOf(r)
	out.Usage = s.priced(agent, r.Usage)
	s.report(ctx, t, r.Delay, out, err)
}

// report sends the reply as the agent's report once its delay has passed.
// A report the engine refuses (data no store can keep, say) is a problem of
// the scenario, named with the engine's reason.
func (s *script) report(ctx context.Context, t *registry.Task, delay time.Duration, out registry.Outcome, runErr error) {
	s.pending++
	rep := wire.ReportOf(t, out, runErr)
	send := func() {
		s.pending--
		if ans := s.eng.HandleReport(ctx, &rep); !ans.OK && ans.Code == wire.CodeInvalid {
			s.missing = append(s.missing, fmt.Sprintf("agent %s: its reply for step %d was refused: %s", t.Agent, t.Step, ans.Message))
		}
	}
	if delay <= 0 {
		s.sim.Submit(send)
		return
	}
	s.sim.AfterFunc(delay, send)
}

// outcomeOf turns a scripted reply into what an agent reports.
func outcomeOf(r Reply) (registry.Outcome, error) {
	switch {
	case r.Reject != "":
		return registry.Outcome{}, registry.Reject(r.Reject)
	case r.Error != "":
		err := errors.New(r.Error)
		if r.Kind != "" {
			err = registry.Kind(err, r.Kind)
		}
		if !r.Retryable {
			err = registry.Permanent(err)
		}
		return registry.Outcome{}, err
	case r.Handoff != nil:
		h := r.Handoff
		reason := h.Reason
		if reason == "" {
			reason = "plan_step"
		}
		return registry.Outcome{Result: r.Result, Handoff: &registry.Delegation{
			To: h.To, Reason: reason, Explanation: h.Explanation, Task: h.Task,
			Payload: h.Payload, ReturnControl: h.ReturnControl,
		}}, nil
	case r.Select != "":
		return registry.Outcome{Result: r.Result, Handoff: &registry.Delegation{
			To: r.Select, Reason: "user_request", Explanation: "user selected " + r.Select,
		}}, nil
	default:
		return registry.Outcome{Trigger: r.Trigger, Result: r.Result}, nil
	}
}

func (s *script) problems() []string {
	out := slices.Clone(s.missing)
	for _, sig := range s.signals {
		out = append(out, fmt.Sprintf("signal %s at line %d left unsent: the instance never waited for it", sig.Name, sig.Line))
	}
	agents := make([]string, 0, len(s.replies))
	for a := range s.replies {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	for _, a := range agents {
		for _, r := range s.replies[a] {
			out = append(out, fmt.Sprintf("agent %s: reply at line %d left unconsumed", a, r.Line))
		}
	}
	return out
}

// counter returns deterministic UUID-shaped ids: ...-000000000001, -2, ...
func counter() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
}
