package engine

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/rules"
)

// visits is an instance's count of entries into each state. Its map is
// never changed once made: committed snapshots, the stores and the rules'
// environment share it. An entry into a state therefore makes a new map,
// and since the map that follows a given map on an entry into a given state
// is the same for every instance, the engine keeps the maps its instances
// made in a tree (visitTree), each with the maps entered from it: instances
// that take the same path share one map per step of it instead of each
// cloning its own (the clone was two allocations and ~4% of a step's CPU at
// every state entry of BenchmarkEngineRefund).
type visits struct {
	m map[string]int
	// shared is set for the tree's maps: only they remember what follows
	// them. An instance resumed from a store starts from a map of its own.
	shared bool
	// next holds the maps entered from this one so far; it is replaced,
	// never changed, under the tree's lock.
	next atomic.Pointer[[]visitEdge]
}

// visitEdge is an entry into state from a map: the map that follows.
type visitEdge struct {
	state *rules.State
	to    *visits
}

// visitTreeMax bounds the maps a visit tree keeps: past it, entries clone
// a map of their own, as they did before the tree. Workflows with loops
// have as many paths as their visit limits allow; the common paths are the
// first ones taken.
const visitTreeMax = 1024

// visitTree is an engine's shared visit maps, rooted at the initial
// state's first visit.
type visitTree struct {
	first *visits
	mu    sync.Mutex  // adds an edge; readers load next without it
	n     int         // maps in the tree, under mu
	full  atomic.Bool // n reached visitTreeMax: a miss clones without the lock
}

// newVisitTree returns the tree of a workflow whose instances start in
// initial.
func newVisitTree(initial string) *visitTree {
	return &visitTree{first: &visits{m: map[string]int{initial: 1}, shared: true}, n: 1}
}

// ownVisits returns visits of m not in any tree (an instance resumed from
// a store): its entries clone as before.
func ownVisits(m map[string]int) *visits { return &visits{m: m} }

// enter returns the visits that follow v on an entry into next.
func (t *visitTree) enter(v *visits, next *rules.State) *visits {
	if v.shared {
		if p := v.next.Load(); p != nil {
			for _, e := range *p {
				if e.state == next {
					return e.to
				}
			}
		}
	}
	m := maps.Clone(v.m)
	m[next.Name]++
	if !v.shared || t.full.Load() {
		return ownVisits(m)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var edges []visitEdge
	if p := v.next.Load(); p != nil {
		for _, e := range *p {
			if e.state == next {
				return e.to // another instance added it meanwhile
			}
		}
		edges = *p
	}
	if t.n >= visitTreeMax {
		t.full.Store(true)
		return ownVisits(m)
	}
	t.n++
	to := &visits{m: m, shared: true}
	grown := make([]visitEdge, len(edges), len(edges)+1)
	copy(grown, edges)
	grown = append(grown, visitEdge{state: next, to: to})
	v.next.Store(&grown)
	return to
}
