package record

import (
	"context"
	"testing"
)

// TestMemStore_DeadLettersBounded checks that the in-memory store keeps the
// newest MemDeadLetterLimit dead letters, in order, with Seq counting on.
func TestMemStore_DeadLettersBounded(t *testing.T) {
	s := NewMemStore()
	ctx := context.Background()
	const total = 2*MemDeadLetterLimit + 123
	for k := 1; k <= total; k++ {
		if err := s.AddDeadLetter(ctx, DeadLetter{MessageID: "m"}); err != nil {
			t.Fatal(err)
		}
		if got := len(s.dead); got > 2*MemDeadLetterLimit {
			t.Fatalf("after %d adds the store holds %d, want at most %d", k, got, 2*MemDeadLetterLimit)
		}
	}
	got, err := s.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MemDeadLetterLimit {
		t.Fatalf("got %d dead letters, want %d", len(got), MemDeadLetterLimit)
	}
	for k, d := range got {
		if want := total - MemDeadLetterLimit + 1 + k; d.Seq != want {
			t.Fatalf("dead letter %d has seq %d, want %d", k, d.Seq, want)
		}
	}
}
