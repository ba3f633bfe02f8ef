package storetest_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/record/storetest"
)

// refStore is a plain, correct store that a knob breaks in one way.
type refStore struct {
	knob      string
	mu        sync.Mutex
	snaps     map[string]record.Snapshot
	steps     map[string][][]record.Entry
	outbox    map[string][]*record.Outgoing
	dead      []record.DeadLetter
	workflows map[string]record.WorkflowSource
	order     []string // ids in the order of their first commits (or last, knob list-by-update)
}

func newRefStore(knob string) *refStore {
	return &refStore{
		knob:      knob,
		snaps:     map[string]record.Snapshot{},
		steps:     map[string][][]record.Entry{},
		outbox:    map[string][]*record.Outgoing{},
		workflows: map[string]record.WorkflowSource{},
	}
}

func (s *refStore) Commit(ctx context.Context, rec record.Step) error {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return record.ErrNilContext
	}
	if s.knob == "outbox-torn" {
		// The outbox change lands in a commit of its own, before the rest.
		s.mu.Lock()
		s.applyOutbox(rec)
		s.mu.Unlock()
		time.Sleep(100 * time.Microsecond)
		rec.Outbox, rec.Settled = nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyOutbox(rec)
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
	if _, ok := s.snaps[rec.Snapshot.ID]; !ok || s.knob == "list-by-update" {
		s.order = slices.DeleteFunc(s.order, func(id string) bool { return id == rec.Snapshot.ID })
		s.order = append(s.order, rec.Snapshot.ID)
	}
	if _, ok := s.snaps[rec.Snapshot.ID]; !ok || s.knob != "firstsnap" {
		s.snaps[rec.Snapshot.ID] = rec.Snapshot
	}
	if len(entries) > 0 {
		s.steps[rec.Snapshot.ID] = append(s.steps[rec.Snapshot.ID], entries)
	}
	return nil
}

// applyOutbox drops the items rec settles, then keeps the ones it sends.
func (s *refStore) applyOutbox(rec record.Step) {
	id := rec.Snapshot.ID
	if s.knob == "outbox-global" {
		id = ""
	}
	items := s.outbox[id]
	if s.knob != "outbox-ignores-settled" {
		items = slices.DeleteFunc(items, func(o *record.Outgoing) bool { return slices.Contains(rec.Settled, o.Key) })
	}
	for i := range rec.Outbox {
		o := &rec.Outbox[i]
		if s.knob != "outbox-alias" {
			c := *o
			o = &c
		}
		if s.knob == "outbox-lossy" {
			o.Created = o.Created.Truncate(time.Microsecond)
		}
		k := slices.IndexFunc(items, func(p *record.Outgoing) bool { return p.Key == o.Key })
		if k >= 0 && s.knob != "outbox-no-replace" {
			items[k] = o
		} else {
			items = append(items, o)
		}
	}
	s.outbox[id] = items
}

func (s *refStore) Outbox(ctx context.Context, id string) ([]record.Outgoing, error) {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return nil, record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.snaps[id]; !ok {
		if s.knob == "outbox-unknown" {
			return nil, nil
		}
		return nil, s.unknown(id)
	}
	if s.knob == "outbox-global" {
		id = ""
	}
	out := make([]record.Outgoing, len(s.outbox[id]))
	for i, o := range s.outbox[id] {
		out[i] = *o
	}
	if s.knob != "outbox-unsorted" {
		slices.SortStableFunc(out, func(a, b record.Outgoing) int {
			if c := cmp.Compare(a.Step, b.Step); c != 0 {
				return c
			}
			return strings.Compare(a.Key, b.Key)
		})
	}
	return out, nil
}

func (s *refStore) AddDeadLetter(ctx context.Context, d record.DeadLetter) error {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.knob != "deadletter-no-seq" {
		d.Seq = len(s.dead) + 1
	}
	s.dead = append(s.dead, d)
	return nil
}

func (s *refStore) DeadLetters(ctx context.Context) ([]record.DeadLetter, error) {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return nil, record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.dead)
	if s.knob == "deadletter-reversed" {
		slices.Reverse(out)
	}
	return out, nil
}

func (s *refStore) SaveWorkflow(ctx context.Context, w record.WorkflowSource) error {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workflows[w.Hash]; ok && s.knob != "workflow-overwrites" {
		return nil
	}
	if s.knob != "workflow-alias" {
		w.Source = slices.Clone(w.Source)
	}
	s.workflows[w.Hash] = w
	return nil
}

func (s *refStore) Workflow(ctx context.Context, hash string) (record.WorkflowSource, error) {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return record.WorkflowSource{}, record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workflows[hash]
	if !ok {
		if s.knob == "workflow-unknown" {
			return record.WorkflowSource{}, errors.New("not found")
		}
		return record.WorkflowSource{}, fmt.Errorf("%w: %s", record.ErrUnknownWorkflow, hash)
	}
	if s.knob != "workflow-alias" {
		w.Source = slices.Clone(w.Source)
	}
	return w, nil
}

