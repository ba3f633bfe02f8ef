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
		it, ok, _ := l.pop(false)
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

// A goroutine runner that finds its lane empty waits, idle, up to maxIdle
// of them: a push wakes it instead of starting a runner, and one still
// idle when the engine closes ends uncounted.
func TestLane_IdleRunnerIsWokenNotStarted(t *testing.T) {
	l := newLane("payment", 5, 2)
	l.maxIdle = 1
	if start, err := l.push(laneItem{step: 1}, false, false); err != nil || !start {
		t.Fatalf("got start %v, %v, want a runner started", start, err)
	}
	if _, ok, _ := l.pop(true); !ok {
		t.Fatal("got an empty lane, want step 1")
	}
	if _, ok, idle := l.pop(true); ok || !idle {
		t.Fatalf("got ok %v, idle %v, want the runner idle on an empty lane", ok, idle)
	}
	done := make(chan struct{})
	if start, err := l.push(laneItem{step: 2}, false, false); err != nil || start {
		t.Fatalf("got start %v, %v, want the idle runner woken, none started", start, err)
	}
	if !l.await(done) {
		t.Fatal("the idle runner was not woken")
	}
	if it, ok, _ := l.pop(true); !ok || it.step != 2 {
		t.Fatalf("got step %d (%v), want step 2", it.step, ok)
	}
	if _, _, idle := l.pop(true); !idle {
		t.Fatal("want the runner idle again")
	}
	close(done)
	if l.await(done) {
		t.Fatal("an idle runner ran on once the engine closed")
	}
	if l.idle != 0 || l.running != 0 {
		t.Errorf("got %d idle, %d running, want none: the ended runner is not counted", l.idle, l.running)
	}
	if start, err := l.push(laneItem{step: 3}, false, false); err != nil || !start {
		t.Fatalf("got start %v, %v, want a runner started (none idle)", start, err)
	}
}

// A push never waits to wake a runner, also when the runners it woke have
// not yet taken their tokens and others idled since: a push sends under
// the lane's lock, which a runner ending at Close takes.
func TestLane_WakeNeverBlocksAPush(t *testing.T) {
	const limit = 3
	l := newLane("payment", 10, limit)
	l.maxIdle = 1
	step := 0
	for k := range limit {
		step++
		if start, _ := l.push(laneItem{step: step}, false, false); !start {
			t.Fatalf("runner %d: want it started", k)
		}
		for { // it takes the lane's work, then idles
			_, ok, idle := l.pop(true)
			if idle {
				break
			}
			if !ok {
				t.Fatalf("runner %d: ended, want it idle", k)
			}
		}
		step++
		if start, _ := l.push(laneItem{step: step}, false, false); start { // wakes it; it has not run yet
			t.Fatalf("runner %d: want it woken, none started", k)
		}
	}
	if len(l.wake) != limit {
		t.Fatalf("got %d tokens, want %d: one for each runner woken", len(l.wake), limit)
	}
}
