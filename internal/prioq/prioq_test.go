package prioq_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/batonhq/baton/internal/prioq"
	"github.com/batonhq/baton/transport"
)

var levels = []transport.Priority{transport.PriorityLow, transport.PriorityNormal, transport.PriorityHigh, transport.PriorityCritical}

// TestQueue_HighestPriorityFirstThenOldest: whatever the order of pushes,
// pops come by level, highest first, and in push order within a level;
// the queue grows past its first ring size without losing an item.
func TestQueue_HighestPriorityFirstThenOldest(t *testing.T) {
	type item struct {
		p   transport.Priority
		seq int
	}
	var q prioq.Queue[item]
	rng := rand.New(rand.NewPCG(1, 2))
	var pushed []item
	for seq := range 1000 {
		it := item{levels[rng.IntN(len(levels))], seq}
		q.Push(it.p, it)
		pushed = append(pushed, it)
	}
	if q.Len() != len(pushed) {
		t.Fatalf("got Len %d, want %d", q.Len(), len(pushed))
	}
	want := slices.Clone(pushed)
	slices.SortStableFunc(want, func(a, b item) int { return int(b.p) - int(a.p) })
	for k, w := range want {
		got, ok := q.Pop()
		if !ok || got != w {
			t.Fatalf("pop %d: got %v %v, want %v", k, got, ok, w)
		}
	}
	if _, ok := q.Pop(); ok || q.Len() != 0 {
		t.Fatalf("an emptied queue still pops (Len %d)", q.Len())
	}
}

// TestQueue_PushFrontJumpsItsLevelOnly: an item pushed to the front comes
// before the others of its level, after every item of a higher level.
func TestQueue_PushFrontJumpsItsLevelOnly(t *testing.T) {
	var q prioq.Queue[string]
	q.Push(transport.PriorityNormal, "n1")
	q.Push(transport.PriorityHigh, "h1")
	q.PushFront(transport.PriorityNormal, "n0")
	var got []string
	for v, ok := q.Pop(); ok; v, ok = q.Pop() {
		got = append(got, v)
	}
	if want := []string{"h1", "n0", "n1"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestQueue_RemoveIfKeepsTheOthersInOrder: removing items of one level
// keeps the rest of that level in order and the other levels untouched.
func TestQueue_RemoveIfKeepsTheOthersInOrder(t *testing.T) {
	var q prioq.Queue[int]
	for i := range 20 {
		q.Push(transport.PriorityNormal, i)
	}
	q.Push(transport.PriorityLow, 100)
	if n := q.RemoveIf(transport.PriorityNormal, func(v int) bool { return v%3 == 0 }); n != 7 {
		t.Fatalf("removed %d, want 7", n)
	}
	if q.Len() != 14 {
		t.Fatalf("got Len %d, want 14", q.Len())
	}
	var got []int
	for v, ok := q.Pop(); ok; v, ok = q.Pop() {
		got = append(got, v)
	}
	want := []int{1, 2, 4, 5, 7, 8, 10, 11, 13, 14, 16, 17, 19, 100}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestQueue_RemoveAllAndHeads: RemoveAll drops at every level; Heads
// sees the oldest item of each non-empty level, highest first.
func TestQueue_RemoveAllAndHeads(t *testing.T) {
	var q prioq.Queue[int]
	for i, p := range []transport.Priority{transport.PriorityLow, transport.PriorityHigh, transport.PriorityLow, transport.PriorityHigh, transport.PriorityNormal} {
		q.Push(p, i)
	}
	if n := q.RemoveAll(func(v int) bool { return v < 2 }); n != 2 || q.Len() != 3 {
		t.Fatalf("removed %d (Len %d), want 2 (Len 3)", n, q.Len())
	}
	var heads []int
	q.Heads(func(v int) { heads = append(heads, v) })
	if want := []int{3, 4, 2}; !slices.Equal(heads, want) {
		t.Fatalf("got heads %v, want %v", heads, want)
	}
}

// TestQueue_InvalidPriorityCountsAsNormal: a priority outside the four
// levels is queued as NORMAL instead of indexing out of range.
func TestQueue_InvalidPriorityCountsAsNormal(t *testing.T) {
	var q prioq.Queue[string]
	q.Push(transport.Priority(42), "odd")
	q.Push(transport.PriorityNormal, "normal")
	q.Push(transport.PriorityHigh, "high")
	var got []string
	for v, ok := q.Pop(); ok; v, ok = q.Pop() {
		got = append(got, v)
	}
	if want := []string{"high", "odd", "normal"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// BenchmarkQueue_PushPop: one push and one pop of a steady queue allocate
// nothing.
func BenchmarkQueue_PushPop(b *testing.B) {
	var q prioq.Queue[*int]
	v := new(int)
	for range 64 {
		q.Push(transport.PriorityNormal, v)
	}
	b.ReportAllocs()
	for b.Loop() {
		q.Push(transport.PriorityHigh, v)
		q.Pop()
	}
}
