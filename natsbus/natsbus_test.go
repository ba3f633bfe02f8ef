package natsbus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/transport"
)

var _ interface {
	OpenMailbox(string, int) error
	SendWork(context.Context, *transport.Message) error
	TakeWork(context.Context, string, int) ([]*transport.Message, error)
	Ack(context.Context, *transport.Message) error
	Nack(context.Context, *transport.Message) error
	Reject(context.Context, *transport.Message, string) error
	OnDeadLetter(func(transport.DeadLetter)) func()
	Metrics() transport.Snapshot
	Room(context.Context, string) (int, int, error)
} = (*natsbus.Transport)(nil)

func TestTransport_TakeWork_HighestPriorityFirstThenSendOrder(t *testing.T) {
	tr := newTestTransport(t)
	ctx := t.Context()
	tr.open("billing.eu", 0)
	for _, w := range []struct {
		key string
		p   transport.Priority
	}{{"low", transport.PriorityLow}, {"normal1", transport.PriorityNormal}, {"critical", transport.PriorityCritical},
		{"high", transport.PriorityHigh}, {"normal2", transport.PriorityNormal}} {
		if err := tr.SendWork(ctx, work("billing.eu", w.p, w.key)); err != nil {
			t.Fatalf("SendWork %s: %v", w.key, err)
		}
	}
	// Under load (the race detector, parallel tests) the consumers may hear
	// of the work later than TakeWait: wait for them.
	tr.seen("billing.eu", 5)
	first := tr.take("billing.eu", 2)
	rest := tr.take("billing.eu", 0)
	got := strings.Join(append(keys(first), keys(rest)...), " ")
	if want := "critical high normal1 normal2 low"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, m := range append(first, rest...) {
		if m.DeliveryCount != 1 || m.MessageID == "" || m.Timestamp.IsZero() {
			t.Errorf("got %s delivery %d id %q timestamp %v, want delivery 1 with id and timestamp", m.IdempotencyKey, m.DeliveryCount, m.MessageID, m.Timestamp)
		}
		if err := tr.Ack(ctx, m); err != nil {
			t.Errorf("Ack %s: %v", m.IdempotencyKey, err)
		}
	}
	s := tr.balanced()
	if s.Accepted != 5 || s.Delivered != 5 || s.Queued != 0 || s.InFlight != 0 {
		t.Errorf("got %+v, want 5 accepted and delivered", s)
	}
}

