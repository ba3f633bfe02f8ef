package feature_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// Sender retries run on both transports with a manual clock: each test
// sends in a goroutine, waits until the retry's timer is set, and moves
// the clock past it.

// newRetry returns tr with sender retries on schedule (nil: the default),
// closed when the test ends, and its clock.
func newRetry(t *testing.T, tr transport.Transport, schedule ...time.Duration) (*feature.Retry, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(recT0)
	r := feature.NewRetry(tr, feature.RetrySettings{Schedule: schedule}, clk)
	t.Cleanup(func() { _ = r.Close() })
	return r, clk
}

// sendAsync sends m through r in a goroutine and returns its result's
// channel.
func sendAsync(ctx context.Context, r *feature.Retry, m *transport.Message) <-chan error {
	done := make(chan error, 1)
	go func() { done <- r.SendWork(ctx, m) }()
	return done
}

// advanceTo waits for the retry's next timer, checks it is due at want
// after recT0, and moves the clock there.
func advanceTo(t *testing.T, clk *clock.Manual, want time.Duration) {
	t.Helper()
	if at := waitTimer(t, clk); at.Sub(recT0) != want {
		t.Fatalf("got a retry due after %v, want %v", at.Sub(recT0), want)
	}
	clk.Set(recT0.Add(want))
}

func TestMessageQueueFull(t *testing.T) {
	t.Run("retried on 100ms 500ms 2s and sent once the queue clears", func(t *testing.T) {
		onEach(t, func(t *testing.T, tr transport.Transport) {
			openBox(t, tr, "PaymentAgent", 3)
			fillBox(t, tr, "PaymentAgent", 3)
			r, clk := newRetry(t, tr)
			dead := collectDead(t, tr)
			done := sendAsync(t.Context(), r, recWork("FlightAgent", "PaymentAgent", "process_payment"))
			advanceTo(t, clk, 100*time.Millisecond) // retry 1: still full
			waitTimer(t, clk)
			drain(t, tr, "PaymentAgent", 2) // the payment agent drains between retries 1 and 2
			advanceTo(t, clk, 600*time.Millisecond)
			if err := <-done; err != nil {
				t.Fatalf("got %v, want the retried send to succeed", err)
			}
			if st := r.Stats(); st.Retries != 2 || st.Retrying != 0 || st.GaveUp != 0 {
				t.Errorf("got %+v, want 2 retries and nothing waiting or given up", st)
			}
			if s := checkBalanced(t, tr); s.DeadLettered != 0 || len(dead.all()) != 0 || s.Accepted != 4 {
				t.Errorf("got %d dead letters of %d accepted, want none of 4: a refused offer leaves no trace", s.DeadLettered, s.Accepted)
			}
		})
	})
}

func TestParallelMessages(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		agents := []string{"FlightAgent", "HotelAgent", "CarAgent"}
		msgs := make([]*transport.Message, len(agents))
		for i, a := range agents {
			openBox(t, tr, a, 1)
			fillBox(t, tr, a, 1) // every mailbox is full: each message needs a retry
			msgs[i] = recWork("Orchestrator", a, "search")
		}
		r, clk := newRetry(t, tr)
		done := make(chan []error, 1)
		go func() { done <- r.SendAll(t.Context(), msgs) }()
		waitTimer(t, clk)
		if st := r.Stats(); st.Retrying != 3 {
			t.Errorf("got %d sends waiting, want all 3", st.Retrying)
		}
		for _, a := range agents {
			drain(t, tr, a, 1)
		}
		advanceTo(t, clk, 100*time.Millisecond) // one wait for all three: they retry together
		for i, err := range <-done {
			if err != nil {
				t.Errorf("message %d: got %v, want nil", i, err)
			}
		}
		for _, a := range agents {
			if got := takeN(t, tr, a, 1); got[0].Action() != "search" {
				t.Errorf("%s got %q, want the parallel message", a, got[0].Action())
			}
		}
		if st := r.Stats(); st.Retries != 3 || st.Retrying != 0 {
			t.Errorf("got %+v, want 3 retries, none waiting", st)
		}
		checkBalanced(t, tr)
	})
}