// Prune deletes finished instances updated before before; its knobs
// prune running ones, prune at the cutoff, or leave history and outbox.
func (s *refStore) Prune(ctx context.Context, before time.Time) (int, error) {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return 0, record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, snap := range s.snaps {
		old := snap.Updated.Before(before) || (s.knob == "prune-inclusive" && snap.Updated.Equal(before))
		if !old || (!snap.Status.Finished() && s.knob != "prune-running") {
			continue
		}
		delete(s.snaps, id)
		if s.knob != "list-keeps-pruned" {
			s.order = slices.DeleteFunc(s.order, func(o string) bool { return o == id })
		}
		if s.knob != "prune-keeps-records" {
			delete(s.steps, id)
			delete(s.outbox, id)
		}
		n++
	}
	return n, nil
}

func (s *refStore) unknown(id string) error {
	if s.knob == "unknown" {
		return errors.New("not found")
	}
	return fmt.Errorf("%w: %s", record.ErrUnknownInstance, id)
}

func (s *refStore) Instance(ctx context.Context, id string) (record.Snapshot, error) {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return record.Snapshot{}, record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, ok := s.snaps[id]
	if !ok {
		return record.Snapshot{}, s.unknown(id)
	}
	return snap, nil
}

func (s *refStore) History(ctx context.Context, id string) ([]record.Entry, error) {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return nil, record.ErrNilContext
	}
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

func (s *refStore) Instances(ctx context.Context) ([]record.Snapshot, error) {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return nil, record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Collect(func(yield func(record.Snapshot) bool) {
		for _, snap := range s.snaps {
			if !yield(snap) {
				return
			}
		}
	})
	slices.SortFunc(out, func(a, b record.Snapshot) int { return strings.Compare(a.ID, b.ID) })
	if s.knob == "unsorted" {
		slices.Reverse(out)
	}
	return out, nil
}

// List pages newest first by first commit; its knobs order by last commit,
// ignore the cursor or a filter, end after one page, list a pruned
// instance, or take any cursor.
func (s *refStore) List(ctx context.Context, q record.ListQuery) ([]record.Snapshot, string, error) {
	if ctx == nil && s.knob != "nilctx-ignored" {
		return nil, "", record.ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	end := len(s.order)
	if q.After != "" {
		n, err := strconv.Atoi(q.After)
		if (err != nil || n < 0 || n > len(s.order)) && s.knob != "list-any-cursor" {
			return nil, "", fmt.Errorf("%w: %q", record.ErrBadCursor, q.After)
		}
		if s.knob != "list-ignores-cursor" {
			end = max(0, min(n, len(s.order)))
		}
	}
	var out []record.Snapshot
	for k := end - 1; k >= 0; k-- {
		snap, ok := s.snaps[s.order[k]]
		if !ok {
			snap = record.Snapshot{ID: s.order[k]}
		}
		if s.knob == "list-ignores-filter" {
			q.Workflow = ""
		}
		if !q.Selects(snap) {
			continue
		}
		if len(out) == q.PageSize() {
			if s.knob == "list-one-page" {
				return out, "", nil
			}
			return out, strconv.Itoa(k + 1), nil
		}
		out = append(out, snap)
	}
	return out, "", nil
}

const knobEnv = "STORETEST_KNOB"

// TestRefStore proves the unbroken reference store passes, so that each
// mutant below fails because of its knob alone.
func TestRefStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) record.Store { return newRefStore(os.Getenv(knobEnv)) })
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
		{"outbox-lossy", "OutboxRoundTrip"},
		{"outbox-ignores-settled", "OutboxSettle"},
		{"outbox-ignores-settled", "OutboxAtomicWithStep"},
		{"outbox-unsorted", "OutboxSettle"},
		{"outbox-no-replace", "OutboxSettle"},
		{"outbox-global", "OutboxPerInstance"},
		{"outbox-unknown", "OutboxPerInstance"},
		{"outbox-torn", "OutboxAtomicWithStep"},
		{"outbox-alias", "OutboxSlicesReused"},
		{"deadletter-no-seq", "DeadLettersInOrder"},
		{"deadletter-no-seq", "ConcurrentDeadLetters"},
		{"deadletter-reversed", "DeadLettersInOrder"},
		{"workflow-overwrites", "WorkflowSaveLoad"},
		{"workflow-alias", "WorkflowSaveLoad"},
		{"workflow-unknown", "WorkflowSaveLoad"},
		{"prune-running", "Prune"},
		{"prune-inclusive", "Prune"},
		{"prune-keeps-records", "Prune"},
		{"nilctx-ignored", "NilContext"},
		{"list-by-update", "ListNewestFirst"},
		{"list-ignores-cursor", "ListPages"},
		{"list-one-page", "ListPages"},
		{"list-ignores-filter", "ListFilters"},
		{"list-keeps-pruned", "ListChanges"},
		{"list-any-cursor", "ListChanges"},
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
