package shardmap_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/batonhq/baton/internal/shardmap"
)

type item struct{ id string }

// TestMap holds Map to what a sync.Map gives: LoadOrStore keeps the first
// value of a key, Delete and CompareAndDelete forget it, and Range visits
// each entry once while f deletes them.
func TestMap(t *testing.T) {
	x := shardmap.New[*item]()
	a, b := &item{"a"}, &item{"a"}
	if got, loaded := x.LoadOrStore("a", a); loaded || got != a {
		t.Fatalf("got %p, loaded %v, want the new value stored", got, loaded)
	}
	if got, loaded := x.LoadOrStore("a", b); !loaded || got != a {
		t.Fatalf("got %p, loaded %v, want the first value loaded", got, loaded)
	}
	if x.CompareAndDelete("a", b) {
		t.Fatal("CompareAndDelete forgot a key that held another value")
	}
	if got, ok := x.Load("a"); !ok || got != a {
		t.Fatalf("got %p %v, want the first value kept", got, ok)
	}
	if !x.CompareAndDelete("a", a) {
		t.Fatal("CompareAndDelete kept a key that held the value")
	}
	if x.CompareAndDelete("a", a) {
		t.Fatal("CompareAndDelete reported a key that was gone")
	}
	x.LoadOrStore("a", a)
	x.Delete("a")
	if _, ok := x.Load("a"); ok {
		t.Fatal("a deleted key was loaded")
	}
	var want []string
	for n := range 200 {
		id := fmt.Sprint("inst-", n)
		x.LoadOrStore(id, &item{id})
		want = append(want, id)
	}
	var got []string
	x.Range(func(id string, v *item) bool {
		if v.id != id {
			t.Errorf("got %s under %s", v.id, id)
		}
		got = append(got, id)
		x.Delete(id)
		return true
	})
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ranged over %d entries, want the %d stored", len(got), len(want))
	}
	if _, ok := x.Load("inst-7"); ok {
		t.Error("a key deleted during Range was loaded")
	}
	n := 0
	x.LoadOrStore("x", &item{"x"})
	x.LoadOrStore("y", &item{"y"})
	x.Range(func(string, *item) bool { n++; return false })
	if n != 1 {
		t.Errorf("Range went on %d times after f returned false, want 1 call", n)
	}
}

// TestMap_Concurrent stores, loads and deletes from several goroutines
// (for the race detector) and checks that each key kept its first value.
func TestMap_Concurrent(t *testing.T) {
	x := shardmap.New[int]()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for n := range 500 {
				key := fmt.Sprint(n)
				if got, loaded := x.LoadOrStore(key, n); got != n {
					t.Errorf("goroutine %d: got %d under %s (loaded %v), want %d", g, got, key, loaded, n)
				}
				x.Load(key)
				if n%2 == 0 {
					x.CompareAndDelete(key, n)
				}
			}
			x.Range(func(string, int) bool { return true })
		})
	}
	wg.Wait()
	for n := 1; n < 500; n += 2 {
		if v, ok := x.Load(fmt.Sprint(n)); !ok || v != n {
			t.Fatalf("got %d %v under %d, want it kept", v, ok, n)
		}
	}
}
