package record

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
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

// sizedSteps are the commits of an instance whose history takes about
// 2 KB: a first step of two entries, then four of five.
func sizedSteps(id string) []Step {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	snap := Snapshot{ID: id, Status: StatusRunning}
	steps := []Step{{Snapshot: snap, Entries: []Entry{
		{Seq: 1, Time: at, Kind: KindStarted, Result: map[string]any{"order_id": "1"}},
		{Seq: 2, Time: at, Kind: KindDispatch, Step: 1, Agent: "customer", HandoffID: id + ":1"},
	}}}
	for k := range 4 {
		res := map[string]any{"ok": true, "k": k}
		entries := []Entry{
			{Time: at, Kind: KindAgentRun, Step: k + 1, Agent: "customer", Trigger: "done", Result: res},
			{Time: at, Kind: KindOutcome, Step: k + 1, Agent: "customer", Trigger: "done", Result: res},
			{Time: at, Kind: KindRuleFired, Rule: "rule", Condition: "result.ok == true", Next: "NEXT"},
			{Time: at, Kind: KindTransition, State: "A", Next: "NEXT"},
			{Time: at, Kind: KindHandoff, Step: k + 2, From: "customer", To: "seller", HandoffID: fmt.Sprintf("%s:%d", id, k+2), Reason: "the seller must approve it"},
		}
		if k == 3 {
			snap.Status = StatusCompleted
		}
		steps = append(steps, Step{Snapshot: snap, Entries: entries})
	}
	return steps
}

// TestMemStore_SizesHistoriesFromFinishedOnes checks that a history's
// first commit takes the room it needs and no more (an instance waiting on
// an agent keeps no slack), and that once an instance has finished, the
// next one's history grows once, at its second commit, to the size it
// finishes with, and is not copied when it finishes.
func TestMemStore_SizesHistoriesFromFinishedOnes(t *testing.T) {
	s := NewMemStore()
	for n, id := range []string{"first-instance", "other-instance"} {
		var (
			grownTo *byte
			grown   int
		)
		for k, st := range sizedSteps(id) {
			if err := s.Commit(t.Context(), st); err != nil {
				t.Fatal(err)
			}
			mi, _ := s.instances.Load(id)
			data := mi.log.data
			if k == 0 {
				if slack := cap(data) - len(data); slack > len(data)/8+16 {
					t.Errorf("%s: its first commit keeps %d bytes of room past its %d, want at most a size class's rounding", id, slack, len(data))
				}
				continue
			}
			if &data[:1][0] != grownTo {
				grownTo = &data[:1][0]
				grown++
			}
		}
		if n == 1 && grown != 1 {
			t.Errorf("%s: its history was allocated %d times past its first commit, want once", id, grown)
		}
		mi, _ := s.instances.Load(id)
		if data := mi.log.data; cap(data)-len(data) > len(data)/8 {
			t.Errorf("%s: its finished history keeps %d bytes of room past its %d, want at most an eighth", id, cap(data)-len(data), len(data))
		}
	}
}

// TestMemStore_LogRoom checks that histories of one size get that room
// exactly, and that one history far larger than the others moves the room
// by a quarter at most (an eighth for the size, an eighth for its
// deviation).
func TestMemStore_LogRoom(t *testing.T) {
	s := NewMemStore()
	for range 20 {
		s.logFinished(1530)
		if got := s.logRoom(); got != 1530 {
			t.Fatalf("got a room of %d after histories of 1530 bytes, want 1530", got)
		}
	}
	s.logFinished(1 << 20)
	if got, want := s.logRoom(), (16*1530+2*1530+15)/16+2*(2*1530)/16; got != want {
		t.Errorf("got a room of %d after a history of 1 MiB, want %d", got, want)
	}
	for range 100 {
		s.logFinished(1530)
	}
	if got := s.logRoom(); got != 1530 {
		t.Errorf("got a room of %d once histories of 1530 bytes came back, want 1530", got)
	}
}

// TestMemInstance_Settle checks the outbox after a step settles keys and
// sends items, the engine's usual step (one item settled, one sent) among
// the others.
func TestMemInstance_Settle(t *testing.T) {
	item := func(key string, step int) Outgoing { return Outgoing{Key: key, Step: step} }
	for _, c := range []struct {
		name        string
		outbox, out []Outgoing
		settled     []string
		want        []Outgoing
	}{
		{"step", []Outgoing{item("a", 1)}, []Outgoing{item("b", 2)}, []string{"a"}, []Outgoing{item("b", 2)}},
		{"resent", []Outgoing{item("a", 1)}, []Outgoing{item("a", 2)}, []string{"a"}, []Outgoing{item("a", 2)}},
		{"other settled", []Outgoing{item("a", 1)}, []Outgoing{item("b", 2)}, []string{"x"}, []Outgoing{item("a", 1), item("b", 2)}},
		{"one of two", []Outgoing{item("a", 1), item("b", 1)}, []Outgoing{item("c", 2)}, []string{"a"}, []Outgoing{item("b", 1), item("c", 2)}},
		{"first", nil, []Outgoing{item("a", 1)}, nil, []Outgoing{item("a", 1)}},
		{"last", []Outgoing{item("a", 1)}, nil, []string{"a"}, nil},
		{"replaced", []Outgoing{item("a", 1)}, []Outgoing{item("a", 3)}, nil, []Outgoing{item("a", 3)}},
	} {
		mi := &memInstance{outbox: slices.Clone(c.outbox)}
		mi.settle(c.settled, c.out)
		if !reflect.DeepEqual(mi.outbox, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, mi.outbox, c.want)
		}
	}
}

// TestMemStore_ReusesDroppedHistories checks that once the retention is
// reached, a new instance's history grows into the buffer of one dropped
// past it, not a new one, that its first commit goes into the buffer an
// earlier history left when it grew, and that the histories kept are
// whole.
func TestMemStore_ReusesDroppedHistories(t *testing.T) {
	const kept, warm, total = 2, 20, 220
	s := NewMemStore(WithRetention(kept))
	steps := sizedSteps("instance-0")
	// The buffers of the histories and of their first commits, once warm.
	buffers, firsts := map[*byte]bool{}, map[*byte]bool{}
	for n := range total {
		id := fmt.Sprintf("instance-%d", n)
		for k, st := range steps {
			st.Snapshot.ID = id
			if err := s.Commit(t.Context(), st); err != nil {
				t.Fatal(err)
			}
			if mi, _ := s.instances.Load(id); n >= warm && k == 0 {
				firsts[&mi.log.data[:1][0]] = true
			}
		}
		if n >= warm {
			mi, _ := s.instances.Load(id)
			buffers[&mi.log.data[:1][0]] = true
		}
	}
	// Each instance dropped gives its buffer to the next one to start.
	if len(buffers) > kept+2 {
		t.Errorf("%d instances past the first %d had %d history buffers, want at most %d", total-warm, warm, len(buffers), kept+2)
	}
	if len(firsts) > 2 {
		t.Errorf("%d instances past the first %d had %d first commits' buffers, want at most 2", total-warm, warm, len(firsts))
	}
	var want []Entry
	for _, st := range steps {
		want = append(want, st.Entries...)
	}
	for n := total - kept; n < total; n++ {
		id := fmt.Sprintf("instance-%d", n)
		got, err := s.History(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got history %+v, want %+v", id, got, want)
		}
	}
}
