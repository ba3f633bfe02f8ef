package storetest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/engine/storetest"
)

// refStore is a plain, correct store that a knob breaks in one way.
type refStore struct {
	knob  string
	mu    sync.Mutex
	snaps map[string]engine.Snapshot
	steps map[string][][]engine.Entry
}

func newRefStore(knob string) *refStore {
	return &refStore{knob: knob, snaps: map[string]engine.Snapshot{}, steps: map[string][][]engine.Entry{}}
}

func (s *refStore) Commit(_ context.Context, rec engine.StepRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries := slices.Clone(rec.Entries)
	switch s.knob {
	case "alias":
		entries = rec.Entries
	case "nanos":
		for i := range entries {
			entries[i].Time = entries[i].Time.Truncate(time.Microsecond)
		}
	case "delay":
		for i := range entries {
			entries[i].Delay = 0
		}
	}
	if _, ok := s.snaps[rec.Snapshot.ID]; !ok || s.knob != "firstsnap" {
		s.snaps[rec.Snapshot.ID] = rec.Snapshot
	}
	if len(entries) > 0 {
		s.steps[rec.Snapshot.ID] = append(s.steps[rec.Snapshot.ID], entries)
	}
	return nil
}

func (s *refStore) unknown(id string) error {
	if s.knob == "unknown" {
		return errors.New("not found")
	}
	return fmt.Errorf("%w: %s", engine.ErrUnknownInstance, id)
}

func (s *refStore) Instance(_ context.Context, id string) (engine.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, ok := s.snaps[id]
	if !ok {
		return engine.Snapshot{}, s.unknown(id)
	}
	return snap, nil
}

func (s *refStore) History(_ context.Context, id string) ([]engine.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.snaps[id]; !ok {
		return nil, s.unknown(id)
	}
	steps := s.steps[id]
	if s.knob == "order" {
		steps = slices.Clone(steps)
		slices.Reverse(steps)
	}
	return slices.Concat(steps...), nil
}

func (s *refStore) Instances(_ context.Context) ([]engine.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Collect(func(yield func(engine.Snapshot) bool) {
		for _, snap := range s.snaps {
			if !yield(snap) {
				return
			}
		}
	})
	slices.SortFunc(out, func(a, b engine.Snapshot) int { return strings.Compare(a.ID, b.ID) })
	if s.knob == "unsorted" {
		slices.Reverse(out)
	}
	return out, nil
}

const knobEnv = "STORETEST_KNOB"

// TestRefStore proves the unbroken reference store passes, so that each
// mutant below fails because of its knob alone.
func TestRefStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) engine.Store { return newRefStore(os.Getenv(knobEnv)) })
}

// TestSuiteCatchesMutants runs the suite against stores broken on purpose,
// in a child process, and checks that the subtest guarding each break fails.
func TestSuiteCatchesMutants(t *testing.T) {
	if os.Getenv(knobEnv) != "" {
		return // in the child process only TestRefStore, with a broken knob, is of interest
	}
	tests := []struct{ knob, subtest string }{
		{"alias", "EntriesReusedAfterCommit"},
		{"nanos", "TimesKeepNanoseconds"},
		{"delay", "DurationsExact"},
		{"delay", "EntryRoundTrip"},
		{"firstsnap", "LastSnapshotWins"},
		{"unknown", "EmptyStore"},
		{"unknown", "UnknownInstanceAmongKnown"},
		{"order", "HistoryOrderAcrossCommits"},
		{"unsorted", "InstancesSortedByID"},
	}
	for _, tt := range tests {
		t.Run(tt.knob+"/"+tt.subtest, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestRefStore$/^"+tt.subtest+"$", "-test.v")
			cmd.Env = append(os.Environ(), knobEnv+"="+tt.knob)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("suite passed a store with knob %q; want %s to fail:\n%s", tt.knob, tt.subtest, out)
			}
			if want := "--- FAIL: TestRefStore/" + tt.subtest; !strings.Contains(string(out), want) {
				t.Fatalf("got output without %q:\n%s", want, out)
			}
		})
	}
}
