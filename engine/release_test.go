package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// ownedStore refuses the commits of the instances another engine took
// over, as a store shared by several engines does.
type ownedStore struct {
	record.Store
	mu   sync.Mutex
	lost map[string]bool
}

func (s *ownedStore) lose(id string, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[id] = lost
}

func (s *ownedStore) Commit(ctx context.Context, rec record.Step) error {
	s.mu.Lock()
	lost := s.lost[rec.Snapshot.ID]
	s.mu.Unlock()
	if lost {
		return fmt.Errorf("test store: %w", engine.ErrNotOwner)
	}
	return s.Store.Commit(ctx, rec)
}

func TestEngine_Commit_NotOwnerReleasesTheInstanceQuietly(t *testing.T) {
	store := &ownedStore{Store: record.NewMemStore(), lost: map[string]bool{}}
	r := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	ctx := t.Context()
	inst := r.start(nil)
	id := inst.ID()
	store.lose(id, true)

	// The report's step is not committed: the agent is told so (as for an
	// unknown instance), to give its work back and report again to the
	// owner, instead of dropping an outcome nobody kept.
	err := r.eng.Report(ctx, id, 1, registry.Outcome{Trigger: "next", Result: map[string]any{"n": 1}}, nil)
	if !errors.Is(err, engine.ErrUnknownInstance) || !errors.Is(err, engine.ErrNotOwner) {
		t.Fatalf("Report whose step another engine's fence refused: got %v, want an error matching ErrUnknownInstance and ErrNotOwner", err)
	}
	r.settle()
	if _, err := inst.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if res := inst.Result(); !errors.Is(res.Err, engine.ErrNotOwner) {
		t.Fatalf("got result error %v, want one matching ErrNotOwner", res.Err)
	}
	for _, ev := range r.events {
		if ev.Type == engine.EventFailed {
			t.Fatalf("got a failed event %+v: an instance another engine owns has not failed", ev)
		}
	}
	snap, err := store.Instance(ctx, id)
	if err != nil || snap.Step != 1 || snap.Status != record.StatusRunning {
		t.Fatalf("got %+v, %v, want the instance kept running at step 1", snap, err)
	}
	ans := r.eng.HandleReport(ctx, &wire.Report{InstanceID: id, Step: 1, Agent: "alpha", Trigger: "next"})
	if ans.OK || ans.Code != wire.CodeUnknownInstance {
		t.Fatalf("got %+v for a report to the released instance, want unknown_instance", ans)
	}
	err = r.eng.Report(ctx, id, 1, registry.Outcome{Trigger: "next"}, nil)
	if !errors.Is(err, engine.ErrUnknownInstance) {
		t.Fatalf("got %v for a report to the released instance, want ErrUnknownInstance", err)
	}

	// The owner resumes it where it was and carries it on.
	store.lose(id, false)
	owner := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	rep, err := owner.eng.ResumeWhere(ctx, func(got string) bool { return got == id })
	if err != nil || len(rep.Resumed) != 1 || rep.Resumed[0] != id {
		t.Fatalf("got %+v, %v, want %s resumed", rep, err, id)
	}
	if err := owner.eng.Report(ctx, id, 1, registry.Outcome{Trigger: "next", Result: map[string]any{"n": 1}}, nil); err != nil {
		t.Fatalf("Report to the owner: %v", err)
	}
	if snap, _ := store.Instance(ctx, id); snap.Step != 2 || snap.State != "SECOND" {
		t.Fatalf("got step %d in %s, want step 2 in SECOND", snap.Step, snap.State)
	}
}

func TestEngine_Release_DropsOnlyTheMatchingInstances(t *testing.T) {
	r := newSimRun(t, "chain.yaml", nil)
	ctx := t.Context()
	a, b := r.start(nil), r.start(nil)
	got := r.eng.Release(func(id string) bool { return id == a.ID() })
	if len(got) != 1 || got[0] != a.ID() {
		t.Fatalf("got %v released, want [%s]", got, a.ID())
	}
	if _, err := a.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if !errors.Is(a.Result().Err, engine.ErrNotOwner) {
		t.Fatalf("got %v, want an error matching ErrNotOwner", a.Result().Err)
	}
	if err := r.eng.Report(ctx, a.ID(), 1, registry.Outcome{Trigger: "next"}, nil); !errors.Is(err, engine.ErrUnknownInstance) {
		t.Fatalf("got %v, want ErrUnknownInstance for a released instance", err)
	}
	if err := r.eng.Report(ctx, b.ID(), 1, registry.Outcome{Trigger: "next", Result: map[string]any{"n": 2}}, nil); err != nil {
		t.Fatalf("Report to the kept instance: %v", err)
	}
	if res := b.Result(); res.State != "SECOND" {
		t.Fatalf("got %s, want the kept instance in SECOND", res.State)
	}
	if got := r.eng.Release(func(string) bool { return false }); len(got) != 0 {
		t.Fatalf("got %v, want nothing released", got)
	}
}

