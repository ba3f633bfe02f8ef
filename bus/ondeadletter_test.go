package bus_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// TestBus_OnDeadLetter_ReportsEveryReason checks that a subscriber hears of
// every message the bus dead-letters, whatever the reason, with a copy of the
// message it may keep, and nothing after it cancels.
func TestBus_OnDeadLetter_ReportsEveryReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A"}, bus.WithAckTimeout(time.Second), bus.WithMaxDeliveries(1))
		if err := b.Register("B", bus.WithMailboxCapacity(1)); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []transport.DeadLetter
		cancel := b.OnDeadLetter(func(d transport.DeadLetter) {
			mu.Lock()
			got = append(got, d)
			mu.Unlock()
		})

		// queue_overflow: B holds one message.
		mustSend(t, b, request("A", "B", "filler"))
		if err := b.Send(t.Context(), request("A", "B", "overflow")); !errors.Is(err, transport.ErrQueueFull) {
			t.Fatalf("got %v, want ErrQueueFull", err)
		}
		// receiver_not_found.
		if err := b.Send(t.Context(), request("A", "nobody", "lost")); err == nil {
			t.Fatal("a send to an unknown agent succeeded")
		}
		// rejected: the receiver refuses an acked message.
		mustReceiveOne(t, b, "B")
		mustSend(t, b, ackable("A", "B", "refused"))
		m := mustReceiveOne(t, b, "B")
		if err := b.Reject(t.Context(), m, "no thanks"); err != nil {
			t.Fatal(err)
		}
		// max_retries: an acked message never acknowledged.
		mustSend(t, b, ackable("A", "B", "unacked"))
		mustReceiveOne(t, b, "B")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		// ttl_expired.
		short := request("A", "B", "short")
		short.TTL = time.Second
		mustSend(t, b, short)
		time.Sleep(2 * time.Second)
		if msgs, err := b.Receive("B", 10); err != nil || len(msgs) != 0 {
			t.Fatalf("got %d messages (%v), want the expired one gone", len(msgs), err)
		}

		mu.Lock()
		reasons := make([]string, 0, len(got))
		actions := make([]string, 0, len(got))
		for _, d := range got {
			reasons = append(reasons, string(d.Reason))
			actions = append(actions, d.Message.Action())
		}
		mu.Unlock()
		want := []string{"queue_overflow", "receiver_not_found", "rejected", "max_retries", "ttl_expired"}
		if !slices.Equal(reasons, want) {
			t.Fatalf("got reasons %v (actions %v), want %v", reasons, actions, want)
		}
		if wantActions := []string{"overflow", "lost", "refused", "unacked", "short"}; !slices.Equal(actions, wantActions) {
			t.Fatalf("got actions %v, want %v", actions, wantActions)
		}
		if n := len(b.DeadLetters()); n != len(want) {
			t.Fatalf("the queue holds %d dead letters, want %d", n, len(want))
		}

		cancel()
		if err := b.Send(t.Context(), request("A", "nobody", "after")); err == nil {
			t.Fatal("a send to an unknown agent succeeded")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != len(want) {
			t.Fatalf("a cancelled subscriber heard of %d more dead letters", len(got)-len(want))
		}
	})
}

func TestBus_NilSubscribersAreIgnored(t *testing.T) {
	b := newBus(t, []string{"A"})
	b.OnDeadLetter(nil)()
	if err := b.Send(t.Context(), request("A", "nobody", "lost")); err == nil {
		t.Fatal("a send to an unknown agent succeeded")
	}
	if n := len(b.DeadLetters()); n != 1 {
		t.Fatalf("got %d dead letters, want 1", n)
	}
}

func TestBus_DeadLetterWorkAcceptsAndDeadLetters(t *testing.T) {
	b := newBus(t, []string{"A"})
	var got []transport.DeadLetter
	b.OnDeadLetter(func(d transport.DeadLetter) { got = append(got, d) })
	m := request("X", "A", "y")
	if err := b.DeadLetterWork(t.Context(), m, transport.ReasonMaxRetries, 4, "bus: A queue full"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeadLetterWork(t.Context(), request("X", "Ghost", "z"), transport.ReasonMaxRetries, 2, "full"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeadLetterWork(t.Context(), &transport.Message{From: "X", To: "A"}, transport.ReasonMaxRetries, 1, ""); !errors.Is(err, transport.ErrValidation) {
		t.Errorf("got %v for an invalid message, want ErrValidation", err)
	}
	if len(got) != 2 || got[0].Message.MessageID != m.MessageID || got[0].Reason != transport.ReasonMaxRetries || got[0].Attempts != 4 || got[0].LastError != "bus: A queue full" {
		t.Fatalf("got %+v, want the two letters, the first of m after 4 attempts", got)
	}
	s := assertBalanced(t, b)
	if s.Accepted != 2 || s.DeadLettersByReason[transport.ReasonMaxRetries] != 2 || s.ValidationErrors != 1 || s.Agents[0].DeadLettered != 1 {
		t.Errorf("got %+v, want 2 accepted and dead-lettered max_retries, one of them A's, and 1 refused", s)
	}
}
