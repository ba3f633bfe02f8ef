package transporttest

import (
	"errors"

	"github.com/batonhq/baton/transport"
)

// testAccounting: after a mixed workload (redeliveries to the limit, sends,
// refusals, a duplicate, an ack, a reject, expiries, a nack) the metrics
// add up, each figure what the workload makes it, and OnDeadLetter saw
// every dead letter the metrics count, reason by reason.
func testAccounting(c *checker) {
	const agent, flaky, ghost = "ledger", "flaky", "ghost-agent"
	l := c.watch()
	c.open(agent, 4)
	c.open(flaky, 0)

	// Handed out MaxDeliveries times, never settled: dead-lettered max_retries.
	c.send(work(flaky, 1))
	for range c.h.MaxDeliveries {
		c.take(flaky, 1)
		c.advance(c.h.AckWait)
	}

	k1 := c.send(workAt(agent, 1, 3))
	k2 := c.send(work(agent, 2))
	expiring := work(agent, 3)
	expiring.TTL = shortTTL
	c.send(expiring)
	k4 := c.send(work(agent, 4))
	if err := c.tr.SendWork(c.t.Context(), work(agent, 5)); !errors.Is(err, transport.ErrQueueFull) {
		c.t.Fatalf("got SendWork error %v to a full mailbox, want one matching transport.ErrQueueFull", err)
	}
	if err := c.tr.SendWork(c.t.Context(), work(ghost, 1)); !errors.Is(err, transport.ErrUnknownAgent) {
		c.t.Fatalf("got SendWork error %v to %s, want one matching transport.ErrUnknownAgent", err, ghost)
	}
	c.send(workAt(agent, 1, 3)) // a duplicate of k1: not accepted

	two := c.take(agent, 2)
	if keys(two)[0] != k1 || keys(two)[1] != k2 {
		c.t.Fatalf("got %v, want [%s %s]", keys(two), k1, k2)
	}
	c.ack(two[0])
	if err := c.tr.Reject(c.t.Context(), two[1], "not mine"); err != nil {
		c.t.Fatalf("got Reject error %v, want nil", err)
	}
	c.advance(2 * shortTTL)
	m := c.take(agent, 1)[0]
	if m.Key() != k4 {
		c.t.Fatalf("got %s, want %s (the one before it expired)", m.Key(), k4)
	}
	if err := c.tr.Nack(c.t.Context(), m); err != nil {
		c.t.Fatalf("got Nack error %v, want nil", err)
	}
	c.take(agent, 1) // k4 again, kept in flight
	c.send(work(agent, 6))
	c.send(work(agent, 7))

	// flaky's 1, ledger's 1-7 and the ghost's 1: delivered k1; dead-lettered
	// flaky's, 5, the ghost's, k2 and 3; queued 6 and 7; k4 in flight.
	s := c.metrics(counts{Accepted: 9, Delivered: 1, DeadLettered: 5, Queued: 2, InFlight: 1})
	ds := c.wait(l, 5)
	byReason := map[transport.DeadLetterReason]uint64{}
	for _, d := range ds {
		byReason[d.Reason]++
	}
	want := map[transport.DeadLetterReason]uint64{
		transport.ReasonMaxRetries: 1, transport.ReasonQueueOverflow: 1, transport.ReasonReceiverNotFound: 1,
		transport.ReasonRejected: 1, transport.ReasonTTLExpired: 1,
	}
	var total uint64
	for r, n := range s.DeadLettersByReason {
		total += n
		if n != want[r] {
			c.t.Errorf("got metrics of %d dead letters %s, want %d", n, r, want[r])
		}
	}
	for r, n := range want {
		if byReason[r] != n {
			c.t.Errorf("got OnDeadLetter %d dead letters %s, want %d", byReason[r], r, n)
		}
	}
	if total != s.DeadLettered || uint64(len(ds)) != s.DeadLettered {
		c.t.Errorf("got dead letters by reason adding up to %d and OnDeadLetter %d, want metrics' %d",
			total, len(ds), s.DeadLettered)
	}
	if s.Expired != 1 {
		c.t.Errorf("got %d expired, want 1", s.Expired)
	}
}

// testDeadLetterCancel: every subscriber sees every dead letter until it
// cancels; after its cancel (safe to call twice) it sees no more, while
// the others still do.
func testDeadLetterCancel(c *checker) {
	const ghost = "ghost-agent"
	stopped, kept := c.watch(), c.watch()
	c.open("seller", 0)
	_ = c.tr.SendWork(c.t.Context(), work(ghost, 1))
	c.wait(stopped, 1)
	c.wait(kept, 1)
	stopped.cancel()
	stopped.cancel()
	_ = c.tr.SendWork(c.t.Context(), work(ghost, 2))
	c.letterFor(c.wait(kept, 2), keyOf(ghost, 2), transport.ReasonReceiverNotFound)
	c.wait(stopped, 1)
	c.takeNone("seller") // a quiet time for a late call
	c.wait(stopped, 1)
}
