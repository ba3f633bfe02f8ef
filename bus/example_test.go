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
