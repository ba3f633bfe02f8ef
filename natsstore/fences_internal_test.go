package natsstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/record"
)

// TestFences_FinishedInstancesBounded: a store keeps a fence per instance
// it commits or reads, but only the newest maxRetired of the instances
// finished with nothing left in their outbox, so that its memory does not
// grow with the instances that finished; running ones all keep theirs.
func TestFences_FinishedInstancesBounded(t *testing.T) {
	defer func(n int) { maxRetired = n }(maxRetired)
	maxRetired = 50
	srv, err := natsserver.Start(natsserver.Config{Dir: t.TempDir(), SyncInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx := context.Background()
	s, err := Open(ctx, nc, Config{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	commit := func(id string, status record.Status, outbox bool) {
		t.Helper()
		rec := record.Step{Snapshot: record.Snapshot{ID: id, Workflow: "w", Status: status, Step: 1, Commits: 1}}
		if outbox {
			rec.Outbox = []record.Outgoing{{Key: id + ":1", Step: 1}}
		}
		if err := s.Commit(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	fences := func() int {
		n := 0
		s.fences.Range(func(any, any) bool { n++; return true })
		return n
	}
	for k := range 10 {
		commit(fmt.Sprintf("running-%d", k), record.StatusRunning, false)
		commit(fmt.Sprintf("notice-%d", k), record.StatusCompleted, true) // a final notice not yet taken
	}
	for k := range 200 {
		commit(fmt.Sprintf("done-%d", k), record.StatusCompleted, false)
	}
	if got, want := fences(), 20+maxRetired; got != want {
		t.Fatalf("after the commits: got %d fences, want %d", got, want)
	}
	if _, err := s.Instances(ctx); err != nil {
		t.Fatal(err)
	}
	for k := range 200 {
		if _, err := s.Instance(ctx, fmt.Sprintf("done-%d", k)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fences(), 20+maxRetired; got != want {
		t.Fatalf("after reading every instance: got %d fences, want %d", got, want)
	}
	// A finished instance whose fence was dropped is read again, then
	// committed to.
	if _, err := s.Instance(ctx, "done-0"); err != nil {
		t.Fatal(err)
	}
	rec := record.Step{Snapshot: record.Snapshot{ID: "done-0", Workflow: "w", Status: record.StatusCompleted, Step: 2, Commits: 2}}
	if err := s.Commit(ctx, rec); err != nil {
		t.Fatalf("a commit after a read: %v", err)
	}
}
