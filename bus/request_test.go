package bus_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

func TestRequest_Timeouts(t *testing.T) {
	tests := []struct {
		name    string
		opts    []bus.SendOption
		ctxWait time.Duration
		want    time.Duration
		cause   error
	}{
		{"bus default", nil, 0, bus.DefaultRequestTimeout, nil},
		{"per request", []bus.SendOption{bus.WithTimeout(2 * time.Second)}, 0, 2 * time.Second, nil},
		{"context deadline first", nil, 5 * time.Second, 5 * time.Second, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBus(t, []string{"HotelAgent", "PaymentAgent"})
				ctx := t.Context()
				if tc.ctxWait > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxWait)
					defer cancel()
				}
				start := time.Now()
				req := request("HotelAgent", "PaymentAgent", "pay")
				_, err := b.Request(ctx, req, tc.opts...)
				var te *transport.TimeoutError
				if !errors.As(err, &te) || !errors.Is(err, transport.ErrTimeout) || te.MessageID != req.MessageID {
					t.Fatalf("got %v, want a TimeoutError for %s", err, req.MessageID)
				}
				if got := time.Since(start); got != tc.want {
					t.Errorf("got timeout after %v, want %v", got, tc.want)
				}
				if tc.cause != nil && !errors.Is(err, tc.cause) {
					t.Errorf("got %v, want it to match %v", err, tc.cause)
				}
				// A reply after the timeout lands in the requester's mailbox.
				if err := b.Reply(t.Context(), req, &transport.Message{Content: map[string]any{"action": "late"}}); err != nil {
					t.Fatal(err)
				}
				if got := receiveAll(t, b, "HotelAgent"); len(got) != 1 || got[0].InReplyTo != req.MessageID {
					t.Errorf("got %v, want the late reply in HotelAgent's mailbox", got)
				}
				assertBalanced(t, b)
			})
		})
	}
}

func TestRequest_CancelledAndRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A", "B"})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		if _, err := b.Request(ctx, request("A", "B", "x")); !errors.Is(err, context.Canceled) || errors.Is(err, transport.ErrTimeout) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		for name, to := range map[string]string{"broadcast": "*", "topic": "topic:x"} {
			if _, err := b.Request(t.Context(), request("A", to, "x")); !errors.Is(err, transport.ErrValidation) {
				t.Errorf("%s: got %v, want ErrValidation", name, err)
			}
		}
		if _, err := b.Request(t.Context(), request("A", "Ghost", "x")); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Errorf("got %v, want ErrUnknownAgent", err)
		}
		dup := request("A", "B", "x")
		dup.MessageID = "same"
		go func() { _, _ = b.Request(t.Context(), dup, bus.WithTimeout(time.Second)) }()
		synctest.Wait()
		again := request("A", "B", "x")
		again.MessageID = "same"
		if _, err := b.Request(t.Context(), again); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v for a second request with the same id, want ErrValidation", err)
		}
		time.Sleep(2 * time.Second)
		assertBalanced(t, b)
	})
}

func TestRequest_ErrorResponseAndStrayReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"A", "B", "C"})
		go func() {
			req, err := b.ReceiveWait(t.Context(), "B")
			if err != nil {
				t.Error(err)
				return
			}
			// A reply from a third party to someone else does not answer the request.
			stray := &transport.Message{Type: transport.MessageResponse, From: "C", To: "C", InReplyTo: req.MessageID, Content: map[string]any{"action": "stray"}}
			if err := b.Send(t.Context(), stray); err != nil {
				t.Error(err)
			}
			if err := b.Reply(t.Context(), req, &transport.Message{Type: transport.MessageError, Content: map[string]any{"action": "failed", "error": "card declined"}}); err != nil {
				t.Error(err)
			}
		}()
		resp, err := b.Request(t.Context(), request("A", "B", "pay"))
		if err != nil || resp.Type != transport.MessageError || resp.Content["error"] != "card declined" {
			t.Fatalf("got %v %v, want the ERROR response", resp, err)
		}
		if got := receiveAll(t, b, "C"); len(got) != 1 || got[0].Action() != "stray" {
			t.Errorf("got %v, want the stray reply delivered to C", got)
		}
		if err := b.Reply(t.Context(), nil, &transport.Message{}); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v, want ErrValidation for a nil request", err)
		}
		assertBalanced(t, b)
	})
}
