package bus_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/internal/cputime"
	"github.com/batonhq/baton/transport"
)

// benchTemplate is the payload every benchmark moves: a REQUEST with a
// small content map shared (read-only) by all copies.
func benchTemplate() transport.Message {
	return transport.Message{
		MessageID: "00000000-0000-4000-8000-000000000000",
		Type:      transport.MessageRequest,
		From:      "FlightAgent",
		To:        "PaymentAgent",
		Content:   map[string]any{"action": "process_payment", "parameters": map[string]any{"amount": 450.0}},
	}
}

// reportCPU reports the process's CPU time per operation since cpu0 (the
// garbage collector's included): on a shared machine wall time measures
// the neighbours too, so the bus is compared with its floor in CPU time.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkChannelBaseline moves the same message through a buffered Go
// channel: the floor the bus is measured against.
func BenchmarkChannelBaseline(b *testing.B) {
	tmpl := benchTemplate()
	ch := make(chan *transport.Message, bus.DefaultMailboxCapacity)
	b.ReportAllocs()
	defer reportCPU(b, cputime.Process())
	for b.Loop() {
		m := new(transport.Message)
		*m = tmpl
		ch <- m
		if got := <-ch; got != m {
			b.Fatal("got another message")
		}
	}
}

// BenchmarkSendReceive moves one message through one mailbox: Send then
// TryReceive. preset_id gives the message an id, so the only allocation is
// the message; bus_uuid lets the bus draw a UUID v4 for it. The other cases
// add one guarantee each to preset_id: ack sends a requires_ack message and
// acknowledges it (in-flight tracking; the sender has no mailbox, so no ACK
// message is sent back), ack_notify also delivers the ACK to the registered
// sender and receives it, and idempotency_key gives every message a fresh
// key that the bus remembers (and evicts past 65 536 keys).
func BenchmarkSendReceive(b *testing.B) {
	for _, tc := range []struct {
		name          string
		preset, ack   bool
		notify, keyed bool
	}{
		{name: "preset_id", preset: true},
		{name: "bus_uuid"},
		{name: "ack", preset: true, ack: true},
		{name: "ack_notify", preset: true, ack: true, notify: true},
		{name: "idempotency_key", preset: true, keyed: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bs := bus.New(bus.WithIdempotency(24*time.Hour, 1<<16))
			defer bs.Close()
			if err := bs.Register("PaymentAgent"); err != nil {
				b.Fatal(err)
			}
			if tc.notify {
				if err := bs.Register("FlightAgent"); err != nil {
					b.Fatal(err)
				}
			}
			tmpl := benchTemplate()
			tmpl.RequiresAck = tc.ack
			if !tc.preset {
				tmpl.MessageID = ""
			}
			// Only the keyed case makes its keys: 131,072 strings live
			// through the other cases would be marked by every garbage
			// collection, a cost the channel baseline does not pay
			// (measured: a third of preset_id's instructions).
			var keys []string
			if tc.keyed {
				keys = make([]string, 1<<17)
				for i := range keys {
					keys[i] = fmt.Sprintf("wf-%d:%d", i/7, i%7)
				}
			}
			ctx := context.Background()
			i := 0
			b.ReportAllocs()
			defer reportCPU(b, cputime.Process())
			for b.Loop() {
				m := new(transport.Message)
				*m = tmpl
				if tc.keyed {
					m.IdempotencyKey = keys[i&(len(keys)-1)]
					i++
				}
				if err := bs.Send(ctx, m); err != nil {
					b.Fatal(err)
				}
				got, ok, err := bs.TryReceive("PaymentAgent")
				if err != nil || !ok || got != m {
					b.Fatalf("got %v %v %v, want the message", got, ok, err)
				}
				if !tc.ack {
					continue
				}
				if err := bs.Ack(ctx, got); err != nil {
					b.Fatal(err)
				}
				if tc.notify {
					if _, ok, _ := bs.TryReceive("FlightAgent"); !ok {
						b.Fatal("got no ACK, want one")
					}
				}
			}
		})
	}
}

// BenchmarkSendReceiveParallel runs Send+TryReceive from every P, each
// goroutine on its own mailbox (shared: all on one mailbox).
func BenchmarkSendReceiveParallel(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			bs := bus.New(bus.WithCapacity(1 << 20))
			defer bs.Close()
			if err := bs.Register("shared"); err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			ctx := context.Background()
			b.ReportAllocs()
			defer reportCPU(b, cputime.Process())
			b.RunParallel(func(pb *testing.PB) {
				agent := "shared"
				if !shared {
					agent = fmt.Sprintf("agent-%d", next.Add(1))
					if err := bs.Register(agent); err != nil {
						b.Error(err)
						return
					}
				}
				tmpl := benchTemplate()
				tmpl.To = agent
				for pb.Next() {
					m := new(transport.Message)
					*m = tmpl
					if err := bs.Send(ctx, m); err != nil {
						b.Error(err)
						return
					}
					if _, _, err := bs.TryReceive(agent); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
