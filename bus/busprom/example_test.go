package busprom_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/busprom"
	"github.com/batonhq/baton/transport"
)

func ExampleRegister() {
	b := bus.New()
	defer b.Close()
	_ = b.Register("PaymentAgent")
	_ = b.Send(context.Background(), &transport.Message{Type: transport.MessageRequest, From: "FlightAgent", To: "PaymentAgent",
		Content: map[string]any{"action": "process_payment"}})

	reg := prometheus.NewRegistry()
	if _, err := busprom.Register(reg, b); err != nil {
		fmt.Println(err)
		return
	}
	n, _ := testutil.GatherAndCount(reg, "baton_bus_messages_accepted_total", "baton_bus_queue_depth")
	fmt.Println(n, "series")
	// Output: 2 series
}
