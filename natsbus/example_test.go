package natsbus_test

import (
	"fmt"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/transport"
)

// An agent's work stream and subjects: an id that is not a plain subject
// token is escaped.
func ExampleWorkSubject() {
	fmt.Println(natsbus.WorkStream("seller"), natsbus.WorkSubject("seller", transport.PriorityHigh))
	fmt.Println(natsbus.WorkStream("billing.eu"), natsbus.WorkSubject("billing.eu", transport.PriorityNormal))
	// Output:
	// BATON_WORK_seller baton.work.seller.high
	// BATON_WORK_billing~2Eeu baton.work.billing~2Eeu.normal
}
