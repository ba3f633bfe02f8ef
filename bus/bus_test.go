package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

func TestBus_RegisterErrors(t *testing.T) {
	b := newBus(t, []string{"A"})
	tests := []struct {
		name string
		id   string
		opts []bus.MailboxOption
		want error
	}{
		{"empty id", "", nil, transport.ErrValidation},
		{"broadcast id", "*", nil, transport.ErrValidation},
		{"topic id", "topic:x", nil, transport.ErrValidation},
		{"zero capacity", "B", []bus.MailboxOption{bus.WithMailboxCapacity(0)}, transport.ErrValidation},
		{"duplicate", "A", nil, bus.ErrDuplicateAgent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := b.Register(tc.id, tc.opts...); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	if got := b.Agents(); !slices.Equal(got, []string{"A"}) {
		t.Errorf("got agents %v, want [A]", got)
	}
}

func TestBus_SendToUnknownAgent(t *testing.T) {
	b := newBus(t, []string{"A"})
	m := request("A", "Ghost", "x")
	err := b.Send(t.Context(), m)
	var re *transport.RoutingError
	if !errors.As(err, &re) || !errors.Is(err, transport.ErrRouting) || !errors.Is(err, transport.ErrUnknownAgent) || re.To != "Ghost" {
		t.Fatalf("got %v, want a RoutingError for Ghost matching ErrRouting and ErrUnknownAgent", err)
	}
	s := assertBalanced(t, b)
	if s.Accepted != 1 || s.DeadLettersByReason[transport.ReasonReceiverNotFound] != 1 {
		t.Errorf("got accepted %d dead letters %v, want 1 receiver_not_found", s.Accepted, s.DeadLettersByReason)
	}
	if dl := b.DeadLetters(); len(dl) != 1 || dl[0].Message != m || dl[0].Attempts != 1 || dl[0].LastError != err.Error() {
		t.Errorf("got %+v, want the message dead-lettered with the routing error", dl)
	}
}

func TestBus_UnregisterDeadLettersQueuedAndWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A", "B"})
		mustSend(t, b, request("A", "B", "one"))
		mustSend(t, b, request("A", "B", "two"))
		if err := b.Register("C"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			_, err := b.ReceiveWait(t.Context(), "C")
			done <- err
		}()
		synctest.Wait()
		for _, id := range []string{"B", "C"} {
			if err := b.Unregister(id); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-done; !errors.Is(err, transport.ErrUnknownAgent) {
			t.Errorf("got %v from the waiter, want ErrUnknownAgent", err)
		}
		if err := b.Unregister("B"); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Errorf("got %v unregistering twice, want ErrUnknownAgent", err)
		}
		s := assertBalanced(t, b)
		if s.DeadLettersByReason[transport.ReasonReceiverNotFound] != 2 || s.Accepted != 2 {
			t.Errorf("got %v accepted %d, want 2 receiver_not_found of 2", s.DeadLettersByReason, s.Accepted)
		}
		if err := b.Register("B"); err != nil {
			t.Errorf("got %v registering B again, want nil", err)
		}
	})
}

func TestBus_ReceiveOrderAndMax(t *testing.T) {
	b := newBus(t, []string{"A"})
	prios := []transport.Priority{transport.PriorityLow, transport.PriorityCritical, transport.PriorityNormal, transport.PriorityHigh, transport.PriorityCritical, transport.PriorityLow}
	for i, p := range prios {
		m := request("X", "A", "x")
		m.MessageID, m.Priority = fmt.Sprintf("m%d", i), p
		mustSend(t, b, m)
	}
	first, err := b.Receive("A", 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m1", "m4", "m3"}; !slices.Equal(ids(first), want) {
		t.Errorf("got %v, want %v", ids(first), want)
	}
	select {
	case <-b.Ready("A"):
	default:
		t.Error("got no ready signal with messages left, want one")
	}
	if m, ok, err := b.TryReceive("A"); err != nil || !ok || m.MessageID != "m2" {
		t.Errorf("got %v %v %v, want m2", m, ok, err)
	}
	if rest := receiveAll(t, b, "A"); !slices.Equal(ids(rest), []string{"m0", "m5"}) {
		t.Errorf("got %v, want [m0 m5]", ids(rest))
	}
	if _, ok, err := b.TryReceive("A"); ok || err != nil {
		t.Errorf("got %v %v on an empty mailbox, want false nil", ok, err)
	}
	if _, err := b.Receive("Ghost", 0); !errors.Is(err, transport.ErrUnknownAgent) {
		t.Errorf("got %v, want ErrUnknownAgent", err)
	}
	if b.Ready("Ghost") != nil {
		t.Error("got a ready channel for an unknown agent, want nil")
	}
}

