package bus_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// TestRequest_SendFailsAfterRequeuedCopyAnswered fails a Request's send on
// a full mailbox, and while the send gives up (in the dead-letter
// callback, which runs before Request returns) requeues the dead letter and
// answers it. The answer was handed to the waiting Request and counted
// delivered: Request must return it rather than the send's error.
func TestRequest_SendFailsAfterRequeuedCopyAnswered(t *testing.T) {
	b := newBus(t, []string{"B"}, bus.WithDefaultMailboxCapacity(1))
	mustSend(t, b, notice("X", "B", "filler"))
	done := false
	cancel := b.OnDeadLetter(func(d transport.DeadLetter) {
		if done || d.Reason != transport.ReasonQueueOverflow {
			return
		}
		done = true
		mustReceiveOne(t, b, "B") // the filler: room for the requeued copy
		if err := b.Requeue(d.Message.MessageID); err != nil {
			t.Errorf("requeue: got %v, want nil", err)
			return
		}
		got := mustReceiveOne(t, b, "B")
		if err := b.Reply(t.Context(), got, &transport.Message{Content: map[string]any{"action": "answer"}}); err != nil {
			t.Errorf("reply: got %v, want nil", err)
		}
	})
	defer cancel()

	resp, err := b.Request(t.Context(), request("A", "B", "ask"))
	if !done {
		t.Fatal("got no queue overflow, want the request dead-lettered first")
	}
	if err != nil || resp == nil || resp.Action() != "answer" {
		t.Fatalf("got %v, %v, want the answer the requeued copy received", resp, err)
	}
	s := assertBalanced(t, b)
	// Delivered: the filler, the requeued request, the answer.
	if s.Delivered != 3 {
		t.Errorf("got %d delivered, want 3", s.Delivered)
	}
}

// TestReject_NoticeFailureStillRejects rejects a message whose sender's
// mailbox is full: the rejection stands, and the error says only the notice
// failed.
func TestReject_NoticeFailureStillRejects(t *testing.T) {
	b := newBus(t, []string{"A", "B"}, bus.WithDefaultMailboxCapacity(1))
	req := ackable("A", "B", "work")
	mustSend(t, b, req)
	mustSend(t, b, notice("X", "A", "filler")) // A's mailbox is now full
	got := mustReceiveOne(t, b, "B")

	err := b.Reject(t.Context(), got, "no")
	var ne *bus.NoticeError
	if !errors.As(err, &ne) || !errors.Is(err, bus.ErrNotice) || !errors.Is(err, transport.ErrQueueFull) {
		t.Fatalf("got %v, want a *NoticeError matching ErrNotice and ErrQueueFull", err)
	}
	if ne.MessageID != req.MessageID || ne.To != "A" {
		t.Errorf("got notice error about %s to %s, want %s to A", ne.MessageID, ne.To, req.MessageID)
	}
	if d := deadLetterOf(t, b, req.MessageID); d.Reason != transport.ReasonRejected {
		t.Errorf("got %s, want the message dead-lettered rejected", d.Reason)
	}
	if s := assertBalanced(t, b); s.Rejects != 1 {
		t.Errorf("got %d rejects, want 1", s.Rejects)
	}
	if err := b.Reject(t.Context(), got, "again"); err == nil || errors.Is(err, bus.ErrNotice) {
		t.Errorf("got %v rejecting twice, want an error that is not a notice failure", err)
	}
}
