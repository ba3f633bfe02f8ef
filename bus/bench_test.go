package bus_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/bus"
)

// benchTemplate is the payload every benchmark moves: a REQUEST with a
// small content map shared (read-only) by all copies.
func benchTemplate() bus.Message {
	return bus.Message{
		MessageID: "00000000-0000-4000-8000-000000000000",
		Type:      bus.MessageRequest,
		From:      "FlightAgent",
		To:        "PaymentAgent",
		Content:   map[string]any{"action": "process_payment", "parameters": map[string]any{"amount": 450.0}},
	}
}

// BenchmarkChannelBaseline moves the same message through a buffered Go
// channel: the floor the bus is measured against.
func BenchmarkChannelBaseline(b *testing.B) {
	tmpl := benchTemplate()
	ch := make(chan *bus.Message, bus.DefaultMailboxCapacity)
	b.ReportAllocs()
	for b.Loop() {
		m := new(bus.Message)
		*m = tmpl
		ch <- m
		if got := <-ch; got != m {
			b.Fatal("got another message")
		}
	}
}

// BenchmarkSendReceive moves one message through one mailbox: Send then
// TryReceive. preset_id gives the message an id, so the only allocation is
// the message; bus_uuid lets the bus draw a UUID v4 for it.
func BenchmarkSendReceive(b *testing.B) {
	for _, tc := range []struct {
		name   string
		preset bool
	}{{"preset_id", true}, {"bus_uuid", false}} {
		b.Run(tc.name, func(b *testing.B) {
			bs := bus.New()
			defer bs.Close()
			if err := bs.Register("PaymentAgent"); err != nil {
				b.Fatal(err)
			}
			tmpl := benchTemplate()
			if !tc.preset {
				tmpl.MessageID = ""
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				m := new(bus.Message)
				*m = tmpl
				if err := bs.Send(ctx, m); err != nil {
					b.Fatal(err)
				}
				if got, ok, err := bs.TryReceive("PaymentAgent"); err != nil || !ok || got != m {
					b.Fatalf("got %v %v %v, want the message", got, ok, err)
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
					m := new(bus.Message)
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

// BenchmarkBroadcast50 broadcasts one message to 50 agents and drains them.
func BenchmarkBroadcast50(b *testing.B) {
	bs := bus.New()
	defer bs.Close()
	agents := make([]string, 50)
	for i := range agents {
		agents[i] = fmt.Sprintf("agent-%02d", i)
		if err := bs.Register(agents[i]); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	content := map[string]any{"action": "alert", "alert": "System maintenance in 10 minutes"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bs.Broadcast(ctx, &bus.Message{From: "Orchestrator", Content: content}); err != nil {
			b.Fatal(err)
		}
		for _, a := range agents {
			if _, ok, err := bs.TryReceive(a); err != nil || !ok {
				b.Fatalf("%s got %v %v, want a message", a, ok, err)
			}
		}
	}
}

// BenchmarkRequestReply measures a Request answered by a responder
// goroutine with Reply.
func BenchmarkRequestReply(b *testing.B) {
	bs := bus.New()
	defer bs.Close()
	if err := bs.Register("PaymentAgent"); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			req, err := bs.ReceiveWait(ctx, "PaymentAgent")
			if err != nil {
				return
			}
			if err := bs.Reply(ctx, req, &bus.Message{Content: map[string]any{"action": "payment_done"}}); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	tmpl := benchTemplate()
	tmpl.MessageID = ""
	b.ReportAllocs()
	for b.Loop() {
		m := new(bus.Message)
		*m = tmpl
		if _, err := bs.Request(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cancel()
	<-done
}
