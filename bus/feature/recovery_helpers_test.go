package feature_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// Helpers of the sender-retry and dead-letter-processing tests.

// recT0 is the start of the manual clocks of these tests.
var recT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// recWork builds a valid REQUEST.
func recWork(from, to, action string) *transport.Message {
	return &transport.Message{Type: transport.MessageRequest, From: from, To: to, Content: map[string]any{"action": action}}
}

// openBox gives agent a mailbox of capacity messages.
func openBox(t *testing.T, tr transport.Transport, agent string, capacity int) {
	t.Helper()
	if err := tr.OpenMailbox(agent, capacity); err != nil {
		t.Fatalf("openBox %s: %v", agent, err)
	}
}

// fillBox sends n messages to agent.
func fillBox(t *testing.T, tr transport.Transport, agent string, n int) {
	t.Helper()
	for i := range n {
		if err := tr.SendWork(t.Context(), recWork("Filler", agent, fmt.Sprintf("fillBox-%d", i))); err != nil {
			t.Fatalf("fillBox %s: %v", agent, err)
		}
	}
}

// takeN takes n messages of agent, asking again while a transport that
// pulls (natsbus) has not handed them all yet.
func takeN(t *testing.T, tr transport.Transport, agent string, n int) []*transport.Message {
	t.Helper()
	var got []*transport.Message
	for range 200 {
		ms, err := tr.TakeWork(t.Context(), agent, n-len(got))
		if err != nil {
			t.Fatalf("takeN %s: %v", agent, err)
		}
		if got = append(got, ms...); len(got) >= n {
			return got
		}
	}
	t.Fatalf("took %d messages of %s, want %d", len(got), agent, n)
	return nil
}

// waitTimer waits (briefly, in real time) until clk has a pending
// timer, and returns when it is due.
func waitTimer(t *testing.T, clk *clock.Manual) time.Time {
	t.Helper()
	for range 10000 {
		if at, ok := clk.NextDeadline(); ok {
			return at
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatal("got no timer scheduled on the manual clock, want one")
	return time.Time{}
}

// deadLog collects the dead deadLog of a transport.
type deadLog struct {
	mu  sync.Mutex
	got []transport.DeadLetter
}

// collectDead subscribes to tr's dead deadLog until the test ends.
func collectDead(t *testing.T, tr transport.Transport) *deadLog {
	l := &deadLog{}
	cancel := tr.OnDeadLetter(func(d transport.DeadLetter) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got = append(l.got, d)
	})
	t.Cleanup(cancel)
	return l
}

// all returns the dead deadLog collected so far.
func (l *deadLog) all() []transport.DeadLetter {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]transport.DeadLetter(nil), l.got...)
}

// checkBalanced checks the transport's accounting invariant.
func checkBalanced(t *testing.T, tr transport.Transport) transport.Snapshot {
	t.Helper()
	s := tr.Metrics()
	if !s.Balanced() {
		t.Fatalf("got accepted %d, want delivered %d + dead-lettered %d + queued %d + in flight %d",
			s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight)
	}
	return s
}

// drain takes n messages of agent and waits until its mailbox has room
// for them again: natsbus frees a stream's room when the server has
// processed the takes' acks, a moment after TakeWork returns.
func drain(t *testing.T, tr transport.Transport, agent string, n int) []*transport.Message {
	t.Helper()
	got := takeN(t, tr, agent, n)
	rt, ok := tr.(transport.RoomTeller)
	if !ok {
		return got
	}
	for range 2000 {
		free, _, err := rt.Room(t.Context(), agent)
		if err != nil {
			t.Fatalf("room of %s: %v", agent, err)
		}
		if free >= n {
			return got
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("got no room in %s's mailbox after taking %d, want it", agent, n)
	return nil
}
