package a2aserver

import (
	"strconv"
	"testing"
)

// TestTakenSignals_ForgetsTheOldestPastTheBound: past maxTaken messages
// the oldest is forgotten first, and the memory stays bounded.
func TestTakenSignals_ForgetsTheOldestPastTheBound(t *testing.T) {
	var ts takenSignals
	for i := range maxTaken + 1 {
		ts.add("task", strconv.Itoa(i))
	}
	ts.add("task", "1") // known: no change
	if ts.has("task", "0") {
		t.Fatal("the oldest message is still remembered past the bound")
	}
	if !ts.has("task", "1") || !ts.has("task", strconv.Itoa(maxTaken)) {
		t.Fatal("a recent message was forgotten")
	}
	if ts.has("other", "1") {
		t.Fatal("a message id of another task counts as taken")
	}
	if len(ts.seen) != maxTaken {
		t.Fatalf("remembers %d messages, want %d", len(ts.seen), maxTaken)
	}
}
