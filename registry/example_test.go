package registry_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/registry"
)

func ExampleFromSpecs() {
	reg, err := registry.FromSpecs([]registry.Agent{
		{ID: "customer", Type: "support"},
		{ID: "seller", Type: "merchant", Capabilities: []string{"approve_refund"}},
		{ID: "payment", Type: "finance", Capabilities: []string{"refund"}, Queue: 1000},
		{ID: "supervisor", Type: "system", System: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range reg.ByCapability("refund") {
		fmt.Println("refunds:", a.ID)
	}
	_, err = reg.Get("paymnt")
	fmt.Println(errors.Is(err, registry.ErrUnknownAgent), err)
	// Output:
	// refunds: payment
	// true registry: unknown agent "paymnt" (did you mean "payment"?)
}

func ExampleHandlerFunc() {
	seller := registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
		if t.Context["amount"].(int) > 500 {
			return registry.Outcome{}, registry.Reject("amount above my approval limit")
		}
		return registry.Outcome{Trigger: "reviewed", Result: map[string]any{"approval": "APPROVED"}}, nil
	})
	for _, amount := range []int{50, 900} {
		out, err := seller.Handle(context.Background(), &registry.Task{Context: map[string]any{"amount": amount}})
		fmt.Println(out.Trigger, out.Result["approval"], err, registry.IsRetryable(err))
	}
	// Output:
	// reviewed APPROVED <nil> false
	//  <nil> registry: hand-off rejected: amount above my approval limit false
}