func TestMessageRetryWithBackoff(t *testing.T) {
	t.Run("success on the fourth attempt", func(t *testing.T) {
		onEach(t, func(t *testing.T, tr transport.Transport) {
			openBox(t, tr, "PaymentAgent", 1)
			fillBox(t, tr, "PaymentAgent", 1)
			r, clk := newRetry(t, tr)
			m := recWork("FlightAgent", "PaymentAgent", "process_payment")
			done := sendAsync(t.Context(), r, m)
			advanceTo(t, clk, 100*time.Millisecond)
			advanceTo(t, clk, 600*time.Millisecond)
			waitTimer(t, clk)
			drain(t, tr, "PaymentAgent", 1) // clears between attempts 3 (600ms) and 4 (2600ms)
			advanceTo(t, clk, 2600*time.Millisecond)
			if err := <-done; err != nil {
				t.Fatalf("got %v, want delivery on the fourth attempt", err)
			}
			if got := takeN(t, tr, "PaymentAgent", 1); got[0].MessageID != m.MessageID {
				t.Errorf("got %s, want the message %s delivered", got[0].MessageID, m.MessageID)
			}
			if st := r.Stats(); st.Retries != 3 {
				t.Errorf("got %d retries, want 3", st.Retries)
			}
			checkBalanced(t, tr)
		})
	})
	t.Run("dead-lettered max_retries when it never fits", func(t *testing.T) {
		onEach(t, func(t *testing.T, tr transport.Transport) {
			openBox(t, tr, "PaymentAgent", 1)
			fillBox(t, tr, "PaymentAgent", 1)
			r, clk := newRetry(t, tr)
			dead := collectDead(t, tr)
			done := sendAsync(t.Context(), r, recWork("FlightAgent", "PaymentAgent", "process_payment"))
			advanceTo(t, clk, 100*time.Millisecond)
			advanceTo(t, clk, 600*time.Millisecond)
			advanceTo(t, clk, 2600*time.Millisecond)
			err := <-done
			var full *transport.QueueFullError
			if !errors.As(err, &full) || full.Attempts != 4 {
				t.Fatalf("got %v, want a QueueFullError after 4 attempts", err)
			}
			dl := dead.all()
			if len(dl) != 1 || dl[0].Reason != transport.ReasonMaxRetries || dl[0].Attempts != 4 || !strings.Contains(dl[0].LastError, "PaymentAgent queue full") {
				t.Errorf("got dead letters %+v, want one max_retries after 4 attempts", dl)
			}
			s := checkBalanced(t, tr)
			if s.DeadLettersByReason[transport.ReasonMaxRetries] != 1 || s.DeadLettered != 1 || s.Accepted != 2 {
				t.Errorf("got %d accepted, dead letters %v, want 2 accepted and 1 max_retries", s.Accepted, s.DeadLettersByReason)
			}
			if st := r.Stats(); st.GaveUp != 1 || st.Retries != 3 {
				t.Errorf("got %+v, want 3 retries and 1 given up", st)
			}
		})
	})
	t.Run("custom schedule and cancelled context", func(t *testing.T) {
		onEach(t, func(t *testing.T, tr transport.Transport) {
			openBox(t, tr, "PaymentAgent", 1)
			fillBox(t, tr, "PaymentAgent", 1)
			r, clk := newRetry(t, tr, time.Second, time.Second)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := sendAsync(ctx, r, recWork("FlightAgent", "PaymentAgent", "x"))
			advanceTo(t, clk, time.Second)
			waitTimer(t, clk)
			cancel() // half-way through the second wait
			err := <-done
			if !errors.Is(err, transport.ErrQueueFull) || !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want queue full and the context's end", err)
			}
			if s := checkBalanced(t, tr); r.Stats().Retries != 1 || s.DeadLettersByReason[transport.ReasonQueueOverflow] != 1 {
				t.Errorf("got retries %d dead letters %v, want 1 retry and 1 queue_overflow", r.Stats().Retries, s.DeadLettersByReason)
			}
		})
	})
}

func TestBus_RetryOnManualClock(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		openBox(t, tr, "A", 1)
		fillBox(t, tr, "A", 1)
		r, clk := newRetry(t, tr)
		done := sendAsync(context.Background(), r, recWork("X", "A", "y"))
		waitTimer(t, clk) // the first retry is scheduled
		clk.Advance(100 * time.Millisecond)
		waitTimer(t, clk) // the second retry is scheduled
		drain(t, tr, "A", 1)
		clk.Advance(500 * time.Millisecond)
		if err := <-done; err != nil {
			t.Fatalf("got %v, want the retry to succeed", err)
		}
		checkBalanced(t, tr)
	})
}

func TestRetry_CloseStopsWaitingSends(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		openBox(t, tr, "A", 1)
		fillBox(t, tr, "A", 1)
		r, clk := newRetry(t, tr)
		done := sendAsync(t.Context(), r, recWork("X", "A", "y"))
		waitTimer(t, clk)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("got %v closing twice, want nil", err)
		}
		if err := <-done; !errors.Is(err, transport.ErrClosed) || !errors.Is(err, transport.ErrQueueFull) {
			t.Errorf("got %v from the retrying send, want ErrClosed and ErrQueueFull", err)
		}
		if err := r.SendWork(t.Context(), recWork("X", "A", "z")); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("got %v after Close, want ErrClosed", err)
		}
		if s := checkBalanced(t, tr); s.DeadLettersByReason[transport.ReasonQueueOverflow] != 1 || s.Queued != 1 {
			t.Errorf("got queued %d dead letters %v, want the filler queued and 1 queue_overflow", s.Queued, s.DeadLettersByReason)
		}
	})
}

