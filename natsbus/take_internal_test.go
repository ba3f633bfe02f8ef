package natsbus

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// TestDeliveryKey_MatchesMetadata holds deliveryKey to the stream and
// consumer nats.Msg.Metadata reads from the same reply subject.
func TestDeliveryKey_MatchesMetadata(t *testing.T) {
	for _, reply := range []string{
		"$JS.ACK.BATON_WORK_a.normal.1.12.12.1700000000000000000.0",
		"$JS.ACK._.ACCHASH.BATON_WORK_a.high.2.7.3.1700000000000000000.4.rand",
		"$JS.ACK.hub.ACCHASH.S.C.1.2.3.4.5",
		"$JS.ACK.S.C.1.2.3.4",
		"$JS.ACK.S.C.1.2.3.4.5.6",
		"$JS.ACK..C.1.2.3.4.5",
		"_INBOX.abc.7",
		"",
	} {
		msg := &nats.Msg{Reply: reply, Sub: &nats.Subscription{}}
		md, err := msg.Metadata()
		got, ok := deliveryKey(reply)
		if ok != (err == nil) {
			t.Errorf("%q: got ok %v, want %v (Metadata: %v)", reply, ok, err == nil, err)
			continue
		}
		if ok && got != md.Stream+"."+md.Consumer {
			t.Errorf("%q: got %q, want %q", reply, got, md.Stream+"."+md.Consumer)
		}
	}
}
