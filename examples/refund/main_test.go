package main

import (
	"context"
	"os"
)

func Example() {
	if err := run(context.Background(), os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// order 12345 (50): COMPLETED after 4 steps
	//   path:     VALIDATING -> REVIEWING -> REFUNDING -> NOTIFYING -> COMPLETED
	//   handoffs: customer->seller, seller->payment, payment->notification
	// order 23456 (350): REJECTED after 2 steps
	//   path:     VALIDATING -> REVIEWING -> REJECTED
	//   handoffs: customer->seller, seller->notification
	// order 34567 (900): REJECTED after 1 steps
	//   path:     VALIDATING -> REJECTED
	//   handoffs: customer->notification
}