func TestBus_ReceiveWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A"})
		go func() {
			time.Sleep(time.Second)
			mustSend(t, b, request("X", "A", "late"))
		}()
		m, err := b.ReceiveWait(t.Context(), "A")
		if err != nil || m.Action() != "late" {
			t.Fatalf("got %v %v, want the late message", m, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := b.ReceiveWait(ctx, "A"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want the context's deadline", err)
		}
		go func() {
			time.Sleep(time.Second)
			_ = b.Close()
		}()
		if _, err := b.ReceiveWait(t.Context(), "A"); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("got %v, want ErrClosed", err)
		}
	})
}

func TestBus_ManyWaitersOneMailbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A"})
		got := make(chan string, 3)
		for range 3 {
			go func() {
				m, err := b.ReceiveWait(t.Context(), "A")
				if err != nil {
					t.Error(err)
					return
				}
				got <- m.Action()
			}()
		}
		synctest.Wait()
		for _, a := range []string{"a", "b", "c"} {
			mustSend(t, b, request("X", "A", a))
		}
		var actions []string
		for range 3 {
			actions = append(actions, <-got)
		}
		slices.Sort(actions)
		if !slices.Equal(actions, []string{"a", "b", "c"}) {
			t.Errorf("got %v, want every waiter served once", actions)
		}
	})
}

func TestBus_ExpiredMessagesMakeRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, nil)
		if err := b.Register("A", bus.WithMailboxCapacity(2)); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			m := request("X", "A", "short")
			m.TTL = time.Second
			mustSend(t, b, m)
		}
		time.Sleep(2 * time.Second)
		mustSend(t, b, request("X", "A", "fresh"))
		if got := receiveAll(t, b, "A"); len(got) != 1 || got[0].Action() != "fresh" {
			t.Errorf("got %v, want only the fresh message", got)
		}
		if s := assertBalanced(t, b); s.Expired != 2 {
			t.Errorf("got %d expired, want 2", s.Expired)
		}
	})
}

func TestBus_ExpirySweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A"}, bus.WithExpirySweep(time.Minute))
		m := request("X", "A", "short")
		m.TTL = 30 * time.Second
		mustSend(t, b, m)
		mustSend(t, b, request("X", "A", "long"))
		time.Sleep(61 * time.Second)
		s := assertBalanced(t, b)
		if s.Expired != 1 || depth(s, "A") != 1 {
			t.Errorf("got expired %d depth %d, want the sweep to purge 1 and keep 1", s.Expired, depth(s, "A"))
		}
	})
}

func TestBus_DeadLetterRequeueAndDiscard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A"})
		lost := request("A", "B", "retry me")
		_ = b.Send(t.Context(), lost)
		gone := request("A", "B", "forget me")
		_ = b.Send(t.Context(), gone)
		short := request("X", "A", "expired")
		short.TTL = time.Second
		mustSend(t, b, short)
		time.Sleep(2 * time.Second)
		receiveAll(t, b, "A")
		if got := len(b.DeadLetters()); got != 3 {
			t.Fatalf("got %d dead letters, want 3", got)
		}
		if err := b.Register("B"); err != nil {
			t.Fatal(err)
		}
		if err := b.Requeue(lost.MessageID); err != nil {
			t.Fatal(err)
		}
		if err := b.Requeue(short.MessageID); err != nil {
			t.Fatal(err)
		}
		if !short.Timestamp.Equal(time.Now()) {
			t.Errorf("got requeued timestamp %v, want now %v", short.Timestamp, time.Now())
		}
		if err := b.Discard(gone.MessageID); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{gone.MessageID, "nope"} {
			if err := b.Discard(id); !errors.Is(err, bus.ErrDeadLetterNotFound) {
				t.Errorf("got %v discarding %s, want ErrDeadLetterNotFound", err, id)
			}
			if err := b.Requeue(id); !errors.Is(err, bus.ErrDeadLetterNotFound) {
				t.Errorf("got %v requeueing %s, want ErrDeadLetterNotFound", err, id)
			}
		}
		if got := receiveAll(t, b, "B"); len(got) != 1 || got[0] != lost {
			t.Errorf("B got %v, want the requeued message", got)
		}
		if got := receiveAll(t, b, "A"); len(got) != 1 || got[0] != short {
			t.Errorf("A got %v, want the requeued expired message", got)
		}
		s := assertBalanced(t, b)
		if s.Requeued != 2 || s.Discarded != 1 || s.DeadLettersHeld != 0 || s.Accepted != 5 || s.DeadLettered != 3 {
			t.Errorf("got %+v, want 2 requeued 1 discarded 0 held 5 accepted 3 dead-lettered", s)
		}
	})
}