func TestTransport_SendWork_FullMailboxRefusesNamingTheAgent(t *testing.T) {
	tr := newTestTransport(t)
	dl := tr.collectDeadLetters()
	ctx := t.Context()
	tr.open("PaymentAgent", 2)
	tr.send("PaymentAgent", "a", "b")
	err := tr.SendWork(ctx, work("PaymentAgent", transport.PriorityCritical, "c"))
	var full *transport.QueueFullError
	if !errors.As(err, &full) || full.Agent != "PaymentAgent" || full.Capacity != 2 || !errors.Is(err, transport.ErrQueueFull) {
		t.Fatalf("got %v, want a QueueFullError of PaymentAgent, capacity 2", err)
	}
	if !strings.Contains(err.Error(), "PaymentAgent queue full") {
		t.Errorf("got %q, want it to read PaymentAgent queue full", err)
	}
	if got := dl.all(); len(got) != 1 || got[0].Reason != transport.ReasonQueueOverflow || got[0].Message.IdempotencyKey != "c" {
		t.Errorf("got dead letters %+v, want c dead-lettered queue_overflow", got)
	}
	// Opening it again keeps its capacity and messages.
	tr.open("PaymentAgent", 10)
	s := tr.balanced()
	if s.Accepted != 3 || s.Queued != 2 || s.DeadLettersByReason[transport.ReasonQueueOverflow] != 1 || s.Agents[0].Capacity != 2 {
		t.Errorf("got %+v, want 3 accepted, 2 queued, 1 overflow, capacity 2", s)
	}
	// Settling one makes room, and the refused work sent again (its
	// sender's retry, same idempotency key) is not taken for a duplicate.
	tr.seen("PaymentAgent", 2)
	got := tr.take("PaymentAgent", 1)
	if len(got) != 1 {
		t.Fatalf("got %d, want 1", len(got))
	}
	if err := tr.Ack(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	if err := tr.SendWork(ctx, work("PaymentAgent", transport.PriorityCritical, "c")); err != nil {
		t.Fatalf("the refused work sent again: %v", err)
	}
	tr.seen("PaymentAgent", 2)
	if rest := tr.take("PaymentAgent", 0); strings.Join(keys(rest), " ") != "c b" {
		t.Errorf("got %v, want [c b]", keys(rest))
	}
	if s := tr.Metrics(); s.Duplicates != 0 || s.Accepted != 4 {
		t.Errorf("got %d duplicates, %d accepted, want 0 and 4", s.Duplicates, s.Accepted)
	}
}

func TestTransport_SendWork_UnknownAgentIsDeadLettered(t *testing.T) {
	tr := newTestTransport(t)
	dl := tr.collectDeadLetters()
	err := tr.SendWork(t.Context(), work("nobody", transport.PriorityNormal, "k"))
	var unknown *transport.UnknownAgentError
	if !errors.As(err, &unknown) || unknown.Agent != "nobody" {
		t.Fatalf("got %v, want an UnknownAgentError of nobody", err)
	}
	if got := dl.all(); len(got) != 1 || got[0].Reason != transport.ReasonReceiverNotFound {
		t.Errorf("got %+v, want one receiver_not_found", got)
	}
	if _, err := tr.TakeWork(t.Context(), "nobody", 1); !errors.As(err, &unknown) {
		t.Errorf("TakeWork: got %v, want an UnknownAgentError", err)
	}
	s := tr.balanced()
	if s.Accepted != 1 || s.DeadLettered != 1 {
		t.Errorf("got %+v, want 1 accepted and dead-lettered", s)
	}
}

func TestTransport_SendWork_InvalidMessageIsRefused(t *testing.T) {
	tr := newTestTransport(t)
	tr.open("a", 0)
	m := work("a", transport.PriorityNormal, "k")
	m.Content = nil
	var verr *transport.ValidationError
	if err := tr.SendWork(t.Context(), m); !errors.As(err, &verr) {
		t.Fatalf("got %v, want a ValidationError", err)
	}
	if s := tr.Metrics(); s.ValidationErrors != 1 || s.Accepted != 0 {
		t.Errorf("got %+v, want 1 validation error and nothing accepted", s)
	}
}

func TestTransport_SendWork_SameIdempotencyKeyIsDroppedAsDuplicate(t *testing.T) {
	tr := newTestTransport(t)
	tr.open("a", 0)
	tr.send("a", "i1:3", "i1:3", "i1:3")
	tr.seen("a", 1)
	if got := tr.take("a", 0); len(got) != 1 {
		t.Fatalf("got %d messages, want 1", len(got))
	}
	s := tr.Metrics()
	if s.Duplicates != 2 || s.Accepted != 1 || s.InFlight != 1 {
		t.Errorf("got %+v, want 2 duplicates, 1 accepted in flight", s)
	}
	wantBalanced(t, s)
}

func TestTransport_TakeWork_RedeliversAfterTheAckWait(t *testing.T) {
	tr := newTestTransport(t, func(c *natsbus.Config) { c.AckWait = 100 * time.Millisecond })
	ctx := t.Context()
	first := tr.sendAndTake("a", "k")
	if s := tr.Metrics(); s.InFlight != 1 || s.Queued != 0 {
		t.Errorf("got in flight %d queued %d, want 1 and 0", s.InFlight, s.Queued)
	}
	var again []*transport.Message
	var err error
	waitFor(t, "the redelivery", func() bool {
		again, err = tr.TakeWork(ctx, "a", 1)
		return err != nil || len(again) == 1
	})
	if err != nil || again[0].MessageID != first.MessageID || again[0].DeliveryCount != 2 {
		t.Fatalf("got %+v (%v), want the same message, delivery 2", again, err)
	}
	// The first delivery's ack wait has passed: only the second is held.
	if err := tr.Ack(ctx, again[0]); err != nil {
		t.Fatal(err)
	}
	if err := tr.Ack(ctx, first); !errors.Is(err, natsbus.ErrNotTaken) {
		t.Errorf("second Ack: got %v, want ErrNotTaken", err)
	}
	s := tr.balanced()
	if s.Redeliveries != 1 || s.Delivered != 1 || s.Acks != 1 {
		t.Errorf("got %+v, want 1 redelivery, 1 delivered, 1 ack", s)
	}
}

func TestTransport_Nack_RedeliversAtOnce(t *testing.T) {
	tr := newTestTransport(t)
	ctx := t.Context()
	first := tr.sendAndTake("a", "k")
	if err := tr.Nack(ctx, first); err != nil {
		t.Fatal(err)
	}
	var again []*transport.Message
	waitFor(t, "the redelivery", func() bool {
		again, _ = tr.TakeWork(ctx, "a", 1)
		return len(again) == 1
	})
	if again[0].DeliveryCount != 2 {
		t.Errorf("got delivery %d, want 2", again[0].DeliveryCount)
	}
	if s := tr.Metrics(); s.Nacks != 1 || s.InFlight != 1 {
		t.Errorf("got %+v, want 1 nack and 1 in flight", s)
	}
}

// NackLater gives work back with a pause that doubles with each delivery:
// the redelivery never comes before it (a lower bound, which a busy
// machine cannot break).
func TestTransport_NackLater_RedeliversAfterAGrowingPause(t *testing.T) {
	tr := newTestTransport(t)
	ctx := t.Context()
	taken := []*transport.Message{tr.sendAndTake("a", "k")}
	pause := 100 * time.Millisecond
	for delivery := 1; delivery <= 4; delivery++ {
		if taken[0].DeliveryCount != delivery {
			t.Fatalf("got delivery %d, want %d", taken[0].DeliveryCount, delivery)
		}
		given := time.Now()
		if err := tr.NackLater(ctx, taken[0]); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the redelivery", func() bool {
			taken, _ = tr.TakeWork(ctx, "a", 1)
			return len(taken) == 1
		})
		if waited := time.Since(given); waited < pause {
			t.Fatalf("delivery %d came back after %v, want at least %v", delivery+1, waited, pause)
		}
		pause *= 2
	}
	if s := tr.Metrics(); s.Nacks != 4 || s.InFlight != 1 {
		t.Errorf("got %+v, want 4 nacks and 1 in flight", s)
	}
}

