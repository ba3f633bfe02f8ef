package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
)

// epoch is where every simulated test clock starts.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// loadWorkflow loads engine/testdata/name.
func loadWorkflow(t testing.TB, name string) *rules.Workflow {
	t.Helper()
	w, err := rules.Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return w
}

// reply is one scripted run of an agent.
type reply func(ctx context.Context, sim *clock.Sim, t *registry.Task) (registry.Outcome, error)

// ok reports trigger with result.
func ok(trigger string, result map[string]any) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: trigger, Result: result}, nil
	}
}

// fail fails the run with a retryable error.
func fail(msg string) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{}, errors.New(msg)
	}
}

// permanent fails the run with an error that must not be retried.
func permanent(msg string) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{}, registry.Permanent(errors.New(msg))
	}
}

// reject refuses the hand-off.
func reject(reason string) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{}, registry.Reject(reason)
	}
}

// panics panics with v.
func panics(v any) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		panic(v)
	}
}

// takes models a run that takes d of virtual time before answering with r.
func takes(d time.Duration, r reply) reply {
	return func(ctx context.Context, sim *clock.Sim, t *registry.Task) (registry.Outcome, error) {
		sim.Advance(d)
		return r(ctx, sim, t)
	}
}

// call is one run of a scripted agent, as the test saw it.
type call struct {
	Agent string
	At    time.Time // virtual time when the handler started
	Task  registry.Task
}

// script plays scripted agents on the simulator and records every run.
type script struct {
	t       testing.TB
	sim     *clock.Sim
	mu      sync.Mutex
	replies map[string][]reply
	calls   []call
}

func (s *script) handler(agent string) registry.Handler {
	return registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
		s.mu.Lock()
		s.calls = append(s.calls, call{Agent: agent, At: s.sim.Now(), Task: *t})
		queue := s.replies[agent]
		if len(queue) == 0 {
			s.mu.Unlock()
			s.t.Errorf("agent %s run for step %d with no reply left", agent, t.Step)
			return registry.Outcome{}, registry.Permanent(errors.New("test: no reply left"))
		}
		r := queue[0]
		s.replies[agent] = queue[1:]
		s.mu.Unlock()
		return r(ctx, s.sim, t)
	})
}

// runsOf returns the runs of agent, in order.
func (s *script) runsOf(agent string) []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []call
	for _, c := range s.calls {
		if c.Agent == agent {
			out = append(out, c)
		}
	}
	return out
}

// unused lists the replies no run consumed.
func (s *script) unused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for a, rs := range s.replies {
		if len(rs) > 0 {
			out = append(out, fmt.Sprintf("%s: %d", a, len(rs)))
		}
	}
	slices.Sort(out)
	return out
}

// simRun is an engine on the deterministic simulator with scripted Go
// agents; agents absent from the script are external.
type simRun struct {
	t      testing.TB
	sim    *clock.Sim
	eng    *engine.Engine
	script *script
	events []engine.Event
}

// newSimRun builds an engine for the workflow file with the given scripted
// agents. Extra options are applied after the simulator's.
func newSimRun(t testing.TB, file string, agents map[string][]reply, opts ...engine.Option) *simRun {
	t.Helper()
	return newSimRunOf(t, loadWorkflow(t, file), agents, opts...)
}

// newSimRunOf is newSimRun for a workflow already loaded.
func newSimRunOf(t testing.TB, w *rules.Workflow, agents map[string][]reply, opts ...engine.Option) *simRun {
	t.Helper()
	file := w.File
	sim := clock.NewSim(epoch)
	sc := &script{t: t, sim: sim, replies: map[string][]reply{}}
	reg := registry.New()
	for _, a := range w.Agents {
		rs, scripted := agents[a.ID]
		if !scripted {
			continue
		}
		sc.replies[a.ID] = slices.Clone(rs)
		if err := reg.Add(engine.AgentOf(a, sc.handler(a.ID))); err != nil {
			t.Fatalf("registry: %v", err)
		}
	}
	for a := range agents {
		if _, ok := w.Agent(a); !ok {
			t.Fatalf("scripted agent %s is not in %s", a, file)
		}
	}
	r := &simRun{t: t, sim: sim, script: sc}
	ids := counter("inst")
	all := append([]engine.Option{
		engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(ids),
		withBus(),
		engine.WithObserver(func(ev engine.Event) { r.events = append(r.events, ev) }),
	}, opts...)
	eng, err := engine.New(w, reg, all...)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	r.eng = eng
	return r
}

// start starts an instance and runs the simulator until nothing is left.
func (r *simRun) start(input map[string]any) *engine.Instance {
	r.t.Helper()
	inst, err := r.eng.Start(context.Background(), input)
	if err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.settle()
	return inst
}

// settle runs the simulator until no work and no timer is left.
func (r *simRun) settle() {
	r.t.Helper()
	if err := r.sim.Run(context.Background(), nil); err != nil {
		r.t.Fatalf("sim.Run: %v", err)
	}
}

// runUntil runs the simulator until cond holds or nothing is left to run.
func (r *simRun) runUntil(cond func() bool) {
	r.t.Helper()
	if err := r.sim.Run(context.Background(), cond); err != nil {
		r.t.Fatalf("sim.Run: %v", err)
	}
}

// queued reports whether agent's mailbox holds a message.
func (r *simRun) queued(agent string) func() bool {
	return func() bool {
		for _, a := range busOf(r.eng).Metrics().Agents {
			if a.Agent == agent {
				return a.Depth > 0
			}
		}
		return false
	}
}

