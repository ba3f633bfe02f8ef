package feature_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

// result is what a Request run in a goroutine returned.
type result struct {
	resp *transport.Message
	err  error
}

// requestAsync runs Request in a goroutine and returns where its result
// arrives.
func (r *routing) requestAsync(ctx context.Context, m *transport.Message, opts ...feature.RequestOption) <-chan result {
	out := make(chan result, 1)
	go func() {
		resp, err := r.req.Request(ctx, m, opts...)
		out <- result{resp, err}
	}()
	return out
}

func TestRequest_Timeouts(t *testing.T) {
	tests := []struct {
		name string
		opts []feature.RequestOption
		want time.Duration
	}{
		{"default", nil, feature.DefaultRequestTimeout},
		{"per request", []feature.RequestOption{feature.WithTimeout(2 * time.Second)}, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			onEach(t, func(t *testing.T, tr transport.Transport) {
				r := newRouting(t, tr, routingConfig{}, "HotelAgent", "PaymentAgent")
				req := routingRequest("HotelAgent", "PaymentAgent", "pay")
				done := r.requestAsync(t.Context(), req, tc.opts...)
				r.waitTimer(t)
				r.clock.Advance(tc.want - time.Nanosecond)
				if _, waiting := r.clock.NextDeadline(); !waiting {
					t.Fatalf("got the request given up before %v, want it waiting", tc.want)
				}
				r.clock.Advance(time.Nanosecond)
				res := <-done
				var te *transport.TimeoutError
				if !errors.As(res.err, &te) || !errors.Is(res.err, transport.ErrTimeout) || te.MessageID != req.MessageID || te.After != tc.want {
					t.Fatalf("got %v, want a TimeoutError for %s after %v", res.err, req.MessageID, tc.want)
				}
				// A reply after the timeout lands in the requester's mailbox.
				if err := r.req.Reply(t.Context(), req, &transport.Message{Content: map[string]any{"action": "late"}}); err != nil {
					t.Fatal(err)
				}
				if got := r.takeAll(t, "HotelAgent"); len(got) != 1 || got[0].InReplyTo != req.MessageID {
					t.Errorf("got %v, want the late reply in HotelAgent's mailbox", got)
				}
				if s := r.req.Stats(); s.TimedOut != 1 || s.Waiting != 0 {
					t.Errorf("got %+v, want 1 timed out and none waiting", s)
				}
				routingBalanced(t, tr)
			})
		})
	}
	t.Run("context deadline first", func(t *testing.T) {
		onEach(t, func(t *testing.T, tr transport.Transport) {
			r := newRouting(t, tr, routingConfig{}, "HotelAgent", "PaymentAgent")
			// The routing clock stands still: only the context's
			// deadline can end the wait.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			defer cancel()
			_, err := r.req.Request(ctx, routingRequest("HotelAgent", "PaymentAgent", "pay"))
			if !errors.Is(err, transport.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want a TimeoutError matching the context deadline", err)
			}
		})
	})
}

func TestRequest_CancelledAndRefused(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "A", "B")
		ctx, cancel := context.WithCancel(t.Context())
		done := r.requestAsync(ctx, routingRequest("A", "B", "x"))
		r.waitTimer(t)
		cancel()
		if res := <-done; !errors.Is(res.err, context.Canceled) || errors.Is(res.err, transport.ErrTimeout) {
			t.Errorf("got %v, want context.Canceled", res.err)
		}
		for name, to := range map[string]string{"broadcast": "*", "topic": "topic:x"} {
			if _, err := r.req.Request(t.Context(), routingRequest("A", to, "x")); !errors.Is(err, transport.ErrValidation) {
				t.Errorf("%s: got %v, want ErrValidation", name, err)
			}
		}
		if _, err := r.req.Request(t.Context(), routingRequest("A", "Ghost", "x")); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Errorf("got %v, want ErrUnknownAgent", err)
		}
		dup := routingRequest("A", "B", "x")
		dup.MessageID = "same"
		first := r.requestAsync(t.Context(), dup, feature.WithTimeout(time.Second))
		r.waitTimer(t)
		again := routingRequest("A", "B", "x")
		again.MessageID = "same"
		if _, err := r.req.Request(t.Context(), again); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v for a second request with the same id, want ErrValidation", err)
		}
		r.clock.Advance(time.Second)
		if res := <-first; !errors.Is(res.err, transport.ErrTimeout) {
			t.Errorf("got %v, want the first request timed out", res.err)
		}
		routingBalanced(t, tr)
	})
}

