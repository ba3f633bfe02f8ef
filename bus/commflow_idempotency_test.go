package bus_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// keyed builds a HANDOFF carrying key in the field or, with meta set, in
// metadata as the handoff package writes it.
func keyed(to, key string, meta bool) *transport.Message {
	m := &transport.Message{Type: transport.MessageHandoff, From: "engine", To: to, Content: map[string]any{"action": "handoff"}}
	if meta {
		m.Metadata = map[string]any{"idempotency_key": key}
	} else {
		m.IdempotencyKey = key
	}
	return m
}

func TestCommFlow_Idempotency_DuplicateAcknowledgedNotDelivered(t *testing.T) {
	for _, meta := range []bool{false, true} {
		t.Run(fmt.Sprintf("metadata=%v", meta), func(t *testing.T) {
			b := newBus(t, []string{"seller"})
			first := keyed("seller", "wf-1:2", meta)
			var r1, r2 bus.Receipt
			mustSend(t, b, first, bus.WithReceipt(&r1))
			dup := keyed("seller", "wf-1:2", meta)
			if err := b.Send(t.Context(), dup, bus.WithReceipt(&r2)); err != nil {
				t.Fatalf("got %v sending a duplicate, want nil (acknowledged)", err)
			}
			if r1.Duplicate || !r2.Duplicate || r2.DuplicateOf != first.MessageID || r2.MessageID != dup.MessageID {
				t.Errorf("got receipts %+v and %+v, want the second a duplicate of %s", r1, r2, first.MessageID)
			}
			if got := receiveAll(t, b, "seller"); len(got) != 1 || got[0] != first {
				t.Fatalf("got %d messages, want the first one only", len(got))
			}
			s := assertCounts(t, b, flowCounts{Accepted: 1, Delivered: 1})
			if s.Duplicates != 1 || s.IdempotencyKeys != 1 {
				t.Errorf("got duplicates %d keys %d, want 1 and 1", s.Duplicates, s.IdempotencyKeys)
			}
		})
	}
}

func TestCommFlow_Idempotency_KeyScopedByReceiverAndType(t *testing.T) {
	b := newBus(t, []string{"seller", "payment"})
	mustSend(t, b, keyed("seller", "k", false))
	other := keyed("payment", "k", false) // same key, another receiver
	mustSend(t, b, other)
	errMsg := keyed("seller", "k", true) // same key and receiver, another type
	errMsg.Type = transport.MessageError
	mustSend(t, b, errMsg)
	plain := request("engine", "seller", "no key")
	mustSend(t, b, plain)
	mustSend(t, b, request("engine", "seller", "no key"))
	assertCounts(t, b, flowCounts{Accepted: 5, Queued: 5})
}

func TestCommFlow_Idempotency_KeyExpiresAfterWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"seller"}, bus.WithIdempotency(time.Hour, 0))
		mustSend(t, b, keyed("seller", "k", false))
		time.Sleep(time.Hour - time.Second)
		var r bus.Receipt
		mustSend(t, b, keyed("seller", "k", false), bus.WithReceipt(&r))
		if !r.Duplicate {
			t.Fatal("got the key forgotten inside its window, want a duplicate")
		}
		time.Sleep(time.Second)
		mustSend(t, b, keyed("seller", "k", false), bus.WithReceipt(&r))
		if r.Duplicate {
			t.Fatal("got a duplicate after the window, want the key forgotten")
		}
		assertCounts(t, b, flowCounts{Accepted: 2, Queued: 2})
	})
}

func TestCommFlow_Idempotency_FailedSendReleasesKey(t *testing.T) {
	b := bus.New()
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Register("seller", bus.WithMailboxCapacity(1)); err != nil {
		t.Fatal(err)
	}
	mustSend(t, b, request("x", "seller", "filler"))
	refused := keyed("seller", "k", false)
	if err := b.Send(t.Context(), refused); !errors.Is(err, transport.ErrQueueFull) {
		t.Fatalf("got %v, want ErrQueueFull", err)
	}
	mustReceiveOne(t, b, "seller")
	// The sender retries with the same key: the dead-lettered copy must not
	// make it a duplicate.
	retried := keyed("seller", "k", false)
	var r bus.Receipt
	mustSend(t, b, retried, bus.WithReceipt(&r))
	if r.Duplicate || mustReceiveOne(t, b, "seller") != retried {
		t.Fatalf("got receipt %+v, want the retry delivered", r)
	}
	// A send dead-lettered for an unknown receiver releases its key too.
	if err := b.Send(t.Context(), keyed("late", "k2", false)); !errors.Is(err, transport.ErrUnknownAgent) {
		t.Fatalf("got %v, want ErrUnknownAgent", err)
	}
	if err := b.Register("late"); err != nil {
		t.Fatal(err)
	}
	mustSend(t, b, keyed("late", "k2", false))
	assertCounts(t, b, flowCounts{Accepted: 5, Delivered: 2, DeadLettered: 2, Queued: 1})
}

func TestCommFlow_Idempotency_BoundedMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 160 keys: 10 in each of the bus's 16 shards.
		b := newBus(t, []string{"seller"}, bus.WithIdempotency(time.Minute, 160), bus.WithDefaultMailboxCapacity(10_000))
		for i := range 1000 {
			mustSend(t, b, keyed("seller", fmt.Sprint("k", i), false))
		}
		if s := b.Metrics(); s.IdempotencyKeys != 160 {
			t.Errorf("got %d keys remembered, want the newest 160", s.IdempotencyKeys)
		}
		var r bus.Receipt
		mustSend(t, b, keyed("seller", "k999", false), bus.WithReceipt(&r))
		if !r.Duplicate {
			t.Error("got the newest key forgotten, want it remembered")
		}
		time.Sleep(time.Minute)
		mustSend(t, b, keyed("seller", "fresh", false))
		if s := b.Metrics(); s.IdempotencyKeys != 1 {
			t.Errorf("got %d keys after the window, want 1", s.IdempotencyKeys)
		}
		mustSend(t, b, keyed("seller", "k0", false)) // forgotten long ago
		if s := b.Metrics(); s.Duplicates != 1 || s.Accepted != 1002 {
			t.Errorf("got duplicates %d accepted %d, want 1 and 1002", s.Duplicates, s.Accepted)
		}
	})
}

func TestCommFlow_Idempotency_Disabled(t *testing.T) {
	b := newBus(t, []string{"seller"}, bus.WithIdempotency(0, 0))
	mustSend(t, b, keyed("seller", "k", false))
	mustSend(t, b, keyed("seller", "k", false))
	if s := assertCounts(t, b, flowCounts{Accepted: 2, Queued: 2}); s.Duplicates != 0 {
		t.Errorf("got %d duplicates, want none with deduplication off", s.Duplicates)
	}
}