func TestTransport_MaxDeliveries_DeadLettersAndRemoves(t *testing.T) {
	tr := newTestTransport(t, func(c *natsbus.Config) {
		c.AckWait = 50 * time.Millisecond
		c.MaxDeliveries = 2
	})
	dl := tr.collectDeadLetters()
	ctx := t.Context()
	tr.open("a", 0)
	tr.send("a", "k")
	tr.seen("a", 1)
	taken := 0
	waitFor(t, "two deliveries", func() bool {
		got, _ := tr.TakeWork(ctx, "a", 1)
		taken += len(got)
		return taken == 2
	})
	waitFor(t, "the dead letter", func() bool { return len(dl.all()) == 1 })
	d := dl.all()[0]
	if d.Reason != transport.ReasonMaxRetries || d.Message.IdempotencyKey != "k" || d.Attempts != 2 {
		t.Errorf("got %+v, want k dead-lettered max_retries after 2 attempts", d)
	}
	s := tr.balanced()
	if s.DeadLettersByReason[transport.ReasonMaxRetries] != 1 || s.Queued != 0 || s.InFlight != 0 || s.Delivered != 0 {
		t.Errorf("got %+v, want 1 max_retries and nothing left", s)
	}
}

// A process that took the message on its last delivery died: the next
// taker finds it delivered once too often and dead-letters it.
func TestTransport_MaxDeliveries_NextTakerDeadLettersWorkWhoseTakerDied(t *testing.T) {
	change := func(c *natsbus.Config) {
		c.AckWait = 50 * time.Millisecond
		c.MaxDeliveries = 1
	}
	dying := newTestTransport(t, change)
	ctx := t.Context()
	dying.sendAndTake("a", "k")
	_ = dying.Close() // its sweep stops: it will not dead-letter the message
	tr := dying.another(change)
	dl := tr.collectDeadLetters()
	waitFor(t, "the dead letter", func() bool {
		got, err := tr.TakeWork(ctx, "a", 1)
		if err != nil || len(got) != 0 {
			t.Fatalf("got %d messages (%v), want none handed out", len(got), err)
		}
		return len(dl.all()) == 1
	})
	if d := dl.all()[0]; d.Reason != transport.ReasonMaxRetries || d.Attempts != 1 {
		t.Errorf("got %+v, want max_retries after 1 attempt", d)
	}
	tr.balanced()
}

func TestTransport_Reject_DeadLettersWithTheReasonAndRemoves(t *testing.T) {
	tr := newTestTransport(t)
	dl := tr.collectDeadLetters()
	ctx := t.Context()
	got := tr.sendAndTake("a", "k")
	if err := tr.Reject(ctx, got, "not my job"); err != nil {
		t.Fatal(err)
	}
	if d := dl.all(); len(d) != 1 || d[0].Reason != transport.ReasonRejected || d[0].LastError != "not my job" {
		t.Fatalf("got %+v, want one rejected with the reason", d)
	}
	s := tr.balanced()
	if s.Rejects != 1 || s.Queued != 0 || s.InFlight != 0 || s.DeadLettersByReason[transport.ReasonRejected] != 1 {
		t.Errorf("got %+v, want 1 reject and nothing left", s)
	}
	if len(dl.all()) != 1 {
		t.Errorf("got %d dead letters, want the terminated advisory not to add one", len(dl.all()))
	}
}

