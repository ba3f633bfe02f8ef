package feature_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

// BenchmarkBroadcast50 broadcasts one message to 50 agents of the bus and
// drains them.
func BenchmarkBroadcast50(b *testing.B) {
	bs := bus.New()
	defer bs.Close()
	bc := feature.NewBroadcaster(bs, feature.BroadcastSettings{}, nil)
	agents := make([]string, 50)
	for i := range agents {
		agents[i] = fmt.Sprintf("agent-%02d", i)
		if err := bc.OpenMailbox(agents[i], 0); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	content := map[string]any{"action": "alert", "alert": "System maintenance in 10 minutes"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bc.Broadcast(ctx, &transport.Message{From: "Orchestrator", Content: content}); err != nil {
			b.Fatal(err)
		}
		for _, a := range agents {
			if _, ok, err := bs.TryReceive(a); err != nil || !ok {
				b.Fatalf("%s got %v %v, want a message", a, ok, err)
			}
		}
	}
}

// BenchmarkRequestReply measures a Request over the bus answered by a
// responder goroutine with Reply.
func BenchmarkRequestReply(b *testing.B) {
	bs := bus.New()
	defer bs.Close()
	req := feature.NewRequests(bs, feature.RequestSettings{}, nil)
	defer req.Close()
	if err := req.OpenMailbox("PaymentAgent", 0); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := bs.ReceiveWait(ctx, "PaymentAgent")
			if err != nil {
				return
			}
			if err := req.Reply(ctx, m, &transport.Message{Content: map[string]any{"action": "payment_done"}}); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		m := &transport.Message{Type: transport.MessageRequest, From: "FlightAgent", To: "PaymentAgent",
			Content: map[string]any{"action": "process_payment", "parameters": map[string]any{"amount": 450.0}}}
		if _, err := req.Request(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cancel()
	<-done
}
