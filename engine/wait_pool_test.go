package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// TestEngine_Wait_OnTheWorkerPool runs wait states on the engine's own
// worker pool and the real clock, inside a synctest bubble: many
// instances wait at once; signals sent concurrently and the timeouts of
// those left alone each end their instance once.
func TestEngine_Wait_OnTheWorkerPool(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		drafted := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "drafted", Result: map[string]any{"text": "t"}}, nil
		})
		published := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "published"}, nil
		})
		eng := poolEngine(t, "wait.yaml", map[string]registry.Handler{"writer": drafted, "publisher": published})
		defer eng.Close()
		const n = 40
		insts := make([]*engine.Instance, n)
		for k := range insts {
			inst, err := eng.Start(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			insts[k] = inst
		}
		synctest.Wait() // every writer has run: every instance waits
		for _, inst := range insts {
			if got := inst.Result().Waiting; got != "APPROVAL" {
				t.Fatalf("got waiting %q, want APPROVAL", got)
			}
		}
		var wg sync.WaitGroup
		for k, inst := range insts[:n/2] {
			wg.Go(func() {
				name := "approved"
				if k%2 == 1 {
					name = "rejected"
				}
				if err := inst.Signal(ctx, name, map[string]any{"by": "ana"}); err != nil {
					t.Errorf("signal %d: %v", k, err)
				}
			})
		}
		wg.Wait()
		time.Sleep(49 * time.Hour) // the others time out
		synctest.Wait()
		for k, inst := range insts {
			res, err := inst.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := "EXPIRED"
			switch {
			case k < n/2 && k%2 == 0:
				want = "DONE"
			case k < n/2:
				want = "REJECTED"
			}
			wantCompleted(t, res, want)
			if h := history(t, inst); len(entries(h, record.KindCompleted)) != 1 {
				t.Errorf("instance %d: got %s, want one completion", k, kinds(h))
			}
		}
	})
}
