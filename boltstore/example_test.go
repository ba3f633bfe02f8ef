package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/record"
)

// Steps committed before Close are there when the file is opened again.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "baton")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "baton.db")
	ctx := context.Background()
	now := time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)

	store, err := boltstore.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = store.Commit(ctx, record.Step{
		Snapshot: record.Snapshot{ID: "order-1", Workflow: "refund", Status: record.StatusRunning, State: "REVIEWING", Step: 1},
		Entries: []record.Entry{
			{Seq: 1, Time: now, Kind: record.KindStarted, To: "VALIDATING"},
			{Seq: 2, Time: now, Kind: record.KindTransition, From: "VALIDATING", To: "REVIEWING"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = store.Close()

	store, err = boltstore.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	snap, _ := store.Instance(ctx, "order-1")
	history, _ := store.History(ctx, "order-1")
	fmt.Println(snap.ID, snap.State, snap.Status)
	for _, e := range history {
		fmt.Printf("%d %s %s\n", e.Seq, e.Kind, e.To)
	}
	// Output:
	// order-1 REVIEWING running
	// 1 started VALIDATING
	// 2 transition REVIEWING
}