// brokenStore refuses every commit once broken is set.
type brokenStore struct {
	record.Store
	mu     sync.Mutex
	broken bool
}

func (s *brokenStore) Commit(ctx context.Context, rec record.Step) error {
	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	if broken {
		return errors.New("test store: down")
	}
	return s.Store.Commit(ctx, rec)
}

func TestEngine_LateReply_ToAFinishedInstanceTheStoreRefuses(t *testing.T) {
	store := &brokenStore{Store: record.NewMemStore()}
	r := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	ctx := t.Context()
	inst := r.start(nil)
	id := inst.ID()
	for step, trig := range []string{"next", "next", "next"} {
		if err := r.eng.Report(ctx, id, step+1, registry.Outcome{Trigger: trig, Result: map[string]any{"n": 1}}, nil); err != nil {
			t.Fatalf("Report step %d: %v", step+1, err)
		}
	}
	if res := inst.Result(); res.Outcome != "DONE" {
		t.Fatalf("got %+v, want DONE", res)
	}
	// watch takes its final notice: the instance leaves the engine.
	ans := r.eng.HandleReport(ctx, &wire.Report{InstanceID: id, Step: 4, Agent: "watch", Trigger: "noticed"})
	if !ans.OK {
		t.Fatalf("notice: got %+v", ans)
	}
	store.mu.Lock()
	store.broken = true
	store.mu.Unlock()
	// A late reply is recorded on the instance restored from the store;
	// the store refusing it must not break the engine.
	err := r.eng.Report(ctx, id, 1, registry.Outcome{Trigger: "next"}, nil)
	if !errors.Is(err, engine.ErrStaleReport) {
		t.Fatalf("got %v, want ErrStaleReport", err)
	}
}

// A final notice whose settling another engine's fence refused is not
// acked: the agent hears unknown_instance and gives it back, and the
// owner, which resumed the instance with the notice outstanding, settles
// it when the notice comes again.
func TestEngine_Notice_NotSettledIsGivenBackToTheOwner(t *testing.T) {
	store := &ownedStore{Store: record.NewMemStore(), lost: map[string]bool{}}
	r := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	ctx := t.Context()
	inst := r.start(nil)
	id := inst.ID()
	for step := 1; step <= 3; step++ {
		if err := r.eng.Report(ctx, id, step, registry.Outcome{Trigger: "next", Result: map[string]any{"n": 1}}, nil); err != nil {
			t.Fatalf("Report step %d: %v", step, err)
		}
	}
	if res := inst.Result(); res.Outcome != "DONE" {
		t.Fatalf("got %+v, want DONE", res)
	}
	store.lose(id, true)
	notice := &wire.Report{InstanceID: id, Step: 4, Agent: "watch", Trigger: "noticed"}
	if ans := r.eng.HandleReport(ctx, notice); ans.OK || ans.Code != wire.CodeUnknownInstance {
		t.Fatalf("notice whose settling was refused: got %+v, want unknown_instance", ans)
	}

	store.lose(id, false)
	owner := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	rep, err := owner.eng.ResumeWhere(ctx, func(got string) bool { return got == id })
	if err != nil || len(rep.Resumed) != 1 {
		t.Fatalf("got %+v, %v, want %s resumed", rep, err, id)
	}
	if ans := owner.eng.HandleReport(ctx, notice); !ans.OK {
		t.Fatalf("notice to the owner: got %+v, want ok", ans)
	}
	if out, err := store.Outbox(ctx, id); err != nil || len(out) != 0 {
		t.Fatalf("got outbox %+v, %v, want the notice settled", out, err)
	}
}

