package feature_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

// A send to a full mailbox through Retry waits on the schedule and tries
// again; one that never fits is dead-lettered "max_retries", and
// DeadLetters, composed over the same bus, holds it for processing.
func ExampleRetry() {
	b := bus.New()
	defer b.Close()
	dead := feature.NewDeadLetters(b, feature.DeadLetterPolicy{}, nil)
	defer dead.Close()
	r := feature.NewRetry(b, feature.RetrySettings{Schedule: []time.Duration{time.Millisecond, time.Millisecond}}, nil)
	defer r.Close()

	_ = b.OpenMailbox("payments", 1)
	_ = r.SendWork(context.Background(), &transport.Message{Type: transport.MessageRequest, From: "shop", To: "payments",
		Content: map[string]any{"action": "charge"}})
	err := r.SendWork(context.Background(), &transport.Message{Type: transport.MessageRequest, From: "shop", To: "payments",
		Content: map[string]any{"action": "refund"}})

	var full *transport.QueueFullError
	fmt.Println(errors.As(err, &full), full.Attempts)
	held := dead.Held()
	fmt.Println(len(held), held[0].Reason, held[0].Message.Action())
	fmt.Println(r.Stats().Retries, b.Metrics().Balanced())
	// Output:
	// true 3
	// 1 max_retries refund
	// 2 true
}
