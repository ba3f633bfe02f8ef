package registry

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/internal/suggest"
)

// Registry holds the agents of a workflow. Look-ups are lock-free and safe
// for any number of concurrent readers; changes are serialized and publish a
// new snapshot, so a reader sees either the old set or the new one, never a
// mix. The zero value is not usable; call New or FromSpecs.
type Registry struct {
	mu    sync.Mutex // serializes writers
	snap  atomic.Pointer[snapshot]
	onAdd func(Agent)
}

// snapshot is an immutable view of the registry.
type snapshot struct {
	byID   map[string]Agent
	sorted []Agent // every agent, by id
	byType map[string][]Agent
	byCap  map[string][]Agent
}

// Option configures a Registry.
type Option func(*Registry)

// WithOnAdd registers a callback run after each agent is added (outside the
// registry's lock), for example to open the agent's mailbox on a bus.
func WithOnAdd(f func(Agent)) Option { return func(r *Registry) { r.onAdd = f } }

// New returns an empty registry.
func New(opts ...Option) *Registry {
	r := &Registry{}
	for _, o := range opts {
		o(r)
	}
	r.snap.Store(buildSnapshot(nil))
	return r
}

// FromSpecs returns a registry holding every agent in specs. It reports every
// invalid or duplicated agent at once (joined) and then returns no registry.
func FromSpecs(specs []Agent, opts ...Option) (*Registry, error) {
	r := New(opts...)
	if err := r.AddAll(specs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Add registers one agent. It fails with an *AgentError for an invalid agent
// and a *DuplicateAgentError for an id already registered.
func (r *Registry) Add(a Agent) error { return r.AddAll(a) }

// AddAll registers several agents at once: either every one of them is added
// or, when any is invalid or duplicated, none is and every problem is
// reported (joined).
func (r *Registry) AddAll(agents ...Agent) error {
	if len(agents) == 0 {
		return nil
	}
	r.mu.Lock()
	old := r.snap.Load()
	var errs []error
	seen := make(map[string]bool, len(agents))
	added := make([]Agent, 0, len(agents))
	for _, a := range agents {
		if err := a.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := old.byID[a.ID]; dup || seen[a.ID] {
			errs = append(errs, &DuplicateAgentError{ID: a.ID})
			continue
		}
		seen[a.ID] = true
		a.Capabilities = slices.Clip(slices.Clone(a.Capabilities))
		added = append(added, a)
	}
	if len(errs) > 0 {
		r.mu.Unlock()
		return errors.Join(errs...)
	}
	all := make([]Agent, 0, len(old.sorted)+len(added))
	all = append(append(all, old.sorted...), added...)
	r.snap.Store(buildSnapshot(all))
	r.mu.Unlock()
	if r.onAdd != nil {
		for _, a := range added {
			r.onAdd(a)
		}
	}
	return nil
}

// SetHandler attaches (or, with nil, detaches) the Go handler of a
// registered agent.
func (r *Registry) SetHandler(id string, h Handler) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	if _, ok := old.byID[id]; !ok {
		return old.unknown(id)
	}
	all := slices.Clone(old.sorted)
	for i := range all {
		if all[i].ID == id {
			all[i].Handler = h
		}
	}
	r.snap.Store(buildSnapshot(all))
	return nil
}

// Get returns the agent with the given id, or an *UnknownAgentError that
// suggests the nearest registered id. The returned Capabilities slice is
// shared with the registry and must not be modified.
func (r *Registry) Get(id string) (Agent, error) {
	s := r.snap.Load()
	if a, ok := s.byID[id]; ok {
		return a, nil
	}
	return Agent{}, s.unknown(id)
}

// Has reports whether id is registered.
func (r *Registry) Has(id string) bool {
	_, ok := r.snap.Load().byID[id]
	return ok
}

// Len returns the number of registered agents.
func (r *Registry) Len() int { return len(r.snap.Load().sorted) }

// All returns every agent, sorted by id.
func (r *Registry) All() []Agent { return slices.Clone(r.snap.Load().sorted) }

// IDs returns every agent id, sorted.
func (r *Registry) IDs() []string {
	s := r.snap.Load()
	ids := make([]string, len(s.sorted))
	for i, a := range s.sorted {
		ids[i] = a.ID
	}
	return ids
}

// ByType returns the agents of type t, sorted by id.
func (r *Registry) ByType(t string) []Agent { return slices.Clone(r.snap.Load().byType[t]) }

// ByCapability returns the agents that declare capability c, sorted by id.
func (r *Registry) ByCapability(c string) []Agent { return slices.Clone(r.snap.Load().byCap[c]) }

// Suggest returns the registered id nearest to id, or "" when none is close
// enough to be a likely typo.
func (r *Registry) Suggest(id string) string {
	s := r.snap.Load()
	names := make([]string, len(s.sorted))
	for i, a := range s.sorted {
		names[i] = a.ID
	}
	return suggest.Nearest(id, names)
}

func (s *snapshot) unknown(id string) error {
	names := make([]string, len(s.sorted))
	for i, a := range s.sorted {
		names[i] = a.ID
	}
	return &UnknownAgentError{ID: id, Suggestion: suggest.Nearest(id, names)}
}

func buildSnapshot(all []Agent) *snapshot {
	slices.SortFunc(all, func(a, b Agent) int { return strings.Compare(a.ID, b.ID) })
	s := &snapshot{
		byID:   make(map[string]Agent, len(all)),
		sorted: slices.Clip(all),
		byType: make(map[string][]Agent),
		byCap:  make(map[string][]Agent),
	}
	for _, a := range all {
		s.byID[a.ID] = a
		s.byType[a.Type] = append(s.byType[a.Type], a)
		for _, c := range slices.Compact(slices.Sorted(slices.Values(a.Capabilities))) {
			s.byCap[c] = append(s.byCap[c], a)
		}
	}
	return s
}