// A final notice reported to an engine that has not resumed its finished
// instance (its partition just taken over) is taken and settled, not
// answered stale: answered stale, the agent would ack it and its outbox
// item would stay unsettled for good.
func TestEngine_Notice_ToAnEngineThatHasNotResumedTheInstance(t *testing.T) {
	store := record.NewMemStore()
	r := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	ctx := t.Context()
	inst := r.start(nil)
	id := inst.ID()
	for step := 1; step <= 3; step++ {
		if err := r.eng.Report(ctx, id, step, registry.Outcome{Trigger: "next", Result: map[string]any{"n": 1}}, nil); err != nil {
			t.Fatalf("Report step %d: %v", step, err)
		}
	}
	if out, err := store.Outbox(ctx, id); err != nil || len(out) != 1 {
		t.Fatalf("got outbox %+v, %v, want the final notice outstanding", out, err)
	}
	other := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	notice := &wire.Report{InstanceID: id, Step: 4, Agent: "watch", Trigger: "noticed"}
	if ans := other.eng.HandleReport(ctx, notice); !ans.OK {
		t.Fatalf("notice to an engine that has not resumed the instance: got %+v, want ok", ans)
	}
	if out, err := store.Outbox(ctx, id); err != nil || len(out) != 0 {
		t.Fatalf("got outbox %+v, %v, want the notice settled", out, err)
	}
	if ans := other.eng.HandleReport(ctx, notice); ans.Code != wire.CodeStale {
		t.Fatalf("the same notice again: got %+v, want stale", ans)
	}
}

// laggingStore lists instances as they were at their first step, as a
// replica that lags does.
type laggingStore struct {
	record.Store
	first map[string]record.Snapshot
}

func (s *laggingStore) Instances(ctx context.Context) ([]record.Snapshot, error) {
	out := make([]record.Snapshot, 0, len(s.first))
	for _, snap := range s.first {
		out = append(out, snap)
	}
	return out, nil
}

func TestEngine_ResumeWhere_ReadsEachInstanceAgain(t *testing.T) {
	mem := record.NewMemStore()
	r := newSimRun(t, "chain.yaml", nil, engine.WithStore(mem))
	ctx := t.Context()
	inst := r.start(nil)
	id := inst.ID()
	first, err := mem.Instance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Report(ctx, id, 1, registry.Outcome{Trigger: "next", Result: map[string]any{"n": 1}}, nil); err != nil {
		t.Fatal(err)
	}
	r.eng.Release(nil)

	owner := newSimRun(t, "chain.yaml", nil, engine.WithStore(&laggingStore{Store: mem, first: map[string]record.Snapshot{id: first}}))
	rep, err := owner.eng.ResumeWhere(ctx, func(string) bool { return true })
	if err != nil || len(rep.Resumed) != 1 {
		t.Fatalf("got %+v, %v, want %s resumed", rep, err, id)
	}
	got, err := owner.eng.Instance(id)
	if err != nil {
		t.Fatal(err)
	}
	if res := got.Result(); res.State != "SECOND" || res.Steps != 2 {
		t.Fatalf("got %s after %d steps, want SECOND after 2: the instance as its last step left it", res.State, res.Steps)
	}
}

func TestEngine_ResumeListed_ResumesWhatTheListHolds(t *testing.T) {
	store := record.NewMemStore()
	first := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	ctx := t.Context()
	a, b := first.start(nil), first.start(nil)
	first.eng.Release(func(string) bool { return true }) // as if its engine had stopped
	snaps, err := store.Instances(ctx)
	if err != nil || len(snaps) != 2 {
		t.Fatalf("got %d instances, %v; want 2", len(snaps), err)
	}
	// b is left out of the list: only a is resumed, from the one read.
	var listed []record.Snapshot
	for _, s := range snaps {
		if s.ID == a.ID() {
			listed = append(listed, s)
		}
	}
	next := newSimRun(t, "chain.yaml", nil, engine.WithStore(store))
	rep, err := next.eng.ResumeListed(ctx, listed, func(string) bool { return true })
	if err != nil || len(rep.Resumed) != 1 || rep.Resumed[0] != a.ID() {
		t.Fatalf("got %+v, %v; want %s alone resumed", rep, err, a.ID())
	}
	if _, err := next.eng.Instance(b.ID()); !errors.Is(err, engine.ErrUnknownInstance) {
		t.Fatalf("the instance missing from the list: got %v, want it not resumed", err)
	}
	if _, err := next.eng.ResumeListed(nil, snaps, nil); err == nil {
		t.Fatal("ResumeListed with a nil context: got no error")
	}
}
