package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
)

// watchStore is a MemStore that, when an instance's final step is
// committed, records whether that instance's Done channel was already
// closed: Wait must not return before the step it reports is in the store.
type watchStore struct {
	*record.MemStore
	eng *engine.Engine

	mu          sync.Mutex
	doneEarly   []string
	finalCommit map[string]bool
}

func (s *watchStore) Commit(ctx context.Context, rec record.Step) error {
	if rec.Snapshot.Status.Finished() {
		s.mu.Lock()
		if s.finalCommit == nil {
			s.finalCommit = map[string]bool{}
		}
		first := !s.finalCommit[rec.Snapshot.ID]
		s.finalCommit[rec.Snapshot.ID] = true
		s.mu.Unlock()
		if inst, err := s.eng.Instance(rec.Snapshot.ID); first && err == nil {
			select {
			case <-inst.Done():
				s.mu.Lock()
				s.doneEarly = append(s.doneEarly, string(rec.Snapshot.Status))
				s.mu.Unlock()
			default:
			}
		}
	}
	return s.MemStore.Commit(ctx, rec)
}

func TestEngine_Instance_DoneClosesAfterTheFinalStepIsCommitted(t *testing.T) {
	tests := []struct {
		name   string
		agents map[string][]reply
		cancel bool
		want   record.Status
	}{
		{"completed", map[string][]reply{"alpha": {ok("next", nil)}, "beta": {ok("next", nil)}, "gamma": {ok("next", nil)}, "watch": nil}, false, record.StatusCompleted},
		{"failed", map[string][]reply{"alpha": {ok("unknown", nil)}}, false, record.StatusFailed},
		{"canceled", map[string][]reply{"alpha": {ok("next", nil)}}, true, record.StatusCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &watchStore{MemStore: record.NewMemStore()}
			var seen []engine.EventType
			r := newSimRun(t, "chain.yaml", tt.agents, engine.WithStore(store), engine.WithObserver(func(e engine.Event) {
				seen = append(seen, e.Type)
			}))
			store.eng = r.eng
			inst, err := r.eng.Start(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.cancel {
				r.runUntil(r.queued("beta"))
				if err := inst.Cancel(t.Context()); err != nil {
					t.Fatal(err)
				}
			} else {
				r.settle()
			}
			if got := inst.Result().Status; got != tt.want {
				t.Fatalf("got status %s, want %s", got, tt.want)
			}
			if len(store.doneEarly) > 0 {
				t.Errorf("Done was closed before the final step reached the store (%v): Wait can return a result whose history and events are not there yet", store.doneEarly)
			}
			h := history(t, inst)
			// A final notice's agent may take it after the instance has
			// ended: that entry may follow the final one.
			h = slices.DeleteFunc(h, func(e record.Entry) bool { return e.Kind == record.KindNoticeTaken })
			if last := h[len(h)-1].Kind; string(last) != map[record.Status]string{record.StatusCompleted: "completed", record.StatusFailed: "failed", record.StatusCanceled: "canceled"}[tt.want] {
				t.Errorf("got last entry %s, want the final one", last)
			}
			if len(seen) == 0 || (seen[len(seen)-1] != engine.EventCompleted && seen[len(seen)-1] != engine.EventFailed && seen[len(seen)-1] != engine.EventCancelled) {
				t.Errorf("got events %v, want the final event delivered", seen)
			}
		})
	}
}
