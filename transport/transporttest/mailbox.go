package transporttest

import (
	"errors"
	"slices"
	"strings"

	"github.com/batonhq/baton/transport"
)

// testOpenTwice: opening an agent again keeps its mailbox and what waits in
// it.
func testOpenTwice(c *checker) {
	const agent = "seller"
	c.open(agent, 2)
	k1 := c.send(work(agent, 1))
	c.open(agent, 2)
	c.open(agent, 0)
	k2 := c.send(work(agent, 2))
	got := c.take(agent, 2)
	if want := []string{k1, k2}; !slices.Equal(keys(got), want) {
		c.t.Fatalf("got %v after reopening, want %v", keys(got), want)
	}
	c.ack(got...)
	c.takeNone(agent)
	c.metrics(counts{Accepted: 2, Delivered: 2})
}

// testUnknownAgent: work for an agent never opened is refused with an error
// naming the agent and dead-lettered "receiver_not_found": accepted, never
// lost in silence.
func testUnknownAgent(c *checker) {
	const ghost = "ghost-agent"
	l := c.watch()
	c.open("seller", 0)
	m := work(ghost, 1)
	key := m.Key()
	err := c.tr.SendWork(c.t.Context(), m)
	if !errors.Is(err, transport.ErrUnknownAgent) || !strings.Contains(errText(err), ghost) {
		c.t.Fatalf("got SendWork error %v, want one matching transport.ErrUnknownAgent that names %s", err, ghost)
	}
	c.letterFor(c.wait(l, 1), key, transport.ReasonReceiverNotFound)
	if _, err := c.tr.TakeWork(c.t.Context(), ghost, 0); !errors.Is(err, transport.ErrUnknownAgent) {
		c.t.Fatalf("got TakeWork error %v for %s, want one matching transport.ErrUnknownAgent", err, ghost)
	}
	c.takeNone("seller")
	c.metrics(counts{Accepted: 1, DeadLettered: 1})

	// The refusal did not keep the key: sent again once the agent is
	// there, the work is delivered.
	c.open(ghost, 0)
	c.send(work(ghost, 1))
	got := c.take(ghost, 1)
	if got[0].Key() != key {
		c.t.Fatalf("got %s, want %s sent again", got[0].Key(), key)
	}
	c.ack(got...)
	c.metrics(counts{Accepted: 2, Delivered: 1, DeadLettered: 1})
}

// testInvalid: a message that breaks format is refused with an
// error matching transport.ErrValidation whose text names the field, counted, and
// neither accepted nor dead-lettered.
func testInvalid(c *checker) {
	const agent = "seller"
	l := c.watch()
	c.open(agent, 0)
	m := work(agent, 1)
	delete(m.Content, "action")
	err := c.tr.SendWork(c.t.Context(), m)
	if !errors.Is(err, transport.ErrValidation) || !strings.Contains(errText(err), "content.action") {
		c.t.Fatalf("got SendWork error %v for work without an action, want one matching transport.ErrValidation that names content.action", err)
	}
	c.takeNone(agent)
	s := c.metrics(counts{})
	if s.ValidationErrors != 1 {
		c.t.Errorf("got %d validation errors counted, want 1", s.ValidationErrors)
	}
	if ds := l.all(); len(ds) > 0 {
		c.t.Errorf("got dead letters %v of a message refused as invalid, want none", letterKeys(ds))
	}
}

// testPriority: a mailbox hands out the highest priority first and, within
// a priority, in send order, also when taken a few at a time.
func testPriority(c *checker) {
	const agent = "triage"
	c.open(agent, 0)
	// ranks: 1 critical, 3 high, 5 normal, 10 low
	ranks := []int{10, 5, 1, 3, 5, 10, 1, 3, 5}
	type sent struct {
		key  string
		prio transport.Priority
	}
	var order []sent
	for i, r := range ranks {
		m := workAt(agent, i+1, r)
		prio := m.Priority // read before the transport owns m
		order = append(order, sent{c.send(m), prio})
	}
	slices.SortStableFunc(order, func(a, b sent) int { return int(b.prio - a.prio) })
	want := make([]string, len(order))
	for i, s := range order {
		want[i] = s.key
	}
	got := c.take(agent, 3)
	got = append(got, c.take(agent, len(ranks)-3)...)
	if !slices.Equal(keys(got), want) {
		c.t.Fatalf("got order %v, want %v", keys(got), want)
	}
	for i, m := range got {
		if m.Priority != order[i].prio {
			c.t.Errorf("got %s at %s, want it at the %s it was sent with", m.Key(), m.Priority, order[i].prio)
		}
	}
	c.ack(got...)
	c.metrics(counts{Accepted: uint64(len(ranks)), Delivered: uint64(len(ranks))})
}