// TestRetry_WithoutOffersEachRefusalIsADeadLetter runs on the bus only: it
// hides the bus's OfferWork and DeadLetterWork behind a plain
// transport.Transport, which natsbus would show just the same.
func TestRetry_WithoutOffersEachRefusalIsADeadLetter(t *testing.T) {
	b := newBus(t)
	var tr transport.Transport = struct{ transport.Transport }{b}
	openBox(t, tr, "A", 1)
	fillBox(t, tr, "A", 1)
	r, clk := newRetry(t, tr, time.Second)
	done := sendAsync(t.Context(), r, recWork("X", "A", "y"))
	advanceTo(t, clk, time.Second)
	if err := <-done; !errors.Is(err, transport.ErrQueueFull) {
		t.Fatalf("got %v, want ErrQueueFull", err)
	}
	if s := checkBalanced(t, b); s.DeadLettersByReason[transport.ReasonQueueOverflow] != 2 || s.DeadLettersByReason[transport.ReasonMaxRetries] != 0 {
		t.Errorf("got dead letters %v, want one queue_overflow per attempt", s.DeadLettersByReason)
	}
}

// TestRetry_AccountingUnderLoad runs concurrent senders through Retry
// (on the real clock, with waits of a millisecond) against small mailboxes
// that receivers drain meanwhile: every message ends taken or
// dead-lettered "max_retries" once, Retry's counts agree with the
// transport's, and its accounting adds up.
func TestRetry_AccountingUnderLoad(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		const senders, perSender = 4, 40
		agents := []string{"A", "B"}
		for _, a := range agents {
			openBox(t, tr, a, 2)
		}
		dead := collectDead(t, tr)
		r := feature.NewRetry(tr, feature.RetrySettings{Schedule: []time.Duration{time.Millisecond, time.Millisecond}}, nil)
		defer r.Close()
		ctx, stop := context.WithCancel(t.Context())
		var taken atomic.Int64
		var receivers sync.WaitGroup
		for _, a := range agents {
			receivers.Go(func() {
				for ctx.Err() == nil {
					ms, err := tr.TakeWork(ctx, a, 1)
					if err != nil {
						return
					}
					taken.Add(int64(len(ms)))
					if len(ms) == 0 {
						time.Sleep(100 * time.Microsecond) // the bus's TakeWork does not wait
					}
				}
			})
		}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for s := range senders {
			wg.Go(func() {
				for i := range perSender {
					err := r.SendWork(t.Context(), recWork("S", agents[(s+i)%2], fmt.Sprintf("w%d-%d", s, i)))
					switch {
					case err == nil:
					case errors.Is(err, transport.ErrQueueFull):
						failed.Add(1)
					default:
						t.Errorf("got %v, want nil or ErrQueueFull", err)
					}
				}
			})
		}
		wg.Wait()
		for range 2000 { // the receivers take what is left
			if s := tr.Metrics(); s.Queued == 0 && s.InFlight == 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		stop()
		receivers.Wait()
		st := r.Stats()
		if st.Retrying != 0 || st.GaveUp != uint64(failed.Load()) {
			t.Errorf("got %+v, want none waiting and %d given up", st, failed.Load())
		}
		if n := len(dead.all()); n != int(failed.Load()) {
			t.Errorf("got %d dead letters, want one per send given up (%d)", n, failed.Load())
		}
		s := checkBalanced(t, tr)
		if got := taken.Load() + failed.Load(); got != senders*perSender || s.DeadLettersByReason[transport.ReasonMaxRetries] != uint64(failed.Load()) {
			t.Errorf("got %d taken + %d given up, dead letters %v, want %d sends each taken or dead once", taken.Load(), failed.Load(), s.DeadLettersByReason, senders*perSender)
		}
		t.Logf("taken %d, given up %d, retries %d", taken.Load(), failed.Load(), st.Retries)
	})
}

// TestRetry_BroadcastsAreSentOnce runs on the bus only: natsbus carries
// no broadcasts. A broadcast that meets one full mailbox is not sent again
// (to the others, who have their copy).
func TestRetry_BroadcastsAreSentOnce(t *testing.T) {
	b := newBus(t)
	openBox(t, b, "A", 1)
	openBox(t, b, "B", 1)
	fillBox(t, b, "A", 1)
	r, clk := newRetry(t, b)
	done := sendAsync(t.Context(), r, recWork("X", transport.BroadcastAll, "all"))
	for sent := false; !sent; {
		select {
		case <-done:
			sent = true
		default:
			if _, ok := clk.NextDeadline(); ok {
				t.Fatal("got a retry scheduled for a broadcast, want it sent once")
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	if st := r.Stats(); st.Retries != 0 || st.Retrying != 0 {
		t.Errorf("got %+v, want no retry of a broadcast", st)
	}
	if ms, _ := b.TakeWork(t.Context(), "B", 0); len(ms) > 1 {
		t.Errorf("got %d messages for B, want the broadcast once at most", len(ms))
	}
}