func TestTransport_TakeWork_ExpiredIsDeadLetteredNeverHandedOut(t *testing.T) {
	tr := newTestTransport(t)
	dl := tr.collectDeadLetters()
	tr.open("a", 0)
	old := work("a", transport.PriorityHigh, "old")
	old.Timestamp = time.Now().Add(-time.Hour)
	old.TTL = time.Minute
	if err := tr.SendWork(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	tr.send("a", "fresh")
	tr.seen("a", 2)
	if got := tr.take("a", 0); len(got) != 1 || got[0].IdempotencyKey != "fresh" {
		t.Fatalf("got %v, want only fresh", keys(got))
	}
	if d := dl.all(); len(d) != 1 || d[0].Reason != transport.ReasonTTLExpired || d[0].Message.IdempotencyKey != "old" {
		t.Fatalf("got %+v, want old dead-lettered ttl_expired", d)
	}
	s := tr.balanced()
	if s.Expired != 1 || s.InFlight != 1 || s.Queued != 0 {
		t.Errorf("got %+v, want 1 expired, 1 in flight", s)
	}
}

func TestTransport_Heartbeat_KeepsTheMessageTaken(t *testing.T) {
	const ackWait = time.Second
	tr := newTestTransport(t, func(c *natsbus.Config) { c.AckWait = ackWait })
	ctx := t.Context()
	got := tr.sendAndTake("a", "k")
	// Heartbeats for twice the ack wait. A redelivery is a defect only
	// when the last heartbeat was recent: on a machine so loaded that a
	// heartbeat came later than the ack wait, the server was right to
	// deliver again, and the test cannot tell.
	start := time.Now()
	last := start
	for time.Since(start) < 2*ackWait {
		if err := tr.Heartbeat(ctx, got); err != nil {
			t.Fatalf("Heartbeat: %v", err)
		}
		gap := time.Since(last)
		last = time.Now()
		if again, _ := tr.TakeWork(ctx, "a", 1); len(again) != 0 {
			if gap < ackWait/2 {
				t.Fatalf("redelivered %v after a heartbeat, with an ack wait of %v", gap, ackWait)
			}
			t.Logf("redelivered after a heartbeat %v late on a loaded machine: nothing to judge", gap)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tr.Ack(ctx, got); err != nil {
		t.Fatalf("Ack after heartbeats: %v", err)
	}
	if s := tr.Metrics(); s.Delivered != 1 || s.Redeliveries != 0 {
		t.Errorf("got %+v, want 1 delivered, no redelivery", s)
	}
}

func TestTransport_OnDeadLetter_SeenByEveryProcessUntilCancelled(t *testing.T) {
	one := newTestTransport(t)
	two := one.another()
	ctx := t.Context()
	one.open("a", 1)
	d1 := one.collectDeadLetters()
	d2, cancel2 := collect(two.Transport)
	one.send("a", "k1")
	if err := two.SendWork(ctx, work("a", transport.PriorityNormal, "k2")); !errors.Is(err, transport.ErrQueueFull) {
		t.Fatalf("got %v, want queue full", err)
	}
	waitFor(t, "both processes to see the dead letter", func() bool { return len(d1.all()) == 1 && len(d2.all()) == 1 })
	cancel2()
	if err := one.SendWork(ctx, work("a", transport.PriorityNormal, "k3")); !errors.Is(err, transport.ErrQueueFull) {
		t.Fatalf("got %v, want queue full", err)
	}
	waitFor(t, "the second dead letter", func() bool { return len(d1.all()) == 2 })
	// two's subscription is gone; the consumer it shares with its other
	// callbacks still runs, so a later dead letter would have arrived by
	// now had it not been cancelled: check after one more round trip.
	_ = two.Metrics()
	if n := len(d2.all()); n != 1 {
		t.Errorf("got %d dead letters after cancel, want 1", n)
	}
	s1, s2 := one.balanced(), two.Metrics()
	if s1.Accepted != s2.Accepted || s1.DeadLettered != 2 || s2.DeadLettered != 2 {
		t.Errorf("got %+v and %+v, want the same accounting in both", s1, s2)
	}
}

// An agent on a plain NATS client rejects by terminating the message with
// its reason: natsbus hears the advisory and dead-letters it.
func TestTransport_TerminatedByAPlainAgent_IsDeadLettered(t *testing.T) {
	tr := newTestTransport(t)
	dl := tr.collectDeadLetters()
	ctx := t.Context()
	tr.open("plain.agent", 0)
	tr.send("plain.agent", "k")
	c, err := tr.jetStream().Consumer(ctx, natsbus.WorkStream("plain.agent"), "normal")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.FetchNoWait(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if err := m.TermWithReason("queue busy"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the dead letter", func() bool { return len(dl.all()) == 1 })
	if d := dl.all()[0]; d.Reason != transport.ReasonRejected || d.LastError != "queue busy" || d.Message.To != "plain.agent" {
		t.Errorf("got %+v, want plain.agent's message rejected: queue busy", d)
	}
	tr.balanced()
}

// Work JetStream deletes while a consumer still holds it delivered (as a
// work-queue stream does with work acknowledged through a consumer leader
// that has just lost its place) is not a dead letter: JetStream's
// terminated advisory for it is counted and changes nothing. An agent's own
// termination after it still is one.
func TestTransport_DeletedWhilePending_IsNotADeadLetter(t *testing.T) {
	tr := newTestTransport(t)
	dl := tr.collectDeadLetters()
	ctx := t.Context()
	tr.open("plain.agent", 0)
	tr.send("plain.agent", "k1", "k2")
	js := tr.jetStream()
	c, err := js.Consumer(ctx, natsbus.WorkStream("plain.agent"), "normal")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.FetchNoWait(2)
	if err != nil {
		t.Fatal(err)
	}
	var taken []jetstream.Msg
	for m := range b.Messages() {
		taken = append(taken, m)
	}
	if len(taken) != 2 {
		t.Fatalf("took %d messages, want 2", len(taken))
	}
	s, err := js.Stream(ctx, natsbus.WorkStream("plain.agent"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := taken[0].Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, meta.Sequence.Stream); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion's advisory", func() bool { return tr.DeletedWhilePending() == 1 })
	if err := taken[1].TermWithReason("queue busy"); err != nil {
		t.Fatal(err)
	}
	// The advisories come in order: had the deletion made a dead letter,
	// it would be there before the rejection's.
	waitFor(t, "the rejection's dead letter", func() bool { return len(dl.all()) >= 1 })
	if got := dl.all(); len(got) != 1 || got[0].LastError != "queue busy" {
		t.Errorf("got dead letters %+v, want only the rejection", got)
	}
}

func TestConfig_Validate_DefaultsPassAndEachBadFieldIsNamed(t *testing.T) {
	for _, tc := range []struct {
		field  string
		change func(*natsbus.Config)
	}{
		{"Capacity", func(c *natsbus.Config) { c.Capacity = 0 }},
		{"AckWait", func(c *natsbus.Config) { c.AckWait = 0 }},
		{"MaxDeliveries", func(c *natsbus.Config) { c.MaxDeliveries = 0 }},
		{"Replicas", func(c *natsbus.Config) { c.Replicas = 0 }},
		{"Backoff[1]", func(c *natsbus.Config) { c.Backoff = []time.Duration{time.Second, 0} }},
		{"Logger", func(c *natsbus.Config) { c.Logger = nil }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := natsbus.DefaultConfig()
			tc.change(&c)
			var ce *natsbus.ConfigError
			if err := c.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("got %v, want a ConfigError on %s", err, tc.field)
			}
		})
	}
	c := natsbus.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Errorf("defaults: got %v, want nil", err)
	}
}

func TestToken_KeepsPlainIDsAndEscapesTheRest(t *testing.T) {
	for in, want := range map[string]string{"seller": "seller", "billing.eu": "billing~2Eeu", "a b*>~": "a~20b~2A~3E~7E"} {
		if got := natsbus.Token(in); got != want {
			t.Errorf("Token(%q): got %q, want %q", in, got, want)
		}
	}
}

// Room tells the engine how much more work a mailbox takes, counting what
// every process sent, so that a start can be refused at the door.
func TestTransport_Room_CountsTheWorkHeld(t *testing.T) {
	tr := newTestTransport(t)
	ctx := t.Context()
	tr.open("PaymentAgent", 2)
	if free, capacity, err := tr.Room(ctx, "PaymentAgent"); err != nil || free != 2 || capacity != 2 {
		t.Fatalf("empty: got %d of %d, %v; want 2 of 2", free, capacity, err)
	}
	tr.send("PaymentAgent", "a")
	if free, _, err := tr.Room(ctx, "PaymentAgent"); err != nil || free != 1 {
		t.Fatalf("one sent: got %d free, %v; want 1", free, err)
	}
	var unknown *transport.UnknownAgentError
	if _, _, err := tr.Room(ctx, "nobody"); !errors.As(err, &unknown) {
		t.Errorf("unknown agent: got %v, want an UnknownAgentError", err)
	}
}
