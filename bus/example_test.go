package bus_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

func Example() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("FlightAgent")
	_ = b.Register("PaymentAgent")

	ctx := context.Background()
	for _, p := range []transport.Priority{transport.PriorityLow, transport.PriorityHigh, transport.PriorityNormal} {
		err := b.Send(ctx, &transport.Message{
			Type:     transport.MessageRequest,
			From:     "FlightAgent",
			To:       "PaymentAgent",
			Priority: p,
			Content:  map[string]any{"action": "process_payment", "amount": 450},
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	msgs, _ := b.Receive("PaymentAgent", 0)
	for _, m := range msgs {
		fmt.Println(m.Priority, m.Action())
	}
	// Output:
	// HIGH process_payment
	// NORMAL process_payment
	// LOW process_payment
}

func ExampleBus_Send_validation() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("PaymentAgent")

	err := b.Send(context.Background(), &transport.Message{Type: transport.MessageRequest, From: "FlightAgent", To: "PaymentAgent"})
	var ve *transport.ValidationError
	fmt.Println(err, errors.As(err, &ve), ve.Field)
	// Output: bus: content is required true content
}

func ExampleBus_Request() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("PaymentAgent")
	ctx := context.Background()

	go func() { // the payment agent answers one request
		req, err := b.ReceiveWait(ctx, "PaymentAgent")
		if err != nil {
			return
		}
		_ = b.Reply(ctx, req, &transport.Message{Content: map[string]any{"action": "payment_processed", "status": "ok"}})
	}()

	resp, err := b.Request(ctx, &transport.Message{
		From: "HotelAgent", To: "PaymentAgent", CorrelationID: "cor_123",
		Content: map[string]any{"action": "process_payment"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Type, resp.From, "->", resp.To, resp.CorrelationID, resp.Content["status"])
	// Output: RESPONSE PaymentAgent -> HotelAgent cor_123 ok
}

func ExampleBus_Broadcast() {
	b := bus.New()
	defer b.Close()
	for _, a := range []string{"Orchestrator", "FlightAgent", "HotelAgent"} {
		_ = b.Register(a)
	}
	deliveries, err := b.Broadcast(context.Background(), &transport.Message{
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

func ExampleBus_Publish() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("Early")
	_ = b.Register("Late")
	_ = b.Subscribe("Early", "orders")
	ctx := context.Background()
	for _, id := range []string{"o-1", "o-2"} {
		_, _ = b.Publish(ctx, "orders", &transport.Message{Type: transport.MessageNotification, From: "Shop",
			Content: map[string]any{"action": "order_placed", "order": id}})
	}
	_ = b.Subscribe("Late", "orders") // replayed from the topic's retention window
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

func ExampleBus_DeadLetters() {
	b := bus.New()
	defer b.Close()
	m := &transport.Message{Type: transport.MessageRequest, From: "FlightAgent", To: "PaymentAgent",
		Content: map[string]any{"action": "process_payment"}}
	err := b.Send(context.Background(), m) // PaymentAgent is not registered yet
	fmt.Println(errors.Is(err, transport.ErrUnknownAgent))
	for _, d := range b.DeadLetters() {
		fmt.Println(d.Reason, d.Message.Action())
	}

	_ = b.Register("PaymentAgent")
	_ = b.Requeue(m.MessageID)
	msgs, _ := b.Receive("PaymentAgent", 0)
	fmt.Println(len(msgs), len(b.DeadLetters()))

	s := b.Metrics()
	fmt.Println(s.Accepted, "=", s.Delivered, "+", s.DeadLettered, "+", s.Queued, s.Balanced())
	// Output:
	// true
	// receiver_not_found process_payment
	// 1 0
	// 2 = 1 + 1 + 0 true
}
