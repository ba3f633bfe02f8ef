package jsonv

import (
	"strconv"
	"sync"
	"testing"
)

// TestInterner_KeepsTheFirstMaxMet fills a small table past its bound:
// it keeps exactly the first max texts met, each under its own value, and
// says it has no room once full.
func TestInterner_KeepsTheFirstMaxMet(t *testing.T) {
	tab := newInterner[int](100)
	for i := range 300 {
		k := "k" + strconv.Itoa(i)
		if _, ok, room := tab.lookup([]byte(k)); ok || room != (i < 100) {
			t.Fatalf("%s before its add: got ok %v, room %v", k, ok, room)
		}
		tab.add(k, i)
		tab.add(k, -1) // a second add of a text keeps the first value
	}
	for i := range 300 {
		v, ok, _ := tab.lookup([]byte("k" + strconv.Itoa(i)))
		if ok != (i < 100) || (ok && v != i) {
			t.Fatalf("k%d: got %d, %v; want it kept (%v) with its value", i, v, ok, i < 100)
		}
	}
}

// TestInterner_ConcurrentReadersAndWriters looks texts up and adds them
// from several goroutines at once (run with -race): every value found is
// the one added under its text.
func TestInterner_ConcurrentReadersAndWriters(t *testing.T) {
	tab := newInterner[string](512)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := strconv.Itoa((i * (g + 1)) % 700)
				if v, ok, room := tab.lookup([]byte(k)); ok && v != "v"+k {
					t.Errorf("%s: got %q", k, v)
					return
				} else if !ok && room {
					tab.add(k, "v"+k)
				}
			}
		}()
	}
	wg.Wait()
	if n := int(tab.n.Load()); n != 512 {
		t.Errorf("the table holds %d texts, want 512 (its bound)", n)
	}
}