func TestRequest_ErrorResponseAndStrayReplies(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "A", "B", "C")
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			req, err := r.takeNext(t, "B")
			if err != nil {
				t.Error(err)
				return
			}
			// A reply from a third party to someone else does not answer the request.
			stray := &transport.Message{Type: transport.MessageResponse, From: "C", To: "C", InReplyTo: req.MessageID, Content: map[string]any{"action": "stray"}}
			if err := r.top().SendWork(t.Context(), stray); err != nil {
				t.Error(err)
			}
			if err := r.req.Reply(t.Context(), req, &transport.Message{Type: transport.MessageError, Content: map[string]any{"action": "failed", "error": "card declined"}}); err != nil {
				t.Error(err)
			}
		})
		resp, err := r.req.Request(t.Context(), routingRequest("A", "B", "pay"))
		if err != nil || resp.Type != transport.MessageError || resp.Content["error"] != "card declined" {
			t.Fatalf("got %v %v, want the ERROR response", resp, err)
		}
		wg.Wait()
		if got := r.takeAll(t, "C"); len(got) != 1 || got[0].Action() != "stray" {
			t.Errorf("got %v, want the stray reply delivered to C", got)
		}
		if err := r.req.Reply(t.Context(), nil, &transport.Message{}); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v, want ErrValidation for a nil request", err)
		}
		routingBalanced(t, tr)
	})
}

// TestRequest_SendFailsAfterRequeuedCopyAnswered fails a Request's send on
// a full mailbox, and while the send gives up (in the dead-letter
// callback, which runs before the send returns) requeues the dead letter
// and answers it. The answer was handed to the waiting Request: Request
// must return it rather than the send's error. It runs on the bus only:
// natsbus neither calls its dead-letter callbacks before the send returns
// nor requeues dead letters.
func TestRequest_SendFailsAfterRequeuedCopyAnswered(t *testing.T) {
	b := newBus(t, bus.WithDefaultMailboxCapacity(1))
	r := newRouting(t, b, routingConfig{}, "B")
	r.mustSend(t, routingNotice("X", "B", "filler"))
	done := false
	cancel := b.OnDeadLetter(func(d transport.DeadLetter) {
		if done || d.Reason != transport.ReasonQueueOverflow {
			return
		}
		done = true
		r.takeOne(t, "B") // the filler: room for the requeued copy
		if err := b.Requeue(d.Message.MessageID); err != nil {
			t.Errorf("requeue: got %v, want nil", err)
			return
		}
		got := r.takeOne(t, "B")
		if err := r.req.Reply(t.Context(), got, &transport.Message{Content: map[string]any{"action": "answer"}}); err != nil {
			t.Errorf("reply: got %v, want nil", err)
		}
	})
	defer cancel()

	resp, err := r.req.Request(t.Context(), routingRequest("A", "B", "ask"))
	if !done {
		t.Fatal("got no queue overflow, want the request dead-lettered first")
	}
	if err != nil || resp == nil || resp.Action() != "answer" {
		t.Fatalf("got %v, %v, want the answer the requeued copy received", resp, err)
	}
	s := routingBalanced(t, b)
	// Delivered by the bus: the filler, the requeued request; the answer
	// went to the waiting Request.
	if s.Delivered != 2 || r.req.Stats().Answered != 1 {
		t.Errorf("got %d delivered, %d answered, want 2 and 1", s.Delivered, r.req.Stats().Answered)
	}
}

func TestRequest_Close(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "A")
		done := r.requestAsync(t.Context(), routingRequest("X", "A", "q"))
		r.waitTimer(t)
		if err := r.req.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.req.Close(); err != nil {
			t.Fatalf("got %v closing twice, want nil", err)
		}
		if res := <-done; !errors.Is(res.err, transport.ErrClosed) {
			t.Errorf("got %v from the waiting request, want ErrClosed", res.err)
		}
		if _, err := r.req.Request(t.Context(), routingRequest("X", "A", "q")); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("got %v from a request after Close, want ErrClosed", err)
		}
	})
}