func TestBus_DeadLetterLimit(t *testing.T) {
	b := newBus(t, nil, bus.WithDeadLetterLimit(2))
	for i := range 3 {
		m := request("A", "Ghost", "x")
		m.MessageID = fmt.Sprintf("m%d", i)
		_ = b.Send(t.Context(), m)
	}
	dl := b.DeadLetters()
	if len(dl) != 2 || dl[0].Message.MessageID != "m1" || dl[1].Message.MessageID != "m2" {
		t.Errorf("got %+v, want the newest two", dl)
	}
	if s := assertBalanced(t, b); s.DeadLettered != 3 {
		t.Errorf("got %d dead-lettered, want all 3 counted", s.DeadLettered)
	}
}

func TestBus_DeterministicOnManualClock(t *testing.T) {
	run := func() []string {
		clk := clock.NewManual(time.Date(2025, 11, 16, 10, 0, 0, 0, time.UTC))
		n := 0
		b := bus.New(bus.WithClock(clk), bus.WithIDs(func() string { n++; return fmt.Sprintf("id-%d", n) }))
		defer b.Close()
		_ = b.Register("A")
		_ = b.Register("B")
		var out []string
		for i := range 3 {
			clk.Advance(time.Second)
			m := request("A", "B", fmt.Sprint(i))
			if err := b.Send(context.Background(), m); err != nil {
				return []string{err.Error()}
			}
			out = append(out, m.MessageID+"@"+m.Timestamp.Format(time.RFC3339))
		}
		return out
	}
	first, second := run(), run()
	want := []string{"id-1@2025-11-16T10:00:01Z", "id-2@2025-11-16T10:00:02Z", "id-3@2025-11-16T10:00:03Z"}
	if !slices.Equal(first, want) || !slices.Equal(second, want) {
		t.Errorf("got %v and %v, want %v twice", first, second, want)
	}
}

func TestBus_SendAllReportsEveryResult(t *testing.T) {
	b := newBus(t, []string{"A"})
	errs := b.SendAll(t.Context(), []*transport.Message{
		request("X", "A", "ok"),
		{From: "X", To: "A", Type: transport.MessageRequest},
		request("X", "Ghost", "lost"),
		request("X", "*", "all"),
	})
	// The bus has no broadcast (package feature's Broadcaster does): "*"
	// names no mailbox.
	if len(errs) != 4 || errs[0] != nil || !errors.Is(errs[1], transport.ErrValidation) || !errors.Is(errs[2], transport.ErrUnknownAgent) || !errors.Is(errs[3], transport.ErrUnknownAgent) {
		t.Errorf("got %v, want [nil validation routing routing]", errs)
	}
	if got := receiveAll(t, b, "A"); len(got) != 1 {
		t.Errorf("got %d messages, want the direct one", len(got))
	}
	assertBalanced(t, b)
}

func TestBus_Close(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New()
		if err := b.Register("A", bus.WithMailboxCapacity(1)); err != nil {
			t.Fatal(err)
		}
		fill(t, b, "A", 1)
		synctest.Wait()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("got %v closing twice, want nil", err)
		}
		for name, err := range map[string]error{
			"send":     b.Send(t.Context(), request("X", "A", "z")),
			"register": b.Register("B"),
			"requeue":  b.Requeue("x"),
		} {
			if !errors.Is(err, transport.ErrClosed) {
				t.Errorf("%s: got %v, want ErrClosed", name, err)
			}
		}
		if _, err := b.Receive("A", 0); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("got %v, want ErrClosed", err)
		}
		if s := b.Metrics(); !s.Balanced() || s.Queued != 1 {
			t.Errorf("got %+v, want balanced with 1 queued", s)
		}
	})
}

// A send stamps the wall time of the real clock, whether it reads the
// wall clock or derives it from the monotonic one (within a millisecond of
// the last reading): the same instant either way.
func TestBus_TimestampIsTheWallTimeOfTheSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A"})
		for _, wait := range []time.Duration{0, 300 * time.Microsecond, 600 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond, time.Hour} {
			time.Sleep(wait)
			m := request("B", "A", "stamp")
			mustSend(t, b, m)
			if now := time.Now(); m.Timestamp.Location() != time.UTC || !m.Timestamp.Equal(now) {
				t.Errorf("after %v: got timestamp %v, want %v in UTC", wait, m.Timestamp, now)
			}
			if _, ok, _ := b.TryReceive("A"); !ok {
				t.Fatalf("after %v: got no message, want it delivered", wait)
			}
		}
	})
}
