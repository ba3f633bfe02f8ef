package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// clockedRefusals is a store that refuses every commit once told to, and
// records when it refused each one (on the bubble's clock).
type clockedRefusals struct {
	*record.MemStore
	mu    sync.Mutex
	fail  bool
	times []time.Time
}

func (s *clockedRefusals) Commit(ctx context.Context, rec record.Step) error {
	s.mu.Lock()
	if s.fail {
		s.times = append(s.times, time.Now())
		s.mu.Unlock()
		return errors.New("disk full")
	}
	s.mu.Unlock()
	return s.MemStore.Commit(ctx, rec)
}

func (s *clockedRefusals) refuse(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = on
}

// pauses returns the pauses between the tries the store refused: the
// commits refused at one instant (a step's attempts) are one try.
func (s *clockedRefusals) pauses() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for k := 1; k < len(s.times); k++ {
		if d := s.times[k].Sub(s.times[k-1]); d > 0 {
			out = append(out, d)
		}
	}
	return out
}

// While the store keeps refusing, the engine's tries at resuming an
// instance whose step was refused come after 1s, then twice as long each
// time, never more than 30s apart: a store that is down for minutes is
// not asked every second.
func TestEngine_Recover_PauseDoublesUpTo30s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &clockedRefusals{MemStore: record.NewMemStore()}
		var once sync.Once
		handlers := map[string]registry.Handler{
			"alpha": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
				once.Do(func() { store.refuse(true) }) // the step this outcome makes is refused, and every later one
				return registry.Outcome{Trigger: "next"}, nil
			}),
			"beta": answer("next", nil), "gamma": answer("next", nil), "watch": answer("seen", nil),
		}
		eng := poolEngine(t, "chain.yaml", handlers, engine.WithStore(store))
		defer eng.Close()
		startAndWait(t, eng)
		time.Sleep(100 * time.Second)
		synctest.Wait()
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
		if got := store.pauses(); !slices.Equal(got, want) {
			t.Fatalf("got pauses %v between the tries, want %v", got, want)
		}
		// The store works again: the next try continues the instance.
		store.refuse(false)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		snaps, err := store.Instances(t.Context())
		if err != nil || len(snaps) != 1 || snaps[0].Status != record.StatusCompleted || snaps[0].State != "DONE" {
			t.Fatalf("got stored %+v (%v), want one instance completed in DONE", snaps, err)
		}
	})
}
