package feature_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/transport"
)

// Work that natsbus stored, handed out and never saw acknowledged is
// dead-lettered max_retries; processing (or Requeue) sends it again,
// within the stream's dedup window. The resend must reach the mailbox,
// not be dropped as a duplicate of the first send's key.
func TestDeadLetters_ResendOfStoredWorkIsDelivered(t *testing.T) {
	t.Run("retried", func(t *testing.T) {
		resendStored(t, func(t *testing.T, d *feature.DeadLetters, clk *clock.Manual, _ string) {
			clk.Advance(10 * time.Second)
			if rep := process(t, d); rep.Retried != 1 {
				t.Fatalf("got %+v, want the dead letter sent again", rep)
			}
		})
	})
	t.Run("requeued", func(t *testing.T) {
		resendStored(t, func(t *testing.T, d *feature.DeadLetters, _ *clock.Manual, id string) {
			if err := d.Requeue(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// resendStored dead-letters stored work max_retries, sends it again with
// resend and takes it from the mailbox.
func resendStored(t *testing.T, resend func(*testing.T, *feature.DeadLetters, *clock.Manual, string)) {
	tr := newNATS(t, func(c *natsbus.Config) {
		c.AckWait = 30 * time.Millisecond
		c.MaxDeliveries = 1
	})
	d, clk := newDLQ(t, tr, feature.DeadLetterPolicy{Backoff: 10 * time.Second})
	openBox(t, tr, "B", 0)
	m := stamped(recWork("A", "B", "unacknowledged"), clk)
	m.RequiresAck = true
	if err := tr.SendWork(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	first := takeN(t, tr, "B", 1)[0] // and never acknowledged
	var held []transport.DeadLetter
	for range 500 { // the next take finds it delivered once too often
		if _, err := tr.TakeWork(t.Context(), "B", 1); err != nil {
			t.Fatal(err)
		}
		if held = d.Held(); len(held) == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(held) != 1 || held[0].Reason != transport.ReasonMaxRetries || held[0].Message.MessageID != first.MessageID {
		t.Fatalf("got %+v held, want %s dead-lettered max_retries", held, first.MessageID)
	}
	resend(t, d, clk, first.MessageID)
	again := takeN(t, tr, "B", 1)[0]
	if again.MessageID != first.MessageID {
		t.Errorf("got %s, want %s sent again", again.MessageID, first.MessageID)
	}
}