func TestRequestResponseCorrelation(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "HotelAgent", "PaymentAgent")
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			req, err := r.takeNext(t, "PaymentAgent")
			if err != nil {
				t.Error(err)
				return
			}
			r.clock.Advance(20 * time.Millisecond) // the payment agent works
			if err := r.req.Reply(t.Context(), req, &transport.Message{Content: map[string]any{"action": "payment_processed"}}); err != nil {
				t.Error(err)
			}
		})
		req := routingRequest("HotelAgent", "PaymentAgent", "process_payment")
		req.CorrelationID = "cor_123"
		resp, err := r.req.Request(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.CorrelationID != "cor_123" || resp.Type != transport.MessageResponse || resp.From != "PaymentAgent" || resp.To != "HotelAgent" {
			t.Errorf("got %+v, want a RESPONSE from PaymentAgent to HotelAgent with correlation_id cor_123", resp)
		}
		if resp.InReplyTo != req.MessageID || resp.ConversationID != req.ConversationID {
			t.Errorf("got in_reply_to %q conversation %q, want %q %q", resp.InReplyTo, resp.ConversationID, req.MessageID, req.ConversationID)
		}
		routingBalanced(t, tr)
		if s := r.req.Stats().RoundTrip; s.Count != 1 || s.P95 != 20*time.Millisecond {
			t.Errorf("got round trip %+v, want one sample of 20ms", s)
		}
	})
}

func TestCommunicationMetrics(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		agents := []string{"Orchestrator", "FlightAgent", "HotelAgent", "PaymentAgent", "NotificationAgent"}
		r := newRouting(t, tr, routingConfig{}, agents...)
		var wg sync.WaitGroup
		wg.Go(func() { // the payment agent answers 50 requests
			for range 50 {
				req, err := r.takeNext(t, "PaymentAgent")
				if err != nil {
					t.Error(err)
					return
				}
				r.clock.Advance(5 * time.Millisecond)
				if err := r.req.Reply(t.Context(), req, &transport.Message{Content: map[string]any{"action": "paid"}}); err != nil {
					t.Error(err)
				}
			}
		})
		for range 50 {
			if _, err := r.req.Request(t.Context(), routingRequest("HotelAgent", "PaymentAgent", "pay")); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for i := range 150 {
			r.mustSend(t, &transport.Message{Type: transport.MessageHandoff, From: agents[i%2], To: "FlightAgent", Content: map[string]any{"action": "search"}})
		}
		for i := range 750 {
			r.mustSend(t, routingNotice("Orchestrator", agents[1+i%4], "notify"))
		}
		for _, a := range agents {
			r.takeAll(t, a)
		}
		// The 50 answers went straight to their requests, not through the
		// transport: together they make the scenario's 1000 messages.
		s := routingBalanced(t, tr)
		rs := r.req.Stats()
		if s.Accepted+rs.Answered != 1000 || s.Delivered+rs.Answered != 1000 {
			t.Errorf("got sent %d received %d answered %d, want 1000 sent and received in all", s.Accepted, s.Delivered, rs.Answered)
		}
		if b, ok := tr.(*bus.Bus); ok && b.Metrics().Handoffs != 150 {
			t.Errorf("got %d hand-offs, want 150", b.Metrics().Handoffs)
		}
		if rs.RoundTrip.Count != 50 || rs.RoundTrip.P50 != 5*time.Millisecond || rs.RoundTrip.P95 != 5*time.Millisecond {
			t.Errorf("got round trip %+v, want 50 samples of 5ms", rs.RoundTrip)
		}
		if s.DropRate() >= 0.001 {
			t.Errorf("got drop rate %v, want under 0.1%%", s.DropRate())
		}
	})
}

func TestCommFlow_Query_ShorterDefaultTimeout(t *testing.T) {
	tests := []struct {
		typ  transport.MessageType
		set  feature.RequestSettings
		want time.Duration
	}{
		{transport.MessageQuery, feature.RequestSettings{}, feature.DefaultQueryTimeout},
		{transport.MessageRequest, feature.RequestSettings{}, feature.DefaultRequestTimeout},
		{transport.MessageQuery, feature.RequestSettings{QueryTimeout: 5 * time.Second}, 5 * time.Second},
	}
	if feature.DefaultQueryTimeout != 30*time.Second || feature.DefaultQueryTimeout >= feature.DefaultRequestTimeout {
		t.Fatalf("got query %v request %v, want 30s and a longer request timeout", feature.DefaultQueryTimeout, feature.DefaultRequestTimeout)
	}
	for _, tc := range tests {
		t.Run(string(tc.typ), func(t *testing.T) {
			onEach(t, func(t *testing.T, tr transport.Transport) {
				r := newRouting(t, tr, routingConfig{req: tc.set}, "registry")
				q := &transport.Message{Type: tc.typ, From: "lead", To: "registry", Content: map[string]any{"action": "who_can_review"}}
				done := r.requestAsync(t.Context(), q)
				r.waitTimer(t)
				at, _ := r.clock.NextDeadline()
				if got := at.Sub(r.clock.Now()); got != tc.want {
					t.Errorf("got the request waiting %v, want %v", got, tc.want)
				}
				r.clock.Advance(tc.want)
				if res := <-done; !errors.Is(res.err, transport.ErrTimeout) {
					t.Errorf("got %v, want a timeout", res.err)
				}
			})
		})
	}
}

