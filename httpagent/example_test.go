package httpagent_test

import (
	"fmt"

	"github.com/batonhq/baton/httpagent"
)

// An HTTP agent written in Go checks the signature of the raw body before
// it decodes the work.
func ExampleVerify() {
	secret := []byte("shared secret")
	body := []byte(`{"message_type":"HANDOFF"}`)
	header := httpagent.Sign(secret, body) // what the server sends in Baton-Signature
	fmt.Println(httpagent.Verify(secret, body, header))
	fmt.Println(httpagent.Verify(secret, []byte(`{"tampered":true}`), header))
	// Output:
	// true
	// false
}
