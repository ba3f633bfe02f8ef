package transporttest

import (
	"maps"
	"slices"

	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// testAck: a taken message is in flight until acked; acked, it counts as
// delivered and never comes back, however long its agent keeps quiet. The
// work decodes as it was sent.
func testAck(c *checker) {
	const agent = "seller"
	c.open(agent, 0)
	sent := task(agent, 1, 5)
	key := c.send(wire.Encode(sent))
	m := c.take(agent, 1)[0]
	got, err := wire.Decode(m)
	if err != nil {
		c.t.Fatalf("got work that does not decode: %v", err)
	}
	if got.InstanceID != sent.InstanceID || got.Step != sent.Step || got.Description != sent.Description ||
		m.Key() != key || !maps.Equal(got.Input, sent.Input) {
		c.t.Fatalf("got work %s step %d %q key %s input %v, want %s step %d %q key %s input %v",
			got.InstanceID, got.Step, got.Description, m.Key(), got.Input,
			sent.InstanceID, sent.Step, sent.Description, key, sent.Input)
	}
	c.metrics(counts{Accepted: 1, InFlight: 1})
	c.ack(m)
	c.metrics(counts{Accepted: 1, Delivered: 1})
	for range c.h.MaxDeliveries + 1 {
		c.advance(c.h.AckWait)
		c.takeNone(agent)
	}
	c.metrics(counts{Accepted: 1, Delivered: 1})
}

// testNack: a nacked message is delivered again, the same message with the
// same idempotency key and, when the transport counts deliveries, the next
// count; a message nacked on each of its MaxDeliveries deliveries is
// dead-lettered "max_retries".
func testNack(c *checker) {
	const agent = "seller"
	l := c.watch()
	c.open(agent, 0)
	key := c.send(work(agent, 1))
	first := c.take(agent, 1)[0]
	id, count := first.MessageID, first.DeliveryCount
	c.nack(first)
	again := c.take(agent, 1)[0]
	if again.MessageID != id || again.Key() != key {
		c.t.Fatalf("got %s (key %s) after a nack, want %s (key %s) again", again.MessageID, again.Key(), id, key)
	}
	if count != 0 && again.DeliveryCount != count+1 {
		c.t.Errorf("got delivery count %d after a nack, want %d", again.DeliveryCount, count+1)
	}
	c.ack(again)
	c.metrics(counts{Accepted: 1, Delivered: 1})
	for range c.h.MaxDeliveries {
		c.advance(c.h.AckWait)
		c.takeNone(agent)
	}

	hopeless := c.send(work(agent, 2))
	for range c.h.MaxDeliveries {
		c.nack(c.take(agent, 1)[0])
	}
	c.takeNone(agent)
	d := c.letterFor(c.wait(l, 1), hopeless, transport.ReasonMaxRetries)
	if d.Attempts != c.h.MaxDeliveries {
		c.t.Errorf("got a dead letter after %d attempts, want %d", d.Attempts, c.h.MaxDeliveries)
	}
	c.metrics(counts{Accepted: 2, Delivered: 1, DeadLettered: 1})
}

// testRedelivery: a taken message neither acked nor nacked comes back after
// the ack wait, not before; once it has been handed out MaxDeliveries times
// it is dead-lettered "max_retries" and never delivered again.
func testRedelivery(c *checker) {
	const agent = "flaky"
	l := c.watch()
	c.open(agent, 0)
	key := c.send(work(agent, 1))
	var id string
	for n := 1; n <= c.h.MaxDeliveries; n++ {
		m := c.take(agent, 1)[0]
		if n == 1 {
			id = m.MessageID
		}
		if m.MessageID != id || m.Key() != key {
			c.t.Fatalf("got %s (key %s) at delivery %d, want %s (key %s)", m.MessageID, m.Key(), n, id, key)
		}
		if m.DeliveryCount != 0 && m.DeliveryCount != n {
			c.t.Errorf("got delivery count %d, want %d", m.DeliveryCount, n)
		}
		c.metrics(counts{Accepted: 1, InFlight: 1})
		if n == 1 {
			c.advance(c.h.AckWait / 2)
			c.takeNone(agent) // not before the ack wait
			c.advance(c.h.AckWait - c.h.AckWait/2)
			continue
		}
		c.advance(c.h.AckWait)
	}
	c.takeNone(agent)
	d := c.letterFor(c.wait(l, 1), key, transport.ReasonMaxRetries)
	if d.Attempts != c.h.MaxDeliveries {
		c.t.Errorf("got a dead letter after %d attempts, want %d", d.Attempts, c.h.MaxDeliveries)
	}
	c.advance(c.h.AckWait)
	c.takeNone(agent)
	s := c.metrics(counts{Accepted: 1, DeadLettered: 1})
	if got := s.DeadLettersByReason[transport.ReasonMaxRetries]; got != 1 {
		c.t.Errorf("got %d dead letters max_retries, want 1", got)
	}
}

// testReject: a rejected message is dead-lettered "rejected" with the
// agent's reason as its last error, and never delivered again.
func testReject(c *checker) {
	const agent, reason = "picky", "queue busy"
	l := c.watch()
	c.open(agent, 0)
	key := c.send(work(agent, 1))
	m := c.take(agent, 1)[0]
	if err := c.tr.Reject(c.t.Context(), m, reason); err != nil {
		c.t.Fatalf("got Reject error %v, want nil", err)
	}
	d := c.letterFor(c.wait(l, 1), key, transport.ReasonRejected)
	if d.LastError != reason {
		c.t.Errorf("got last error %q, want the agent's reason %q", d.LastError, reason)
	}
	for range c.h.MaxDeliveries {
		c.advance(c.h.AckWait)
		c.takeNone(agent)
	}
	s := c.metrics(counts{Accepted: 1, DeadLettered: 1})
	if got := s.DeadLettersByReason[transport.ReasonRejected]; got != 1 {
		c.t.Errorf("got %d dead letters rejected, want 1", got)
	}
}

// testIdempotency: work sent twice with the same idempotency key (the
// metadata idempotency_key wire.Encode writes) is delivered once, also when
// the copy comes after the first was acked; the copy is not accepted.
func testIdempotency(c *checker) {
	const agent = "seller"
	c.open(agent, 0)
	k1 := c.send(work(agent, 1))
	if dup := c.send(work(agent, 1)); dup != k1 {
		c.t.Fatalf("got keys %s and %s, want the same", k1, dup)
	}
	k2 := c.send(work(agent, 2))
	got := c.take(agent, 2)
	if want := []string{k1, k2}; !slices.Equal(keys(got), want) {
		c.t.Fatalf("got %v, want %v", keys(got), want)
	}
	c.takeNone(agent)
	c.ack(got...)
	c.send(work(agent, 1))
	c.takeNone(agent)
	c.metrics(counts{Accepted: 2, Delivered: 2})
}
