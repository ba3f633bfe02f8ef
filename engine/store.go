package engine

import (
	"context"
	"slices"
	"sync"
)

// Store keeps instances and their histories. The engine writes every state
// change through Commit as one StepRecord, so a durable store can make each
// step atomic and resume an instance from its last committed step.
//
// The engine never mutates the maps of a Snapshot it has committed; a store
// may keep them as they are. It reuses the Entries slice after Commit
// returns, so a store must copy the entries it keeps.
type Store interface {
	// Commit records one step: the instance's snapshot after the step and the
	// history entries the step produced, all or nothing.
	Commit(ctx context.Context, rec StepRecord) error
	// Instance returns an instance's last committed snapshot.
	Instance(ctx context.Context, id string) (Snapshot, error)
	// History returns an instance's history in commit order.
	History(ctx context.Context, id string) ([]Entry, error)
	// Instances lists every instance's last snapshot, sorted by id.
	Instances(ctx context.Context) ([]Snapshot, error)
}

// StepRecord is the unit of commit: what one step changed.
type StepRecord struct {
	Snapshot Snapshot
	Entries  []Entry
}

// MemStore is the in-memory Store, the default when no durable store is
// given. Each instance has its own lock, so commits of different instances
// never contend.
type MemStore struct {
	instances sync.Map // id -> *memInstance
}

var _ Store = (*MemStore)(nil)

type memInstance struct {
	mu   sync.Mutex
	snap Snapshot
	// steps holds one exactly-sized copy of each commit's entries: no
	// growing slice is copied over and over as the history lengthens.
	steps [][]Entry
	n     int
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return &MemStore{} }

// Commit implements Store.
func (s *MemStore) Commit(_ context.Context, rec StepRecord) error {
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
	mi.mu.Unlock()
	return nil
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
