package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// Epoch is the scenario clock's start: every replay begins at this instant.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Report is the outcome of replaying a scenario.
type Report struct {
	Scenario *Scenario
	Workflow *rules.Workflow
	Result   engine.Result
	History  []engine.Entry
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
}

// Loader loads workflows; a cache lets `wfrun test` load each workflow once.
type Loader func(path string) (*rules.Workflow, error)

// Run replays the scenario against its workflow on a simulated clock, in one
// goroutine, and checks its expectations. The error is non-nil only when the
// scenario could not be run at all (its workflow does not load, say); a
// failed expectation is reported in Report.Failures.
func Run(ctx context.Context, s *Scenario, load Loader) (*Report, error) {
	if load == nil {
		load = rules.Load
	}
	w, err := load(s.Workflow)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: workflow: %w", s.File, err)
	}
	rep := &Report{Scenario: s, Workflow: w}
	for agent, replies := range s.Agents {
		if _, ok := w.Agent(agent); !ok && len(replies) > 0 {
			rep.Failures = append(rep.Failures, fmt.Sprintf("agent %q of the scenario is not in workflow %s", agent, w.Name))
		}
	}
	slices.Sort(rep.Failures)

	sim := clock.NewSim(Epoch)
	script := &script{sim: sim, replies: map[string][]Reply{}}
	for a, rs := range s.Agents {
		script.replies[a] = slices.Clone(rs)
	}
	handlers := map[string]registry.Handler{}
	for _, a := range w.Agents {
		handlers[a.ID] = script.handler(a.ID)
	}
	reg, err := engine.NewRegistry(w, handlers)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	eng, err := engine.New(w, reg, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter()))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	defer eng.Close()

	inst, err := eng.Start(ctx, s.Input)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	finished := func() bool {
		select {
		case <-inst.Done():
			return true
		default:
			return false
		}
	}
	if err := sim.Run(ctx, finished); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	// Let the final notices sent on completion reach their agents.
	if err := sim.Run(ctx, sim.Idle); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.File, err)
	}
	rep.Result = inst.Result()
	rep.Duration = sim.Now().Sub(Epoch)
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
func (r *Report) build() {
	rows := map[int]*Row{}
	var order []int
	row := func(step int) *Row {
		if rw, ok := rows[step]; ok {
			return rw
		}
		rw := &Row{Step: step}
		rows[step] = rw
		order = append(order, step)
		return rw
	}
	for _, en := range r.History {
		switch en.Kind {
		case engine.KindStarted:
			r.States = append(r.States, en.State)
		case engine.KindTransition:
			r.States = append(r.States, en.Next)
			if rw, ok := rows[en.Step]; ok {
				rw.Next = en.Next
				if strings.HasPrefix(en.Rule, "@") {
					rw.Rule = en.Rule
				}
			}
		case engine.KindAgentRun:
			rw := row(en.Step)
			rw.State, rw.Agent = en.State, en.Agent
			switch {
			case en.Error != "":
				rw.Trigger = "error: " + en.Error
			case en.To != "":
				rw.Trigger = en.Detail + " to " + en.To
			default:
				rw.Trigger = en.Trigger
			}
		case engine.KindOutcome:
			if rw, ok := rows[en.Step]; ok {
				rw.Trigger = en.Trigger
				if en.Error != "" {
					rw.Trigger += ": " + en.Error
				}
			}
		case engine.KindRetry:
			if rw, ok := rows[en.Step]; ok {
				rw.Next = fmt.Sprintf("retry in %s", en.Delay)
			}
		case engine.KindRuleFired:
			if rw, ok := rows[en.Step]; ok {
				rw.Rule = en.Rule
			}
		case engine.KindHandoff, engine.KindFinalNotice:
			h := en.From + "->" + en.To
			r.Handoffs = append(r.Handoffs, h)
			if rw, ok := rows[en.Step-1]; ok {
				rw.Handoff = h
			}
		}
	}
	for _, s := range order {
		r.Steps = append(r.Steps, *rows[s])
	}
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
}

// script plays the scenario's agents: each run consumes the agent's next reply.
type script struct {
	sim     *clock.Sim
	mu      sync.Mutex
	replies map[string][]Reply
	missing []string
}

func (s *script) handler(agent string) registry.Handler {
	return registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
		s.mu.Lock()
		queue := s.replies[agent]
		if len(queue) == 0 {
			s.missing = append(s.missing, fmt.Sprintf("agent %s has no reply left for step %d (state %s)", agent, t.Step, t.State))
			s.mu.Unlock()
			return registry.Outcome{}, registry.Permanent(errors.New("scenario: no reply left for " + agent))
		}
		r := queue[0]
		s.replies[agent] = queue[1:]
		s.mu.Unlock()
		s.sim.Advance(r.Delay)
		switch {
		case r.Reject != "":
			return registry.Outcome{}, registry.Reject(r.Reject)
		case r.Error != "":
			err := errors.New(r.Error)
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
	})
}

func (s *script) problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.missing)
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
