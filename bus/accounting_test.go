package bus_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

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
