package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// lostAnswerStore writes every commit, but answers the first lose of them
// with an error, as a store whose write went through while its
// acknowledgement was lost (a server that answered too late, a full disk
// that refused the next write). While dark is set, reads fail too.
type lostAnswerStore struct {
	*record.MemStore
	lose atomic.Int64
	dark atomic.Bool
}

func (s *lostAnswerStore) Commit(ctx context.Context, rec record.Step) error {
	if err := s.MemStore.Commit(ctx, rec); err != nil {
		return err
	}
	if s.lose.Add(-1) >= 0 {
		return errors.New("commit: no answer")
	}
	return nil
}

func (s *lostAnswerStore) Instance(ctx context.Context, id string) (record.Snapshot, error) {
	if s.dark.Load() {
		return record.Snapshot{}, errors.New("read: no answer")
	}
	return s.MemStore.Instance(ctx, id)
}

// A start whose first step the store wrote, though every commit of it was
// answered with an error, succeeds: the instance exists, so the start must
// not fail, and it runs to its end.
func TestEngine_Start_AFirstStepWrittenThoughRefusedStarts(t *testing.T) {
	store := &lostAnswerStore{MemStore: record.NewMemStore()}
	store.lose.Store(3) // every attempt at the first step
	var alphaRuns atomic.Int64
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
		"alpha": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			alphaRuns.Add(1)
			return registry.Outcome{Trigger: "next"}, nil
		}),
		"beta": answer("next", nil), "gamma": answer("next", nil), "watch": answer("seen", nil),
	}, engine.WithStore(store))
	defer eng.Close()
	inst, err := eng.StartID(t.Context(), "order-1", nil)
	if err != nil {
		_, serr := store.MemStore.Instance(t.Context(), "order-1")
		t.Fatalf("Start: %v while the store holds the instance (read: %v): want the start to succeed", err, serr)
	}
	res, err := inst.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, res, "DONE")
	if n := alphaRuns.Load(); n != 1 {
		t.Errorf("alpha ran %d times, want once", n)
	}
}

// A start whose first step the store refused without writing it fails,
// and leaves no instance: neither in the store nor in the engine.
func TestEngine_Start_ARefusedStartLeavesNoInstance(t *testing.T) {
	store := &failingStore{MemStore: record.NewMemStore()}
	store.fail.Store(true)
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{"alpha": answer("next", nil)}, engine.WithStore(store))
	defer eng.Close()
	_, err := eng.StartID(t.Context(), "order-1", nil)
	var ce *engine.CommitError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CommitError", err)
	}
	if _, err := store.Instance(t.Context(), "order-1"); !errors.Is(err, engine.ErrUnknownInstance) {
		t.Errorf("the store's instance: got %v, want ErrUnknownInstance", err)
	}
	if _, err := eng.Instance("order-1"); err == nil {
		t.Error("the engine has the instance, want none")
	}
	store.fail.Store(false)
	if _, err := eng.StartID(t.Context(), "order-1", nil); err != nil {
		t.Errorf("the same start again once the store takes it: %v", err)
	}
}

// When the store neither answers the first step's commits nor the read
// that asks whether it holds it, the start fails; a step written after all
// is not left where it is: the engine looks again once the store answers,
// and the instance goes on.
func TestEngine_Start_AStartTheStoreCannotTellAboutGoesOnOnceItCan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &lostAnswerStore{MemStore: record.NewMemStore()}
		store.lose.Store(3)
		store.dark.Store(true)
		eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
			"alpha": answer("next", nil), "beta": answer("next", nil), "gamma": answer("next", nil), "watch": answer("seen", nil),
		}, engine.WithStore(store))
		defer eng.Close()
		if _, err := eng.StartID(t.Context(), "order-1", nil); err == nil {
			t.Fatal("Start succeeded, want the commit error: the store could not tell")
		}
		store.dark.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		snap, err := store.Instance(t.Context(), "order-1")
		if err != nil || snap.Status != record.StatusCompleted {
			t.Fatalf("got the stored instance %+v (%v), want it completed", snap, err)
		}
	})
}