// finish starts an instance, runs it to its end and returns its result and
// history; every scripted reply must have been consumed.
func (r *simRun) finish(input map[string]any) (engine.Result, []record.Entry) {
	r.t.Helper()
	inst := r.start(input)
	select {
	case <-inst.Done():
	default:
		r.t.Fatalf("instance still running in state %s", inst.Result().State)
	}
	if left := r.script.unused(); len(left) > 0 {
		r.t.Errorf("replies left unconsumed: %v", left)
	}
	return inst.Result(), history(r.t, inst)
}

func history(t testing.TB, inst *engine.Instance) []record.Entry {
	t.Helper()
	h, err := inst.History(context.Background())
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	return h
}

// counter returns ids prefix-1, prefix-2, ...
func counter(prefix string) func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%s-%d", prefix, n)
	}
}

// entries returns the history entries of kind k.
func entries(h []record.Entry, k record.Kind) []record.Entry {
	var out []record.Entry
	for _, e := range h {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// path returns the states entered, the initial state first.
func path(h []record.Entry) []string {
	var out []string
	for _, e := range h {
		switch e.Kind {
		case record.KindStarted:
			out = append(out, e.State)
		case record.KindTransition:
			out = append(out, e.Next)
		}
	}
	return out
}

// fired returns the ids of the rules fired, in order.
func fired(h []record.Entry) []string {
	var out []string
	for _, e := range entries(h, record.KindRuleFired) {
		out = append(out, e.Rule)
	}
	return out
}

// kinds renders the history's kinds on one line, for failure messages.
func kinds(h []record.Entry) string {
	var b strings.Builder
	for i, e := range h {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(e.Kind))
	}
	return b.String()
}

// errText returns err's text or "".
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// wantCompleted fails the test unless res completed with outcome.
func wantCompleted(t testing.TB, res engine.Result, outcome string) {
	t.Helper()
	if res.Status != record.StatusCompleted || res.Outcome != outcome {
		t.Fatalf("got status %s outcome %q (err %v), want completed with outcome %q", res.Status, res.Outcome, res.Err, outcome)
	}
}

// wantFailed fails the test unless res failed with an error containing msg.
func wantFailed(t testing.TB, res engine.Result, msg string) {
	t.Helper()
	if res.Status != record.StatusFailed {
		t.Fatalf("got status %s outcome %q, want failed", res.Status, res.Outcome)
	}
	if !strings.Contains(errText(res.Err), msg) {
		t.Fatalf("got error %q, want it to contain %q", errText(res.Err), msg)
	}
}

// withBus gives an engine an in-memory bus of its own for its external
// agents, on the engine's clock and ids, as a Go program without NATS has.
func withBus() engine.Option {
	return engine.WithOwnTransport(func(clk clock.Clock, ids func() string) transport.Transport {
		return bus.New(bus.WithClock(clk), bus.WithIDs(ids), bus.WithAckMessages(false))
	})
}

// newEngine is engine.New with withBus before the given options.
func newEngine(w *rules.Workflow, reg *registry.Registry, opts ...engine.Option) (*engine.Engine, error) {
	return engine.New(w, reg, append([]engine.Option{withBus()}, opts...)...)
}

// busOf returns the in-memory bus that carries an engine's external agents' work.
func busOf(eng *engine.Engine) *bus.Bus { return eng.Transport().(*bus.Bus) }

// allHandoffs returns the hand-off records of every instance eng's store
// keeps, instance by instance.
func allHandoffs(t testing.TB, eng *engine.Engine) []handoff.Record {
	t.Helper()
	ctx := context.Background()
	snaps, err := eng.Store().Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []handoff.Record
	for _, s := range snaps {
		h, err := eng.Store().History(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, engine.HandoffsOf(h)...)
	}
	return out
}

// handoffCounts counts hand-off records by how they ended; Total counts
// those that were sent (all but the failed), ReceivedBy those per target.
type handoffCounts struct {
	Total, Pending, Accepted, Rejected, Failed int
	ReceivedBy                                 map[string]int
}

// handoffStats counts the hand-offs of every instance of eng.
func handoffStats(t testing.TB, eng *engine.Engine) handoffCounts {
	t.Helper()
	c := handoffCounts{ReceivedBy: map[string]int{}}
	for _, r := range allHandoffs(t, eng) {
		switch r.Status {
		case handoff.StatusFailed:
			c.Failed++
			continue
		case handoff.StatusPending:
			c.Pending++
		case handoff.StatusAccepted:
			c.Accepted++
		case handoff.StatusRejected:
			c.Rejected++
		}
		c.Total++
		c.ReceivedBy[r.To]++
	}
	return c
}

// pendingHandoffs returns the hand-offs of eng's instances still pending.
func pendingHandoffs(t testing.TB, eng *engine.Engine) []handoff.Record {
	t.Helper()
	var out []handoff.Record
	for _, r := range allHandoffs(t, eng) {
		if r.Status == handoff.StatusPending {
			out = append(out, r)
		}
	}
	return out
}

// handoffHistory returns the hand-offs of one instance.
func handoffHistory(t testing.TB, eng *engine.Engine, id string) []handoff.Record {
	t.Helper()
	h, err := eng.Store().History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return engine.HandoffsOf(h)
}

// lookupHandoff finds a hand-off record by id.
func lookupHandoff(t testing.TB, eng *engine.Engine, id string) (handoff.Record, bool) {
	t.Helper()
	for _, r := range allHandoffs(t, eng) {
		if r.ID == id {
			return r, true
		}
	}
	return handoff.Record{}, false
}
