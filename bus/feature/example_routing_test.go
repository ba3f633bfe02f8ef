package feature_test

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

// The routing decorators compose over any transport, Conversations
// first (directly over it) so that it sees every copy and every answer.
func Example_routing() {
	b := bus.New()
	defer b.Close()
	conv := feature.NewConversations(b, feature.ConversationLimits{}, nil)
	topics := feature.NewTopics(conv, feature.TopicSettings{}, nil)
	bc := feature.NewBroadcaster(topics, feature.BroadcastSettings{}, nil)
	req := feature.NewRequests(bc, feature.RequestSettings{}, nil)
	defer req.Close()
	var tr transport.Transport = req // what the program sends through
	for _, a := range []string{"Orchestrator", "FlightAgent", "HotelAgent"} {
		_ = tr.OpenMailbox(a, 0)
	}
	_ = tr.SendWork(context.Background(), &transport.Message{From: "Orchestrator", To: "*",
		Content: map[string]any{"action": "alert"}})
	for _, a := range []string{"FlightAgent", "HotelAgent"} {
		msgs, _ := tr.TakeWork(context.Background(), a, 0)
		fmt.Println(a, msgs[0].Type, msgs[0].Action())
	}
	// Output:
	// FlightAgent BROADCAST alert
	// HotelAgent BROADCAST alert
}

func ExampleRequests_Request() {
	b := bus.New()
	defer b.Close()
	req := feature.NewRequests(b, feature.RequestSettings{}, nil)
	defer req.Close()
	_ = req.OpenMailbox("PaymentAgent", 0)
	ctx := context.Background()

	done := make(chan struct{})
	go func() { // the payment agent answers one request
		defer close(done)
		got, err := b.ReceiveWait(ctx, "PaymentAgent")
		if err != nil {
			return
		}
		_ = req.Reply(ctx, got, &transport.Message{Content: map[string]any{"action": "payment_processed", "status": "ok"}})
	}()

	resp, err := req.Request(ctx, &transport.Message{
		From: "HotelAgent", To: "PaymentAgent", CorrelationID: "cor_123",
		Content: map[string]any{"action": "process_payment"},
	})
	<-done
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Type, resp.From, "->", resp.To, resp.CorrelationID, resp.Content["status"])
	// Output: RESPONSE PaymentAgent -> HotelAgent cor_123 ok
}

func ExampleBroadcaster_Broadcast() {
	b := bus.New()
	defer b.Close()
	bc := feature.NewBroadcaster(b, feature.BroadcastSettings{}, nil)
	for _, a := range []string{"Orchestrator", "FlightAgent", "HotelAgent"} {
		_ = bc.OpenMailbox(a, 0)
	}
	deliveries, err := bc.Broadcast(context.Background(), &transport.Message{
		From: "Orchestrator", Content: map[string]any{"action": "alert", "alert": "maintenance in 10 minutes"},
	})
	fmt.Println(len(deliveries), err)
	for _, d := range deliveries {
		msgs, _ := b.Receive(d.To, 0)
		fmt.Println(d.To, msgs[0].Type, msgs[0].Content["alert"])
	}
	// Output:
	// 2 <nil>
	// FlightAgent BROADCAST maintenance in 10 minutes
	// HotelAgent BROADCAST maintenance in 10 minutes
}

func ExampleTopics_Publish() {
	b := bus.New()
	defer b.Close()
	topics := feature.NewTopics(b, feature.TopicSettings{}, nil)
	_ = topics.OpenMailbox("Early", 0)
	_ = topics.OpenMailbox("Late", 0)
	_ = topics.Subscribe("Early", "orders")
	ctx := context.Background()
	for _, id := range []string{"o-1", "o-2"} {
		_, _ = topics.Publish(ctx, "orders", &transport.Message{Type: transport.MessageNotification, From: "Shop",
			Content: map[string]any{"action": "order_placed", "order": id}})
	}
	_ = topics.Subscribe("Late", "orders") // replayed from the topic's retention window
	for _, agent := range []string{"Early", "Late"} {
		msgs, _ := b.Receive(agent, 0)
		for _, m := range msgs {
			fmt.Println(agent, m.TopicOf(), m.Content["order"])
		}
	}
	// Output:
	// Early orders o-1
	// Early orders o-2
	// Late orders o-1
	// Late orders o-2
}
