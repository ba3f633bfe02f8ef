package ops_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// pendingSet: a parent whose KYC state runs the kyc workflow as a child,
// and a foreach over documents. Agents without a Go handler are external:
// their work waits on the bus, and the runs stay pending.
var pendingSet = map[string]string{
	"onboarding.yaml": `workflow: onboarding
initial: SIGNUP
agents: {signup: {}, welcomer: {}}
states:
  SIGNUP: {agent: signup}
  KYC: {workflow: kyc, timeout: 1h}
  DONE: {terminal: true}
rules:
  - {id: signed, from: signup, trigger: signed, next: KYC}
  - {id: verified, from: KYC, trigger: VERIFIED, next: DONE}
`,
	"kyc.yaml": `workflow: kyc
initial: CHECKING
agents: {checker: {}}
states:
  CHECKING: {agent: checker, timeout: 10m}
  VERIFIED: {terminal: true}
rules:
  - {id: ok, from: checker, trigger: ok, next: VERIFIED}
`,
	"batch.yaml": `workflow: batch
initial: SPLIT
agents: {splitter: {}, reviewer: {url: "http://127.0.0.1:1/review"}}
states:
  SPLIT: {agent: splitter}
  REVIEWS:
    foreach: {items: result.docs, agent: reviewer, max_concurrency: 2}
    timeout: 1m
  DONE: {terminal: true}
rules:
  - {id: split, from: splitter, trigger: split, next: REVIEWS}
  - {id: all, from: REVIEWS, trigger: joined, next: DONE}
`,
}

// setFixture runs onboarding and batch with Go handlers for signup and
// splitter only.
func setFixture(t *testing.T) (*record.MemStore, *ops.Ops, map[string]*rules.Workflow) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range pendingSet {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600))
	}
	set, err := rules.LoadSet(dir)
	require.NoError(t, err)
	handlers := map[string]registry.Handler{
		"signup": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "signed"}, nil
		}),
		"splitter": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "split", Result: map[string]any{"docs": []any{"a", "b", "c"}}}, nil
		}),
	}
	store := record.NewMemStore()
	flows := map[string]*rules.Workflow{}
	var engines []*engine.Engine
	for _, name := range []string{"onboarding", "batch"} {
		w, ok := set.Workflow(name)
		require.True(t, ok)
		flows[name] = w
		reg := registry.New()
		for _, wf := range []*rules.Workflow{w, childOf(w)} {
			if wf == nil {
				continue
			}
			flows[wf.Name] = wf
			for _, a := range wf.Agents {
				require.NoError(t, reg.Add(engine.AgentOf(a, handlers[a.ID])))
			}
		}
		tr := bus.New(bus.WithAckMessages(false)) // the work of agents the test leaves unscripted
		t.Cleanup(func() { _ = tr.Close() })
		eng, err := engine.New(w, reg, engine.WithStore(store), engine.WithTransport(tr))
		require.NoError(t, err)
		t.Cleanup(func() { _ = eng.Close() })
		engines = append(engines, eng)
	}
	return store, ops.New(store, ops.NewEngines(engines...)), flows
}

func childOf(w *rules.Workflow) *rules.Workflow {
	for _, st := range w.States {
		if st.Child != nil {
			return st.Child.Target
		}
	}
	return nil
}

