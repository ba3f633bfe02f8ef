package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/stretchr/testify/require"
)

// testConcurrentCommits commits to many instances at once, each instance's
// steps in order as the engine does under the instance's lock.
func testConcurrentCommits(t *testing.T, s record.Store) {
	const (
		workers = 16
		perWork = 4
		steps   = 25
	)
	ctx := context.Background()
	want := make([][]record.Entry, workers*perWork)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			seqs := make([]int, perWork)
			for step := 1; step <= steps; step++ {
				for k := range perWork {
					n := w*perWork + k
					entries := stepEntries(&seqs[k], step, 1+step%3)
					want[n] = append(want[n], entries...)
					rec := record.Step{Snapshot: fullSnapshot(fmt.Sprintf("i-%03d", n), step), Entries: entries}
					if err := s.Commit(ctx, rec); err != nil {
						errs <- fmt.Errorf("instance %d step %d: %w", n, step, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all := instances(t, s)
	require.Len(t, all, workers*perWork)
	for n := range want {
		id := fmt.Sprintf("i-%03d", n)
		require.Equal(t, id, all[n].ID)
		requireSnapshot(t, all[n], fullSnapshot(id, steps))
		requireHistory(t, history(t, s, id), want[n])
	}
}

// testReadersSeeWholeSteps reads while steps are committed: a reader sees
// either all of a step's entries or none of them, in order.
func testReadersSeeWholeSteps(t *testing.T, s record.Store) {
	const (
		writers = 4
		steps   = 60
		perStep = 3
	)
	ctx := context.Background()
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers+2)
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("w-%d", w)
			seq := 0
			for step := 1; step <= steps; step++ {
				if err := s.Commit(ctx, record.Step{Snapshot: fullSnapshot(id, step), Entries: stepEntries(&seq, step, perStep)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for r := range writers + 2 {
		readers.Go(func() {
			for !done.Load() {
				if err := readOnce(ctx, s, fmt.Sprintf("w-%d", r%writers), perStep); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for w := range writers {
		require.Len(t, history(t, s, fmt.Sprintf("w-%d", w)), steps*perStep)
	}
}

func readOnce(ctx context.Context, s record.Store, id string, perStep int) error {
	h, err := s.History(ctx, id)
	if errorsIsUnknown(err) {
		return nil // not committed yet
	}
	if err != nil {
		return err
	}
	if len(h)%perStep != 0 {
		return fmt.Errorf("history of %s: got %d entries, want a multiple of %d (a step seen in part)", id, len(h), perStep)
	}
	for i, e := range h {
		if e.Seq != i+1 || e.Step != i/perStep+1 {
			return fmt.Errorf("history of %s entry %d: got seq %d step %d, want seq %d step %d", id, i, e.Seq, e.Step, i+1, i/perStep+1)
		}
	}
	snap, err := s.Instance(ctx, id)
	if err != nil {
		return err
	}
	if snap.Step < len(h)/perStep {
		return fmt.Errorf("instance %s: got step %d after a history of %d steps", id, snap.Step, len(h)/perStep)
	}
	all, err := s.Instances(ctx)
	if err != nil {
		return err
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID >= all[i].ID {
			return fmt.Errorf("instances: %q listed before %q", all[i-1].ID, all[i].ID)
		}
	}
	return nil
}

func testLargeHistory(t *testing.T, s record.Store) {
	const steps = 2000
	var want []record.Entry
	seq := 0
	for step := 1; step <= steps; step++ {
		entries := stepEntries(&seq, step, 5)
		commit(t, s, fullSnapshot("long", step), entries...)
		want = append(want, entries...)
	}
	wide := stepEntries(&seq, steps+1, 5000)
	commit(t, s, fullSnapshot("long", steps+1), wide...)
	want = append(want, wide...)
	requireHistory(t, history(t, s, "long"), want)
	requireSnapshot(t, instance(t, s, "long"), fullSnapshot("long", steps+1))
}

func testLargeValues(t *testing.T, s record.Store) {
	en := fullEntry(1, 1)
	en.Detail = bigString(1 << 20)
	wide := make(map[string]any, 2000)
	for i := range 2000 {
		wide[fmt.Sprintf("key-%04d", i)] = map[string]any{"i": i, "s": bigString(64)}
	}
	en.Result = wide
	snap := fullSnapshot("big", 1)
	snap.Context = map[string]any{"blob": bigString(1 << 20), "wide": wide}
	commit(t, s, snap, en)
	requireHistory(t, history(t, s, "big"), []record.Entry{en})
	requireSnapshot(t, instance(t, s, "big"), snap)
}
