package engine

import (
	"maps"
	"sync"
	"testing"

	"github.com/batonhq/baton/rules"
)

// TestVisitTree_SharesAndNeverChangesAMap holds the visit tree to what a
// per-instance clone gave: each entry counts, the map entered from is left
// as it was, and instances taking the same path share one map per step.
func TestVisitTree_SharesAndNeverChangesAMap(t *testing.T) {
	a, b := &rules.State{Name: "A"}, &rules.State{Name: "B"}
	tree := newVisitTree("A")
	first := tree.first
	v1 := tree.enter(first, b)
	v2 := tree.enter(v1, a)
	if got, want := v2.m, map[string]int{"A": 2, "B": 1}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := first.m, map[string]int{"A": 1}; !maps.Equal(got, want) {
		t.Errorf("the first map became %v, want %v", got, want)
	}
	if got, want := v1.m, map[string]int{"A": 1, "B": 1}; !maps.Equal(got, want) {
		t.Errorf("the second map became %v, want %v", got, want)
	}
	if w1 := tree.enter(first, b); w1 != v1 {
		t.Error("a second instance on the same path got a map of its own, want the shared one")
	}
	if w2 := tree.enter(first, a); w2 == v2 || !maps.Equal(w2.m, map[string]int{"A": 2}) {
		t.Errorf("another path got %v, want its own map[A:2]", w2.m)
	}
}

// TestVisitTree_OwnVisitsAreNotShared holds a resumed instance's visits
// (a map of its own) out of the tree.
func TestVisitTree_OwnVisitsAreNotShared(t *testing.T) {
	b := &rules.State{Name: "B"}
	tree := newVisitTree("A")
	own := ownVisits(map[string]int{"A": 1})
	v1, v2 := tree.enter(own, b), tree.enter(own, b)
	if v1 == v2 || v1.shared || own.next.Load() != nil {
		t.Error("an instance's own visits were shared, want each entry its own map")
	}
	if got, want := v1.m, map[string]int{"A": 1, "B": 1}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestVisitTree_Bounded holds the tree to visitTreeMax maps however many
// paths the instances take; entries past it still count.
func TestVisitTree_Bounded(t *testing.T) {
	a, b := &rules.State{Name: "A"}, &rules.State{Name: "B"}
	tree := newVisitTree("A")
	v := tree.first
	for range 2 * visitTreeMax {
		v = tree.enter(v, a)
		tree.enter(v, b)
	}
	if tree.n != visitTreeMax {
		t.Errorf("the tree holds %d maps, want %d", tree.n, visitTreeMax)
	}
	if got, want := v.m["A"], 2*visitTreeMax+1; got != want {
		t.Errorf("got %d visits of A, want %d", got, want)
	}
}

// TestVisitTree_Concurrent has instances enter the same states at once:
// they agree on one map per path (run with -race).
func TestVisitTree_Concurrent(t *testing.T) {
	states := []*rules.State{{Name: "A"}, {Name: "B"}, {Name: "C"}}
	tree := newVisitTree("A")
	const n = 8
	got := make([]*visits, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			v := tree.first
			for _, s := range states {
				v = tree.enter(v, s)
			}
			got[k] = v
		})
	}
	wg.Wait()
	for k := range got {
		if got[k] != got[0] {
			t.Fatalf("instance %d got a map of its own, want the shared one", k)
		}
	}
	if want := map[string]int{"A": 2, "B": 1, "C": 1}; !maps.Equal(got[0].m, want) {
		t.Errorf("got %v, want %v", got[0].m, want)
	}
}
