package record

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// MemStore is the in-memory Store, the default when no durable store is
// given. Each instance has its own lock, so commits of different instances
// never contend.
type MemStore struct {
	instances sync.Map // id -> *memInstance

	mu        sync.Mutex   // guards dead and workflows
	dead      []DeadLetter // the newest MemDeadLetterLimit, and up to as many older ones
	deadSeq   int
	workflows map[string]WorkflowSource
}

var _ Store = (*MemStore)(nil)

type memInstance struct {
	mu   sync.Mutex
	snap Snapshot
	// steps holds one exactly-sized copy of each commit's entries: no
	// growing slice is copied over and over as the history lengthens.
	steps [][]Entry
	n     int
	// outbox holds the unsettled outbox items, oldest first; usually one.
	outbox []Outgoing
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return &MemStore{} }

// Commit implements Store.
func (s *MemStore) Commit(_ context.Context, rec Step) error {
	v, ok := s.instances.Load(rec.Snapshot.ID)
	if !ok {
		v, _ = s.instances.LoadOrStore(rec.Snapshot.ID, &memInstance{})
	}
	mi := v.(*memInstance)
	mi.mu.Lock()
	mi.snap = rec.Snapshot
	if len(rec.Entries) > 0 {
		mi.steps = append(mi.steps, slices.Clone(rec.Entries))
		mi.n += len(rec.Entries)
	}
	if len(rec.Settled) > 0 {
		mi.outbox = slices.DeleteFunc(mi.outbox, func(o Outgoing) bool { return slices.Contains(rec.Settled, o.Key) })
	}
	for _, o := range rec.Outbox {
		if k := slices.IndexFunc(mi.outbox, func(p Outgoing) bool { return p.Key == o.Key }); k >= 0 {
			mi.outbox[k] = o
		} else {
			mi.outbox = append(mi.outbox, o)
		}
	}
	mi.mu.Unlock()
	return nil
}

// Outbox implements Store.
func (s *MemStore) Outbox(_ context.Context, id string) ([]Outgoing, error) {
	v, ok := s.instances.Load(id)
	if !ok {
		return nil, ErrUnknownInstance
	}
	mi := v.(*memInstance)
	mi.mu.Lock()
	out := slices.Clone(mi.outbox)
	mi.mu.Unlock()
	slices.SortStableFunc(out, compareOutgoing)
	return out, nil
}

// compareOutgoing orders outbox items by step, then key.
func compareOutgoing(a, b Outgoing) int {
	if c := cmp.Compare(a.Step, b.Step); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// MemDeadLetterLimit is how many dead letters a MemStore keeps: the newest,
// as the bus's own queue does (its default limit is the same), so that a
// long-running process without a durable store does not grow without bound.
const MemDeadLetterLimit = 10_000

// AddDeadLetter implements Store. Past MemDeadLetterLimit the oldest is
// dropped; Seq keeps counting.
func (s *MemStore) AddDeadLetter(_ context.Context, d DeadLetter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadSeq++
	d.Seq = s.deadSeq
	if len(s.dead) >= 2*MemDeadLetterLimit {
		// Drop the older half at once: amortised, each add copies O(1).
		keep := copy(s.dead, s.dead[len(s.dead)-MemDeadLetterLimit:])
		clear(s.dead[keep:])
		s.dead = s.dead[:keep]
	}
	s.dead = append(s.dead, d)
	return nil
}

// DeadLetters implements Store.
func (s *MemStore) DeadLetters(context.Context) ([]DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.dead[max(0, len(s.dead)-MemDeadLetterLimit):]), nil
}

// SaveWorkflow implements Store.
func (s *MemStore) SaveWorkflow(_ context.Context, w WorkflowSource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workflows[w.Hash]; ok {
		return nil
	}
	if s.workflows == nil {
		s.workflows = make(map[string]WorkflowSource)
	}
	w.Source = slices.Clone(w.Source)
	s.workflows[w.Hash] = w
	return nil
}

// Workflow implements Store.
func (s *MemStore) Workflow(_ context.Context, hash string) (WorkflowSource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workflows[hash]
	if !ok {
		return WorkflowSource{}, fmt.Errorf("%w: %s", ErrUnknownWorkflow, hash)
	}
	w.Source = slices.Clone(w.Source)
	return w, nil
}

// Instance implements Store.
func (s *MemStore) Instance(_ context.Context, id string) (Snapshot, error) {
	v, ok := s.instances.Load(id)
	if !ok {
		return Snapshot{}, ErrUnknownInstance
	}
	mi := v.(*memInstance)
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return mi.snap, nil
}

// History implements Store.
func (s *MemStore) History(_ context.Context, id string) ([]Entry, error) {
	v, ok := s.instances.Load(id)
	if !ok {
		return nil, ErrUnknownInstance
	}
	mi := v.(*memInstance)
	mi.mu.Lock()
	defer mi.mu.Unlock()
	out := make([]Entry, 0, mi.n)
	for _, step := range mi.steps {
		out = append(out, step...)
	}
	return out, nil
}

// Instances implements Store.
func (s *MemStore) Instances(_ context.Context) ([]Snapshot, error) {
	var out []Snapshot
	s.instances.Range(func(_, v any) bool {
		mi := v.(*memInstance)
		mi.mu.Lock()
		out = append(out, mi.snap)
		mi.mu.Unlock()
		return true
	})
	slices.SortFunc(out, func(a, b Snapshot) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, nil
}
