package transporttest

import (
	"testing"
	"time"

	"github.com/batonhq/baton/transport"
	"github.com/stretchr/testify/require"
)

// Harness is one transport under test, fresh and empty, with the means to
// make its time pass and the settings the suite must know.
type Harness struct {
	// Transport is the transport under test, with no mailbox open and
	// nothing sent yet.
	Transport transport.Transport
	// Advance makes d of the transport's time pass: a simulated clock moves
	// and fires the timers that fall due before Advance returns; a
	// transport on the wall clock sleeps for d.
	Advance func(d time.Duration)
	// AckWait is how long a taken message may stay unsettled before the
	// transport delivers it again.
	AckWait time.Duration
	// MaxDeliveries is how many times a message is handed out before the
	// transport dead-letters it "max_retries"; at least 2.
	MaxDeliveries int
	// Patience bounds each wait for something that must happen (a
	// redelivery, a dead letter, metrics catching up); 0 means 3s. The
	// suite polls, so a fast transport never waits for it.
	Patience time.Duration
	// Quiet is how long the suite watches for something that must not
	// happen (a message coming back); 0 means 20ms.
	Quiet time.Duration
	// SettleFreesRoom says that a mailbox's capacity bounds the messages
	// taken and not yet settled as well as those waiting (a JetStream work
	// stream's message limit, say): room comes back when a taken message
	// is acked, not when it is taken. The in-memory bus frees room on take.
	SettleFreesRoom bool
}

// shortTTL is the time to live of the messages meant to expire: the suite
// makes 2*shortTTL pass before it takes them.
const shortTTL = time.Second

// Run runs the conformance suite against the transports open returns. open
// is called once per subtest and must return a new, empty transport;
// closing it is open's business (t.Cleanup). Subtests run in parallel, so
// open must not share a transport, a clock or a stream between calls.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	t.Helper()
	for _, tt := range subtests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := open(t)
			require.NotNil(t, h.Transport, "open returned no transport")
			require.NotNil(t, h.Advance, "open returned no Advance")
			require.Positive(t, h.AckWait, "open returned no AckWait")
			require.GreaterOrEqual(t, h.MaxDeliveries, 2, "open returned MaxDeliveries below 2")
			if h.Patience <= 0 {
				h.Patience = 3 * time.Second
			}
			if h.Quiet <= 0 {
				h.Quiet = 20 * time.Millisecond
			}
			tt.fn(&checker{t: t, h: h, tr: h.Transport})
		})
	}
}

// subtests are the suite's checks, each run on a transport of its own.
var subtests = []struct {
	name string
	fn   func(*checker)
}{
	{"OpenMailboxTwiceKeepsQueue", testOpenTwice},
	{"UnknownAgentDeadLettered", testUnknownAgent},
	{"InvalidMessageRefused", testInvalid},
	{"PriorityThenSendOrder", testPriority},
	{"CapacityRefusesAndDeadLetters", testCapacity},
	{"OfferToAFullMailboxRefusedNotDeadLettered", testOffer},
	{"AckSettles", testAck},
	{"NackRedelivers", testNack},
	{"RedeliveryAfterAckWait", testRedelivery},
	{"RejectDeadLetters", testReject},
	{"IdempotencyKeyDedupes", testIdempotency},
	{"ExpiredNeverDelivered", testExpired},
	{"AccountingAddsUp", testAccounting},
	{"ConcurrentSendAndTake", testConcurrent},
	{"OnDeadLetterCancel", testDeadLetterCancel},
}
