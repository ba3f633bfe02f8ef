package record_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/batonhq/baton/record"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// runInstance commits an instance the way the engine does: started with a
// dispatch in its outbox, a step with a hand-off, then finished with its
// outbox settled.
func runInstance(ctx context.Context, s record.Store, id string, at time.Time) error {
	snap := record.Snapshot{ID: id, Workflow: "refund", Version: 1, Status: record.StatusRunning, State: "VALIDATING",
		Step: 1, Input: map[string]any{"order_id": id, "amount": 50}, Context: map[string]any{}, Visits: map[string]int{"VALIDATING": 1},
		Created: at, Updated: at}
	out := record.Outgoing{Key: id + ":1", Kind: record.OutgoingDispatch, Step: 1, State: "VALIDATING", To: "customer", Created: at}
	if err := s.Commit(ctx, record.Step{Snapshot: snap, Entries: []record.Entry{
		{Seq: 1, Time: at, Kind: record.KindStarted, Result: snap.Input},
		{Seq: 2, Time: at, Kind: record.KindDispatch, Step: 1, State: "VALIDATING", To: "customer"},
	}, Outbox: []record.Outgoing{out}}); err != nil {
		return err
	}
	snap.Step, snap.State, snap.Visits = 2, "REVIEWING", map[string]int{"VALIDATING": 1, "REVIEWING": 1}
	out2 := record.Outgoing{Key: id + ":2", Kind: record.OutgoingHandoff, Step: 2, State: "REVIEWING", To: "seller", Created: at}
	if err := s.Commit(ctx, record.Step{Snapshot: snap, Entries: []record.Entry{
		{Seq: 3, Time: at, Kind: record.KindAgentRun, Step: 1, State: "VALIDATING", Agent: "customer", Result: map[string]any{"ok": true}},
		{Seq: 4, Time: at, Kind: record.KindRuleFired, Rule: "eligible", Priority: 2},
		{Seq: 5, Time: at, Kind: record.KindTransition, From: "VALIDATING", Next: "REVIEWING"},
		{Seq: 6, Time: at, Kind: record.KindHandoff, Step: 2, From: "customer", To: "seller"},
	}, Outbox: []record.Outgoing{out2}, Settled: []string{out.Key}}); err != nil {
		return err
	}
	snap.Status, snap.State, snap.Outcome = record.StatusCompleted, "COMPLETED", "COMPLETED"
	return s.Commit(ctx, record.Step{Snapshot: snap, Entries: []record.Entry{
		{Seq: 7, Time: at, Kind: record.KindAgentRun, Step: 2, State: "REVIEWING", Agent: "seller"},
		{Seq: 8, Time: at, Kind: record.KindCompleted, State: "COMPLETED"},
	}, Settled: []string{out2.Key}})
}

// TestMemStore_KeepsNewestFinished keeps the newest finished instances up
// to its retention, every running one, and drops the others with their
// history and outbox.
func TestMemStore_KeepsNewestFinished(t *testing.T) {
	ctx := context.Background()
	s := record.NewMemStore(record.WithRetention(3))
	running := record.Snapshot{ID: "r", Status: record.StatusRunning, Updated: t0}
	if err := s.Commit(ctx, record.Step{Snapshot: running, Outbox: []record.Outgoing{{Key: "r:1", Step: 1}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := runInstance(ctx, s, fmt.Sprintf("i%d", i), t0); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, snap := range all {
		ids = append(ids, snap.ID)
	}
	if got, want := fmt.Sprint(ids), "[i2 i3 i4 r]"; got != want {
		t.Errorf("got instances %s, want %s", got, want)
	}
	for _, id := range []string{"i0", "i1"} {
		if _, err := s.History(ctx, id); !errors.Is(err, record.ErrUnknownInstance) {
			t.Errorf("history of dropped %s: got %v, want ErrUnknownInstance", id, err)
		}
		if _, err := s.Outbox(ctx, id); !errors.Is(err, record.ErrUnknownInstance) {
			t.Errorf("outbox of dropped %s: got %v, want ErrUnknownInstance", id, err)
		}
	}
	if h, err := s.History(ctx, "i4"); err != nil || len(h) != 8 {
		t.Errorf("history of i4: got %d entries, %v, want 8", len(h), err)
	}
	if o, err := s.Outbox(ctx, "r"); err != nil || len(o) != 1 {
		t.Errorf("outbox of the running instance: got %v, %v, want its item", o, err)
	}
}

// TestMemStore_PruneAfterRetention prunes instances the retention still
// keeps, and the retention then keeps counting right.
func TestMemStore_PruneAfterRetention(t *testing.T) {
	ctx := context.Background()
	s := record.NewMemStore(record.WithRetention(2))
	for i := range 3 {
		if err := runInstance(ctx, s, fmt.Sprintf("i%d", i), t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Prune(ctx, t0.Add(2*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("got %d, %v, want 1 pruned (i1)", n, err)
	}
	for i := 3; i < 5; i++ {
		if err := runInstance(ctx, s, fmt.Sprintf("i%d", i), t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := s.Instances(ctx)
	if len(all) != 2 || all[0].ID != "i3" || all[1].ID != "i4" {
		t.Errorf("got %v, want i3 and i4", all)
	}
}

// TestMemStore_DefaultRetentionBoundsHeap commits 200 000 instances one
// after another on a store with the default retention and measures the
// heap left: without retention every history stays, several hundred MB.
func TestMemStore_DefaultRetentionBoundsHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("commits 200 000 instances")
	}
	const n = 200_000
	ctx := context.Background()
	s := record.NewMemStore()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		if err := runInstance(ctx, s, fmt.Sprintf("inst-%06d", i), t0); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	all, _ := s.Instances(ctx)
	t.Logf("heap after %d instances: %.1f MB, %d instances kept", n, float64(heap)/(1<<20), len(all))
	if len(all) != record.MemRetention {
		t.Errorf("got %d instances kept, want %d", len(all), record.MemRetention)
	}
	if heap > 100<<20 {
		t.Errorf("got %d MB of heap, want at most 100 MB", heap>>20)
	}
	runtime.KeepAlive(s)
}
