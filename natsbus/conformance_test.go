package natsbus_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/transport/transporttest"
)

// TestTransport_Conformance runs the transport conformance suite on natsbus,
// each subtest on an in-process server of its own. natsbus runs on the wall
// clock: Advance sleeps, and the ack wait is short.
func TestTransport_Conformance(t *testing.T) {
	const ackWait, maxDeliveries = time.Second, 3
	transporttest.Run(t, func(t *testing.T) transporttest.Harness {
		tr := newTransport(t, startServer(t, false), func(c *natsbus.Config) {
			c.AckWait, c.MaxDeliveries = ackWait, maxDeliveries
			// The suite takes right after it sends, from ~20 parallel
			// subtests, often under the race detector: the consumers may
			// hear of new work milliseconds late.
			c.TakeWait = 20 * time.Millisecond
		})
		return transporttest.Harness{
			Transport: tr, Advance: time.Sleep, AckWait: ackWait, MaxDeliveries: maxDeliveries,
			Patience: 5 * time.Second, Quiet: 50 * time.Millisecond,
			// A mailbox's capacity is the work stream's message limit: a taken
			// message leaves it only when it is settled.
			SettleFreesRoom: true,
		}
	})
}
