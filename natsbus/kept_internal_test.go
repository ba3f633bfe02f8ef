package natsbus

import (
	"strconv"
	"testing"

	"github.com/batonhq/baton/wire"
)

// The outcomes kept for unanswered reports stay within their bound: past
// it the oldest is forgotten, and dropping the answered ones keeps the
// order as small as what it orders.
func TestKept_BoundedOldestForgotten(t *testing.T) {
	k := newKept(3)
	for n := range 5 {
		k.put(strconv.Itoa(n), keptOutcome{report: wire.Report{Step: n}})
	}
	if got := k.len(); got != 3 {
		t.Fatalf("got %d outcomes kept, want 3", got)
	}
	for n := range 5 {
		_, ok := k.get(strconv.Itoa(n))
		if want := n >= 2; ok != want {
			t.Errorf("outcome %d kept: got %v, want %v", n, ok, want)
		}
	}
	for n := range 1000 {
		key := "x" + strconv.Itoa(n)
		k.put(key, keptOutcome{})
		k.drop(key)
	}
	if got := len(k.order); got > 2*k.len()+16 {
		t.Errorf("got an order of %d keys for %d outcomes, want it compacted", got, k.len())
	}
}
