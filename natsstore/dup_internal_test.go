package natsstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/record"
)

// TestCommit_ResendWrittenOverIsRefused: on a replicated stream, a commit
// sent again under the message id of a first send that was written (its
// answer lost) is answered as a duplicate before the server checks the
// expected revision, even after another store took the partition over and
// wrote the instance since. The store must not take that answer for its
// commit: its engine would go on from a step the others have left, and
// answer the reports of the later steps as for steps the instance has not
// reached, dropping their outcomes. It is refused as a conflict; a resend
// whose first write is still the last message stays a success.
func TestCommit_ResendWrittenOverIsRefused(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := context.Background()
	open := func(k int, name string) *Store {
		s, err := Open(ctx, c.Connect(t, k, name), Config{Prefix: "dup", Replicas: 3, Partitions: 1, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, b := open(0, "a"), open(1, "b")
	const id = "i"
	rec := func(n int) record.Step {
		return record.Step{Snapshot: record.Snapshot{ID: id, Workflow: "w", Version: 1, Status: record.StatusRunning, State: "S", Step: n, Commits: n}}
	}
	p, shard := a.Partition(id), a.shardOf(id)
	if err := a.Fence(ctx, p, 1); err != nil {
		t.Fatalf("a fences: %v", err)
	}
	if err := a.Commit(ctx, rec(1)); err != nil {
		t.Fatalf("a commits step 1: %v", err)
	}
	data, err := encodeStep(rec(2).Snapshot, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.parts[p].mu.Lock()
	marker := a.parts[p].markers[shard]
	a.parts[p].mu.Unlock()
	send := func() (uint64, error) {
		return a.publishLeased(ctx, "step-2", id, data, shard, a.markerSubject(shard, p), marker)
	}
	first, err := send()
	if err != nil {
		t.Fatalf("a writes step 2: %v", err)
	}
	if again, err := send(); err != nil || again != first {
		t.Fatalf("step 2 sent again while it is the last message: got revision %d, %v; want %d, nil", again, err, first)
	}

	// b takes the partition over and moves the instance on.
	if err := b.Fence(ctx, p, 2); err != nil {
		t.Fatalf("b fences: %v", err)
	}
	if err := b.Commit(ctx, rec(3)); err != nil {
		t.Fatalf("b commits step 3: %v", err)
	}

	_, err = send()
	var ce *ConflictError
	if !errors.Is(err, ErrFenced) || !errors.As(err, &ce) || !errors.Is(err, errWrittenOver) {
		t.Fatalf("step 2 sent again after b wrote step 3: got %v, want a *ConflictError (written over)", err)
	}
	snap, err := b.Instance(ctx, id)
	if err != nil || snap.Step != 3 {
		t.Fatalf("got %+v, %v, want step 3 kept", snap, err)
	}
}
