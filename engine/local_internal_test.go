package engine

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/transport"
)

// A lane hands its work out highest priority first, then in send order; a
// full lane refuses with a *transport.QueueFullError naming the agent; and its
// accounting adds up.
func TestLane_PriorityCapacityAccounting(t *testing.T) {
	l := newLane("payment", 5, 1)
	sends := []struct {
		step  int
		level transport.Priority
	}{
		{1, transport.PriorityLow}, {2, transport.PriorityNormal}, {3, transport.PriorityCritical}, {4, transport.PriorityNormal}, {5, transport.PriorityHigh},
	}
	starts := 0
	for _, s := range sends {
		start, err := l.push(laneItem{step: s.step, level: s.level}, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if start {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("got %d runners started, want 1 (the agent's concurrency)", starts)
	}
	_, err := l.push(laneItem{step: 6, level: transport.PriorityCritical}, false, false)
	var full *transport.QueueFullError
	if !errors.As(err, &full) || full.Agent != "payment" || full.Capacity != 5 {
		t.Fatalf("got %v, want a *transport.QueueFullError naming payment with capacity 5", err)
	}
	var got []int
	for {
		it, ok := l.pop()
		if !ok {
			break
		}
		got = append(got, it.step)
	}
	want := []int{3, 5, 2, 4, 1}
	if len(got) != len(want) {
		t.Fatalf("got steps %v, want %v", got, want)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("got steps %v, want %v (priority, then send order)", got, want)
		}
	}
	if st := l.stats(); st.Sent != 5 || st.Taken != 5 || st.Refused != 1 || st.Queued != 0 || st.Running != 0 {
		t.Errorf("got %+v, want 5 sent and taken, 1 refused, none queued or running", st)
	}
}