func TestCommFlow_Query_NotificationExpectsNoReply(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "lead")
		for _, typ := range []transport.MessageType{transport.MessageNotification, transport.MessageBroadcast, transport.MessageAck, transport.MessageError} {
			m := &transport.Message{Type: typ, From: "x", To: "lead", InReplyTo: "y", Content: map[string]any{"action": "fyi"}}
			_, err := r.req.Request(t.Context(), m)
			var ve *transport.ValidationError
			if !errors.As(err, &ve) || ve.Field != "message_type" {
				t.Errorf("%s: got %v, want a ValidationError on message_type", typ, err)
			}
		}
		r.mustSend(t, routingNotice("x", "lead", "fyi")) // a notification is simply sent
		if got := r.takeAll(t, "lead"); len(got) != 1 || got[0].Action() != "fyi" {
			t.Errorf("got %v, want only the notification (the refused requests were not sent)", routingActions(got))
		}
		routingBalanced(t, tr)
	})
}

func TestCommFlow_Idempotency_RequestDuplicateError(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "payment")
		first := routingRequest("checkout", "payment", "charge")
		first.IdempotencyKey = "order-7"
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			m, err := r.takeNext(t, "payment")
			if err == nil {
				_ = r.req.Reply(t.Context(), m, &transport.Message{Content: map[string]any{"action": "charged"}})
			}
		})
		if _, err := r.req.Request(t.Context(), first); err != nil {
			t.Fatal(err)
		}
		again := routingRequest("checkout", "payment", "charge")
		again.IdempotencyKey = "order-7"
		_, err := r.req.Request(t.Context(), again)
		var de *transport.DuplicateError
		if !errors.As(err, &de) || !errors.Is(err, transport.ErrDuplicate) || de.DuplicateOf != first.MessageID {
			t.Fatalf("got %v, want a DuplicateError of %s", err, first.MessageID)
		}
	})
}

// TestRequest_RejectedEndsTheRequest rejects a request that requires an
// acknowledgement: the waiting Request returns the ERROR at once, though
// its requester has no mailbox to receive a notice in.
func TestRequest_RejectedEndsTheRequest(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "B")
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			m, err := r.takeNext(t, "B")
			if err != nil {
				t.Error(err)
				return
			}
			if err := r.req.Reject(t.Context(), m, "no capacity"); err != nil {
				t.Error(err)
			}
		})
		req := routingRequest("A", "B", "work")
		req.RequiresAck = true
		// The routing clock stands still: without the ERROR only this
		// context would end the wait.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := r.req.Request(ctx, req)
		if err != nil || resp.Type != transport.MessageError || resp.Action() != "rejected" || resp.Content["error"] != "no capacity" || resp.InReplyTo != req.MessageID {
			t.Fatalf("got %+v %v, want the ERROR of the rejection", resp, err)
		}
		wg.Wait()
		if s := routingBalanced(t, tr); s.DeadLettersByReason[transport.ReasonRejected] != 1 {
			t.Errorf("got dead letters %v, want the request rejected", s.DeadLettersByReason)
		}
	})
}

// stalled is a transport whose sends wait for their context to end, as a
// natsbus send waits for a server that does not answer.
type stalled struct{ transport.Transport }

func (s stalled) SendWork(ctx context.Context, _ *transport.Message) error {
	<-ctx.Done()
	return fmt.Errorf("send: %w", ctx.Err())
}

// TestRequest_DeadlineDuringSendIsATimeout lets the context's deadline
// pass while the request is being sent: Request reports it as the timeout
// it is, not as a failed send.
func TestRequest_DeadlineDuringSendIsATimeout(t *testing.T) {
	req := feature.NewRequests(stalled{newBus(t)}, feature.RequestSettings{}, nil)
	defer req.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	_, err := req.Request(ctx, routingRequest("A", "B", "pay"))
	var te *transport.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, transport.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a TimeoutError caused by the context deadline", err)
	}
	if s := req.Stats(); s.Waiting != 0 || s.TimedOut != 1 {
		t.Errorf("got %+v, want none waiting and 1 timed out", s)
	}
}
