package transporttest_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport/transporttest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	ackWait       = 30 * time.Second
	maxDeliveries = 3
)

// openBus returns a fresh in-memory bus on a manual clock: Advance fires
// its ack timers at once, so no subtest sleeps.
func openBus(t *testing.T) (*bus.Bus, transporttest.Harness) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := bus.New(bus.WithClock(clk), bus.WithAckTimeout(ackWait), bus.WithMaxDeliveries(maxDeliveries))
	t.Cleanup(func() { _ = b.Close() })
	return b, transporttest.Harness{
		Transport: b, Advance: clk.Advance, AckWait: ackWait, MaxDeliveries: maxDeliveries,
		Patience: time.Second, // the bus acts before its calls return: waiting longer finds nothing more
	}
}

// TestBus runs the conformance suite against the in-memory bus.
func TestBus(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transporttest.Harness {
		_, h := openBus(t)
		return h
	})
}
