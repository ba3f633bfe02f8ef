package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// Two engines share one server: the one that resumed the instance last may
// commit its next step, the other is fenced off.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "baton")
	defer os.RemoveAll(dir)
	srv, err := natsserver.Start(natsserver.Config{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	var stores []*natsstore.Store
	for range 2 {
		nc, err := srv.Connect()
		if err != nil {
			fmt.Println(err)
			return
		}
		defer nc.Close() // after the store: the store does not own its connection
		s, err := natsstore.Open(ctx, nc, natsstore.Config{})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer s.Close()
		stores = append(stores, s)
	}
	first, second := stores[0], stores[1]

	now := time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)
	step := func(n int) record.Step {
		return record.Step{
			Snapshot: record.Snapshot{ID: "order-1", Workflow: "refund", Status: record.StatusRunning, State: "REVIEWING", Step: n},
			Entries:  []record.Entry{{Seq: n, Time: now, Kind: record.KindTransition, Step: n, To: "REVIEWING"}},
		}
	}
	fmt.Println("first commits step 1:", first.Commit(ctx, step(1)))
	snap, _ := second.Instance(ctx, "order-1") // the second engine resumes the instance
	fmt.Println("second read step", snap.Step)
	fmt.Println("second commits step 2:", second.Commit(ctx, step(2)))
	err = first.Commit(ctx, step(2))
	fmt.Println("first commits step 2: fenced:", errors.Is(err, natsstore.ErrFenced))
	history, _ := second.History(ctx, "order-1")
	fmt.Println("history entries:", len(history))
	// Output:
	// first commits step 1: <nil>
	// second read step 1
	// second commits step 2: <nil>
	// first commits step 2: fenced: true
	// history entries: 2
}
