package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

func loadChildSet(t testing.TB) *rules.Workflow {
	t.Helper()
	set, err := rules.LoadSet(filepath.Join("testdata", "child"))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := set.Workflow("onboarding")
	return w
}

// childRun builds an engine of onboarding (and kyc) on the simulator with
// scripted Go agents of both workflows.
func newChildRun(t *testing.T, agents map[string][]reply) *simRun {
	t.Helper()
	w := loadChildSet(t)
	sim := clock.NewSim(epoch)
	sc := &script{t: t, sim: sim, replies: map[string][]reply{}}
	reg := registry.New()
	for _, wf := range []*rules.Workflow{w, mustState(t, w, "KYC").Child.Target} {
		for _, a := range wf.Agents {
			if rs, ok := agents[a.ID]; ok {
				sc.replies[a.ID] = slices.Clone(rs)
				if err := reg.Add(engine.AgentOf(a, sc.handler(a.ID))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	r := &simRun{t: t, sim: sim, script: sc}
	eng, err := newEngine(w, reg, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("p")),
		engine.WithObserver(func(ev engine.Event) { r.events = append(r.events, ev) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	r.eng = eng
	return r
}

func mustState(t testing.TB, w *rules.Workflow, name string) *rules.State {
	t.Helper()
	st, ok := w.State(name)
	if !ok {
		t.Fatalf("no state %s", name)
	}
	return st
}

func TestEngine_Child_Outcomes(t *testing.T) {
	signed := ok("signed", map[string]any{"customer": "c-7"})
	tests := []struct {
		name        string
		agents      map[string][]reply
		wantOutcome string
		wantContext map[string]any
		wantChild   record.Status
	}{
		{
			name:        "the child's terminal state is the outcome, its final context the result",
			agents:      map[string][]reply{"signup": {signed}, "checker": {ok("ok", map[string]any{"level": "high"})}, "welcomer": {ok("welcomed", nil)}},
			wantOutcome: "DONE", wantContext: map[string]any{"level": "high", "checked": "c-7"}, wantChild: record.StatusCompleted,
		},
		{
			name:        "another terminal state, another rule",
			agents:      map[string][]reply{"signup": {signed}, "checker": {ok("ko", nil)}},
			wantOutcome: "REFUSED", wantChild: record.StatusCompleted,
		},
		{
			name:        "a failed child is the outcome error with kind child_failed",
			agents:      map[string][]reply{"signup": {signed}, "checker": {permanent("registry down")}},
			wantOutcome: "BROKEN", wantContext: map[string]any{"kind": "child_failed"}, wantChild: record.StatusFailed,
		},
		{
			name:        "the state's timeout cancels the child (its checker never answers)",
			agents:      map[string][]reply{"signup": {signed}},
			wantOutcome: "LATE", wantContext: map[string]any{"kind": "timeout"}, wantChild: record.StatusCanceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newChildRun(t, tt.agents)
			res, h := r.finish(nil)
			wantCompleted(t, res, tt.wantOutcome)
			for k, v := range tt.wantContext {
				if res.Context[k] != v {
					t.Errorf("context %s: got %v, want %v", k, res.Context[k], v)
				}
			}
			started := entries(h, record.KindChild)
			if len(started) != 1 || started[0].Detail != "p-1/KYC/1" || started[0].Agent != "kyc" || started[0].Result["customer_id"] != "c-7" {
				t.Fatalf("got child entries %+v, want p-1/KYC/1 of kyc with its input", started)
			}
			child, err := r.eng.Instance("p-1/KYC/1")
			if err != nil {
				t.Fatalf("the child by id: %v", err)
			}
			if got := child.Result().Status; got != tt.wantChild {
				t.Errorf("child: got %s, want %s", got, tt.wantChild)
			}
			if strings.Contains(kinds(h), "checker") || res.Steps > 2 {
				t.Errorf("got %d steps in the parent, want its own runs only", res.Steps)
			}
			ch := history(t, child)
			if len(entries(ch, record.KindDispatch)) == 0 || ch[0].State != "CHECKING" {
				t.Errorf("the child's history has no run: %s", kinds(ch))
			}
		})
	}
}

func TestEngine_Child_CancelledWithItsParent(t *testing.T) {
	ctx := context.Background()
	r := newChildRun(t, map[string][]reply{"signup": {ok("signed", nil)}})
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(func() bool { return inst.Result().State == "KYC" })
	if err := inst.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	r.settle()
	child, err := r.eng.Instance("p-1/KYC/1")
	if err != nil {
		t.Fatal(err)
	}
	if got := child.Result().Status; got != record.StatusCanceled {
		t.Errorf("child: got %s, want canceled with its parent", got)
	}
}

func TestEngine_Child_NeedsTheSet(t *testing.T) {
	w, err := rules.Load(filepath.Join("testdata", "child", "onboarding.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newEngine(w, nil); err == nil || !strings.Contains(err.Error(), "rules.LoadSet") {
		t.Errorf("got %v, want a refusal naming rules.LoadSet", err)
	}
}

func TestEngine_Child_ResumedWhileTheChildRuns(t *testing.T) {
	build := func(t *testing.T, store record.Store, sim *clock.Sim) *engine.Engine {
		eng, err := newEngine(loadChildSet(t), nil, engine.WithStore(store), engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("p")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		return eng
	}
	// The longest id a caller may choose makes a child id longer still,
	// which every store takes.
	longest := strings.Repeat("p", record.MaxIDLen)
	for _, name := range storeNames {
		for _, id := range []string{"", longest} {
			t.Run(fmt.Sprintf("%s, id of %d bytes", name, len(id)), func(t *testing.T) {
				testChildResumed(t, build, name, id)
			})
		}
	}
}

// testChildResumed starts an instance of onboarding (under id, or a new
// id when empty), lets the engine die while the child runs, resumes both
// on another engine and finishes them.
func testChildResumed(t *testing.T, build func(*testing.T, record.Store, *clock.Sim) *engine.Engine, name, id string) {
	ctx := context.Background()
	store := openStore(t, name)
	sim := clock.NewSim(epoch)
	first := build(t, store, sim)
	var inst *engine.Instance
	var err error
	if id == "" {
		inst, err = first.Start(ctx, nil)
	} else {
		inst, err = first.StartID(ctx, id, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	child := inst.ID() + "/KYC/1"
	if err := first.Report(ctx, inst.ID(), 1, registry.Outcome{Trigger: "signed", Result: map[string]any{"customer": "c-9"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := sim.RunReady(ctx); err != nil {
		t.Fatal(err)
	}
	sim.Advance(10 * time.Minute)
	_ = first.Close() // the process dies while the child's checker works

	second := build(t, store, sim)
	rep, err := second.Resume(ctx)
	if err != nil || len(rep.Failed) > 0 || !slices.Contains(rep.Resumed, inst.ID()) || !slices.Contains(rep.Resumed, child) {
		t.Fatalf("Resume: got %+v, %v; want the parent and its child resumed", rep, err)
	}
	// The checker's report reaches the child through the parent's engine.
	if err := second.Report(ctx, child, 1, registry.Outcome{Trigger: "ok", Result: map[string]any{"level": "low"}}, nil); err != nil {
		t.Fatalf("report to the child: %v", err)
	}
	if err := sim.RunReady(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := second.Instance(inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	if res := again.Result(); res.State != "WELCOME" || res.Context["level"] != "low" {
		t.Fatalf("got state %s, context %v; want WELCOME with the child's result", res.State, res.Context)
	}
}

func TestEngine_Child_NestingDeeperThanEightFails(t *testing.T) {
	dir := t.TempDir()
	const levels = 10
	for k := range levels {
		src := fmt.Sprintf("workflow: w%d\ninitial: CALL\nstates:\n  CALL: {workflow: w%d}\n  DONE: {terminal: true}\n  FAILED: {terminal: true}\n"+
			"rules:\n  - {id: done, from: CALL, trigger: DONE, next: DONE}\n  - {id: failed, from: CALL, trigger: [FAILED, error], next: FAILED}\n", k, k+1)
		if k == levels-1 {
			src = fmt.Sprintf("workflow: w%d\ninitial: WORK\nagents: {worker: {}}\nstates:\n  WORK: {agent: worker}\n  DONE: {terminal: true}\n  FAILED: {terminal: true}\n"+
				"rules:\n  - {id: done, from: worker, trigger: done, next: DONE}\n  - {id: failed, from: worker, trigger: error, next: FAILED}\n", k)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("w%d.yaml", k)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := rules.LoadSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := set.Workflow("w0")
	sim := clock.NewSim(epoch)
	eng, err := newEngine(root, nil, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("n")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	inst, err := eng.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, inst.Result(), "FAILED")
	deepest := "n-1" + strings.Repeat("/CALL/1", 8)
	h, err := eng.Instance(deepest)
	if err != nil {
		t.Fatalf("the eighth child: %v", err)
	}
	if res := h.Result(); res.Status != record.StatusFailed || !strings.Contains(errText(res.Err), "deeper than 8 levels") {
		t.Errorf("the eighth child: got %s (%v), want failed for nesting deeper than 8", res.Status, res.Err)
	}
}

// parentRefusingStore refuses the commits of instance parent while refuse
// is set; every other instance's commits go through.
type parentRefusingStore struct {
	*record.MemStore
	parent string
	refuse atomic.Bool
}

func (s *parentRefusingStore) Commit(ctx context.Context, rec record.Step) error {
	if rec.Snapshot.ID == s.parent && s.refuse.Load() {
		return errors.New("disk full")
	}
	return s.MemStore.Commit(ctx, rec)
}

// A parent whose step that started a child is refused by the store stops
// and resumes from its last committed step; the child it started runs on
// (it is not cancelled: the step that would stop waiting for it was never
// written), and the resumed parent takes its end.
func TestEngine_Child_ARefusedParentStepLeavesTheChildRunning(t *testing.T) {
	w := loadChildSet(t)
	store := &parentRefusingStore{MemStore: record.NewMemStore(), parent: "p-1"}
	childStarted := make(chan struct{})
	release := make(chan struct{})
	var (
		once    sync.Once
		signups atomic.Int64
	)
	reg := registry.New()
	add := func(a *rules.Agent, h registry.HandlerFunc) {
		if err := reg.Add(engine.AgentOf(a, h)); err != nil {
			t.Fatal(err)
		}
	}
	kyc := mustState(t, w, "KYC").Child.Target
	for _, a := range w.Agents {
		switch a.ID {
		case "signup":
			add(a, func(context.Context, *registry.Task) (registry.Outcome, error) {
				if signups.Add(1) == 1 {
					store.refuse.Store(true) // the step the first run ends is refused
				}
				return registry.Outcome{Trigger: "signed", Result: map[string]any{"customer": "c-7"}}, nil
			})
		case "welcomer":
			add(a, func(context.Context, *registry.Task) (registry.Outcome, error) {
				return registry.Outcome{Trigger: "welcomed"}, nil
			})
		}
	}
	for _, a := range kyc.Agents {
		add(a, func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			once.Do(func() { close(childStarted) })
			select {
			case <-release:
			case <-ctx.Done():
				return registry.Outcome{}, ctx.Err()
			}
			return registry.Outcome{Trigger: "ok", Result: map[string]any{"level": "high"}}, nil
		})
	}
	eng, err := newEngine(w, reg, engine.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.StartID(t.Context(), "p-1", nil); err != nil {
		t.Fatal(err)
	}
	<-childStarted
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The parent's step is refused (every try) while its child runs.
	for {
		snap, err := store.MemStore.Instance(ctx, "p-1/KYC/1")
		if err == nil && snap.Status == record.StatusCanceled {
			t.Fatalf("the child was cancelled: %q", snap.CancelReason)
		}
		if _, err := eng.Instance("p-1"); err != nil || ctx.Err() != nil {
			break // the parent stopped
		}
		time.Sleep(5 * time.Millisecond)
	}
	store.refuse.Store(false)
	if _, err := eng.Resume(ctx); err != nil { // as a restarted engine does
		t.Fatal(err)
	}
	close(release)
	for {
		if ctx.Err() != nil {
			t.Fatal("the parent did not finish within a minute")
		}
		snap, err := store.MemStore.Instance(ctx, "p-1")
		if err == nil && snap.Status.Finished() {
			if snap.Status != record.StatusCompleted || snap.Outcome != "DONE" {
				t.Fatalf("parent ended %s %s (%s), want completed DONE", snap.Status, snap.Outcome, snap.Error)
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	child, err := store.MemStore.Instance(ctx, "p-1/KYC/1")
	if err != nil || child.Status != record.StatusCompleted {
		t.Errorf("child: %+v, %v: want completed", child.Status, err)
	}
}
