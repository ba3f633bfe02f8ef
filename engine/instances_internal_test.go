package engine

import (
	"fmt"
	"slices"
	"testing"
)

// TestInstanceMap holds the engine's instance map to what a sync.Map gave:
// LoadOrStore keeps the first instance of an id, Delete forgets it, and
// Range visits each instance once while f deletes them.
func TestInstanceMap(t *testing.T) {
	x := newInstanceMap()
	a, b := &instance{id: "a"}, &instance{id: "a"}
	if got, loaded := x.LoadOrStore("a", a); loaded || got != a {
		t.Fatalf("got %p, loaded %v, want the new instance stored", got, loaded)
	}
	if got, loaded := x.LoadOrStore("a", b); !loaded || got != a {
		t.Fatalf("got %p, loaded %v, want the first instance loaded", got, loaded)
	}
	x.Delete("a")
	if _, ok := x.Load("a"); ok {
		t.Fatal("a deleted instance was loaded")
	}
	var want []string
	for n := range 100 {
		id := fmt.Sprint("inst-", n)
		x.LoadOrStore(id, &instance{id: id})
		want = append(want, id)
	}
	var got []string
	x.Range(func(id string, i *instance) bool {
		if i.id != id {
			t.Errorf("got instance %s under %s", i.id, id)
		}
		got = append(got, id)
		x.Delete(id) // as Release does
		return true
	})
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ranged over %d instances, want the %d stored", len(got), len(want))
	}
	if _, ok := x.Load("inst-7"); ok {
		t.Error("an instance deleted during Range was loaded")
	}
	n := 0
	x.LoadOrStore("x", &instance{id: "x"})
	x.LoadOrStore("y", &instance{id: "y"})
	x.Range(func(string, *instance) bool { n++; return false })
	if n != 1 {
		t.Errorf("Range went on %d times after f returned false, want 1 call", n)
	}
}