// pendingOf polls Get (bounded) until the instance waits on n things of
// kind.
func pendingOf(t *testing.T, o *ops.Ops, id, kind string, n int) ops.Instance {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, err := o.Get(context.Background(), id)
		if err == nil && len(in.Pending) == n && in.Pending[0].Kind == kind {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s: pending %+v (err %v), want %d entries", id, in.Pending, err, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestOps_Get_PendingRunOfAGoHandler(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.ops.Start(context.Background(), ops.StartRequest{Workflow: "desk", ID: "r", Input: map[string]any{"mode": "hold"}})
	require.NoError(t, err)
	in := pendingOf(t, f.ops, "r", "run", 1)
	p := in.Pending[0]
	assert.Equal(t, "run", p.Kind)
	assert.Equal(t, "writer", p.Agent)
	assert.Equal(t, "WRITING", p.State)
	assert.Equal(t, 1, p.Step)
	assert.Equal(t, 1, p.Attempt)
	assert.Equal(t, "go", p.Transport)
	assert.False(t, p.Since.IsZero())
	assert.Nil(t, p.Deadline, "WRITING has no timeout")
}

func TestOps_Get_PendingWait(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.ops.Start(context.Background(), ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	f.waitState("w", "APPROVAL")
	in := pendingOf(t, f.ops, "w", "wait", 1)
	p := in.Pending[0]
	assert.Equal(t, "wait", p.Kind)
	assert.Equal(t, []string{"approve", "reject"}, p.Signals)
	assert.Empty(t, p.Agent)
	assert.Empty(t, p.Transport)
	require.NotNil(t, p.Deadline)
	assert.Equal(t, time.Hour, p.Deadline.Sub(p.Since))

	_, err = f.ops.Signal(context.Background(), "w", "approve", nil)
	require.NoError(t, err)
	f.waitState("w", "DONE")
	in, err = f.ops.Get(context.Background(), "w")
	require.NoError(t, err)
	assert.Empty(t, in.Pending, "a finished instance waits on nothing")
	assert.NotNil(t, in.Pending, "pending is a list, never null")
}

func TestOps_Get_PendingChild(t *testing.T) {
	store, o, flows := setFixture(t)
	_, _, err := o.Start(context.Background(), ops.StartRequest{Workflow: "onboarding", ID: "p"})
	require.NoError(t, err)
	in := pendingOf(t, o, "p", "child", 1)
	p := in.Pending[0]
	assert.Equal(t, "child", p.Kind)
	assert.Equal(t, "KYC", p.State)
	assert.Equal(t, "kyc", p.Agent)
	require.NotEmpty(t, p.Child)
	require.NotNil(t, p.Deadline)
	assert.Equal(t, time.Hour, p.Deadline.Sub(p.Since))

	assert.Empty(t, p.Transport)

	// Another process tells the same child from the history, and a list
	// from the snapshot.
	other := ops.New(store, flowsOnly{flows})
	got, err := other.Get(context.Background(), "p")
	require.NoError(t, err)
	require.Len(t, got.Pending, 1)
	assert.Equal(t, p.Child, got.Pending[0].Child)
	assert.Equal(t, "kyc", got.Pending[0].Agent)
	assert.Equal(t, time.Hour, got.Pending[0].Deadline.Sub(got.Pending[0].Since))
	page, err := other.List(context.Background(), ops.ListQuery{Workflow: "onboarding"})
	require.NoError(t, err)
	require.Len(t, page.Instances, 1)
	require.Len(t, page.Instances[0].Pending, 1)
	assert.Equal(t, "child", page.Instances[0].Pending[0].Kind)
	assert.Equal(t, "kyc", page.Instances[0].Pending[0].Agent)
}

func TestOps_Get_PendingForeachItems(t *testing.T) {
	store, o, flows := setFixture(t)
	_, _, err := o.Start(context.Background(), ops.StartRequest{Workflow: "batch", ID: "b"})
	require.NoError(t, err)
	in := pendingOf(t, o, "b", "foreach", 2) // max_concurrency: 2 of the 3 items
	for k, p := range in.Pending {
		assert.Equal(t, "foreach", p.Kind)
		assert.Equal(t, "reviewer", p.Agent)
		assert.Equal(t, "http", p.Transport, "the reviewer has a url")
		assert.Equal(t, in.Pending[0].Step+k, p.Step, "ordered by step")
		require.NotNil(t, p.Deadline)
	}

	// Another process, whose engine does not hold the instance, derives
	// the same runs from the history.
	other := ops.New(store, flowsOnly{flows})
	got, err := other.Get(context.Background(), "b")
	require.NoError(t, err)
	require.Len(t, got.Pending, 2)
	for k, p := range got.Pending {
		want := in.Pending[k]
		assert.Equal(t, want.Kind, p.Kind)
		assert.Equal(t, want.Agent, p.Agent)
		assert.Equal(t, want.Step, p.Step)
		assert.Equal(t, want.Transport, p.Transport)
		assert.Equal(t, want.Deadline.Sub(want.Since), p.Deadline.Sub(p.Since))
	}
}

func TestOps_Get_PendingFromTheHistory(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.ops.Start(context.Background(), ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	f.waitState("w", "APPROVAL")
	want := pendingOf(t, f.ops, "w", "wait", 1).Pending

	w := f.eng.Workflow()
	other := ops.New(f.store, flowsOnly{map[string]*rules.Workflow{w.Name: w}})
	in, err := other.Get(context.Background(), "w")
	require.NoError(t, err)
	require.Len(t, in.Pending, 1)
	got := in.Pending[0]
	// The engine takes the time of the wait's start and of its history
	// entry one after the other: they may differ by the time between.
	assert.WithinDuration(t, want[0].Since, got.Since, time.Second)
	got.Since, got.Deadline = want[0].Since, want[0].Deadline
	assert.Equal(t, want[0], got, "the wait as the history tells it")

	page, err := other.List(context.Background(), ops.ListQuery{})
	require.NoError(t, err)
	require.Len(t, page.Instances, 1)
	require.Len(t, page.Instances[0].Pending, 1, "a list tells it from the snapshot")
	assert.Equal(t, []string{"approve", "reject"}, page.Instances[0].Pending[0].Signals)
}

// flowsOnly is a catalog of workflows without engines: a process that
// runs none of the instances it reads.
type flowsOnly struct{ flows map[string]*rules.Workflow }

func (c flowsOnly) Flow(hash string) (ops.Flow, bool) {
	for _, w := range c.flows {
		if w.Hash == hash {
			return ops.Flow{Workflow: w, Current: true}, true
		}
	}
	return ops.Flow{}, false
}

func (c flowsOnly) Versions(name string) []ops.Flow {
	if w, ok := c.flows[name]; ok {
		return []ops.Flow{{Workflow: w, Current: true}}
	}
	return nil
}

func (c flowsOnly) Names() []string { return nil }

func TestOps_Get_OnLimitIsMarked(t *testing.T) {
	w, err := rules.Parse("loop.yaml", []byte(`workflow: loop
initial: WORK
agents: {worker: {}}
limits: {max_steps: 2, on_limit: GAVE_UP}
states:
  WORK: {agent: worker}
  GAVE_UP: {terminal: true}
  DONE: {terminal: true}
rules:
  - {id: again, from: worker, trigger: again, next: WORK}
  - {id: done, from: worker, trigger: done, next: DONE}
`))
	require.NoError(t, err)
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"worker": registry.HandlerFunc(func(_ context.Context, task *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: task.Input["trigger"].(string)}, nil
	})})
	require.NoError(t, err)
	store := record.NewMemStore()
	eng, err := engine.New(w, reg, engine.WithStore(store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	o := ops.New(store, ops.NewEngines(eng))
	for _, id := range []string{"again", "done"} {
		h, err := eng.StartID(context.Background(), id, map[string]any{"trigger": id})
		require.NoError(t, err)
		<-h.Done()
	}

	in, err := o.Get(context.Background(), "again")
	require.NoError(t, err)
	assert.Equal(t, ops.StatusCompleted, in.Status)
	assert.Equal(t, "max_steps", in.OnLimit)
	in, err = o.Get(context.Background(), "done")
	require.NoError(t, err)
	assert.Empty(t, in.OnLimit, "completed by its own rules")

	page, err := o.List(context.Background(), ops.ListQuery{})
	require.NoError(t, err)
	marks := map[string]string{}
	for _, in := range page.Instances {
		marks[in.ID] = in.OnLimit
	}
	assert.Equal(t, map[string]string{"again": "max_steps", "done": ""}, marks)
}

// staleOnce is a store whose first read of an instance answers the
// snapshot taken before its end (the read raced the engine's last commit),
// and which counts the history reads.
type staleOnce struct {
	*record.MemStore
	mu      sync.Mutex
	stale   *record.Snapshot
	history int
}

func (s *staleOnce) Instance(ctx context.Context, id string) (record.Snapshot, error) {
	s.mu.Lock()
	stale := s.stale
	s.stale = nil
	s.mu.Unlock()
	if stale != nil {
		return *stale, nil
	}
	return s.MemStore.Instance(ctx, id)
}

func (s *staleOnce) History(ctx context.Context, id string) ([]record.Entry, error) {
	s.mu.Lock()
	s.history++
	s.mu.Unlock()
	return s.MemStore.History(ctx, id)
}

func TestOps_Get_AnEndBetweenTheReadAndTheEngineIsAnswered(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	f.waitState("w", "APPROVAL")
	before, err := f.store.Instance(ctx, "w")
	require.NoError(t, err)
	_, err = f.ops.Signal(ctx, "w", "approve", nil)
	require.NoError(t, err)
	f.waitState("w", "DONE")
	_, held := f.eng.Pending("w", nil)
	require.False(t, held, "the engine let the ended instance go")

	store := &staleOnce{MemStore: f.store, stale: &before}
	in, err := ops.New(store, ops.NewEngines(f.eng)).Get(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, ops.StatusCompleted, in.Status, "the instance as it ended, not as the first read saw it")
	assert.Equal(t, "DONE", in.State)
	assert.Empty(t, in.Pending)
	assert.Zero(t, store.history, "no history read for a pending list")
}