// testCapacity: a mailbox of capacity N takes N messages; the next one is
// refused with an error naming the agent and dead-lettered
// "queue_overflow"; taking one makes room again, and the refused work sent
// again (same idempotency key, as a sender's retry) is delivered.
func testCapacity(c *checker) {
	const agent, capacity = "PaymentAgent", 3
	l := c.watch()
	c.open(agent, capacity)
	var kept []string
	for step := 1; step <= capacity; step++ {
		kept = append(kept, c.send(work(agent, step)))
	}
	over := work(agent, capacity+1)
	overKey := over.Key()
	err := c.tr.SendWork(c.t.Context(), over)
	if !errors.Is(err, transport.ErrQueueFull) || !strings.Contains(errText(err), agent) {
		c.t.Fatalf("got SendWork error %v to a full mailbox, want one matching transport.ErrQueueFull that names %s", err, agent)
	}
	c.letterFor(c.wait(l, 1), overKey, transport.ReasonQueueOverflow)

	first := c.take(agent, 1)
	if c.h.SettleFreesRoom {
		// Still full until the taken message is settled.
		still := work(agent, capacity+2)
		if err := c.tr.SendWork(c.t.Context(), still); !errors.Is(err, transport.ErrQueueFull) {
			c.t.Fatalf("got SendWork error %v while a taken message is unsettled, want transport.ErrQueueFull (SettleFreesRoom)", err)
		}
		c.letterFor(c.wait(l, 2), still.Key(), transport.ReasonQueueOverflow)
		c.ack(first...)
	}
	kept = append(kept, c.send(work(agent, capacity+1)))
	rest := c.take(agent, capacity)
	got := append(first, rest...)
	if !slices.Equal(keys(got), kept) {
		c.t.Fatalf("got %v, want %v (the refused %s once, sent again)", keys(got), kept, overKey)
	}
	if c.h.SettleFreesRoom {
		c.ack(rest...)
		c.takeNone(agent)
		c.metrics(counts{Accepted: capacity + 3, Delivered: capacity + 1, DeadLettered: 2})
		return
	}
	c.ack(got...)
	c.takeNone(agent)
	c.metrics(counts{Accepted: capacity + 2, Delivered: capacity + 1, DeadLettered: 1})
}

// testExpired: a message whose TTL ran out before it was taken is never
// handed out; it is dead-lettered "ttl_expired" and counted as expired,
// while a message still alive behind it is delivered.
func testExpired(c *checker) {
	const agent = "slowpoke"
	l := c.watch()
	c.open(agent, 0)
	urgent := workAt(agent, 1, 1)
	urgent.TTL = shortTTL
	k1 := c.send(urgent)
	k2 := c.send(work(agent, 2))
	late := work(agent, 3)
	late.TTL = shortTTL
	k3 := c.send(late)

	c.advance(2 * shortTTL)
	got := c.take(agent, 1)
	if got[0].Key() != k2 {
		c.t.Fatalf("got %s, want %s, the only message still alive", got[0].Key(), k2)
	}
	c.ack(got...)
	c.takeNone(agent)
	ds := c.wait(l, 2)
	c.letterFor(ds, k1, transport.ReasonTTLExpired)
	c.letterFor(ds, k3, transport.ReasonTTLExpired)
	c.metrics(counts{Accepted: 3, Delivered: 1, DeadLettered: 2})

	// Taken once and never settled, it expires before it could come back.
	held := work(agent, 4)
	held.TTL = shortTTL
	k4 := c.send(held)
	c.take(agent, 1)
	c.advance(max(c.h.AckWait, 2*shortTTL))
	c.takeNone(agent)
	c.letterFor(c.wait(l, 3), k4, transport.ReasonTTLExpired)
	s := c.metrics(counts{Accepted: 4, Delivered: 1, DeadLettered: 3})
	if s.Expired != 3 || s.DeadLettersByReason[transport.ReasonTTLExpired] != 3 {
		c.t.Errorf("got expired %d, dead letters ttl_expired %d, want 3 and 3",
			s.Expired, s.DeadLettersByReason[transport.ReasonTTLExpired])
	}
}

// testOffer: a transport that implements engine.Offerer refuses work
// offered to a full mailbox with an error naming the agent, and neither
// accepts nor dead-letters it: no dead letter, no count; the same work
// offered again once there is room (same idempotency key) is delivered
// once, as is work offered to a mailbox with room. A transport without
// OfferWork has nothing to check here.
func testOffer(c *checker) {
	o, ok := c.tr.(transport.Offerer)
	if !ok {
		c.t.Logf("%T does not implement engine.Offerer: the engine sends with SendWork", c.tr)
		return
	}
	const agent, capacity = "PaymentAgent", 2
	l := c.watch()
	c.open(agent, capacity)
	first := workAt(agent, 1, 5)
	kept := []string{first.Key()}
	if err := o.OfferWork(c.t.Context(), first); err != nil {
		c.t.Fatalf("got OfferWork error %v to a mailbox with room, want nil", err)
	}
	kept = append(kept, c.send(work(agent, 2)))
	over := work(agent, 3)
	overKey := over.Key()
	err := o.OfferWork(c.t.Context(), over)
	if !errors.Is(err, transport.ErrQueueFull) || !strings.Contains(errText(err), agent) {
		c.t.Fatalf("got OfferWork error %v to a full mailbox, want one matching transport.ErrQueueFull that names %s", err, agent)
	}
	c.metrics(counts{Accepted: capacity, Queued: capacity})
	taken := c.take(agent, 1)
	c.ack(taken...)
	if err := o.OfferWork(c.t.Context(), work(agent, 3)); err != nil {
		c.t.Fatalf("got OfferWork error %v once there was room, want nil: the refused offer must leave its key free", err)
	}
	kept = append(kept, overKey)
	rest := c.take(agent, capacity)
	c.ack(rest...)
	if got := keys(append(taken, rest...)); !slices.Equal(got, kept) {
		c.t.Fatalf("got %v, want %v (the refused %s once, offered again)", got, kept, overKey)
	}
	c.takeNone(agent)
	c.metrics(counts{Accepted: capacity + 1, Delivered: capacity + 1})
	if ds := l.all(); len(ds) != 0 {
		c.t.Fatalf("got dead letters %v, want none: a refused offer is not dead-lettered", letterKeys(ds))
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
