package feature_test

import (
	"testing"
	"time"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// routingConfig are the settings of the routing decorators a test
// composes; zero values take the defaults.
type routingConfig struct {
	conv   feature.ConversationLimits
	topics feature.TopicSettings
	bc     feature.BroadcastSettings
	req    feature.RequestSettings
}

// routing is the four routing decorators composed over one transport as
// the package documents it: Conversations directly over the transport,
// then Topics, Broadcaster and Requests, all on one manual clock that
// starts now (a transport checks expiry against the wall clock).
type routing struct {
	clock  *clock.Manual
	conv   *feature.Conversations
	topics *feature.Topics
	bc     *feature.Broadcaster
	req    *feature.Requests
}

// newRouting composes the routing decorators over tr and opens the
// mailboxes of agents through them.
func newRouting(t *testing.T, tr transport.Transport, cfg routingConfig, agents ...string) *routing {
	t.Helper()
	clk := clock.NewManual(time.Now())
	r := &routing{clock: clk}
	r.conv = feature.NewConversations(tr, cfg.conv, clk)
	r.topics = feature.NewTopics(r.conv, cfg.topics, clk)
	r.bc = feature.NewBroadcaster(r.topics, cfg.bc, clk)
	r.req = feature.NewRequests(r.bc, cfg.req, clk)
	t.Cleanup(func() {
		for _, c := range []interface{ Close() error }{r.req, r.bc, r.topics, r.conv} {
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		}
	})
	for _, a := range agents {
		if err := r.req.OpenMailbox(a, 0); err != nil {
			t.Fatalf("open %s: %v", a, err)
		}
	}
	return r
}

// top is the outermost decorator, the one a program sends through.
func (r *routing) top() transport.Transport { return r.req }

// mustSend sends m through every decorator and fails the test on error.
func (r *routing) mustSend(t *testing.T, m *transport.Message) {
	t.Helper()
	if err := r.top().SendWork(t.Context(), m); err != nil {
		t.Fatalf("send %s -> %s: %v", m.From, m.To, err)
	}
}

// takeAll drains agent's mailbox: it takes until a take comes back empty
// (natsbus waits a little for each), at most 100 takes.
func (r *routing) takeAll(t *testing.T, agent string) []*transport.Message {
	t.Helper()
	var out []*transport.Message
	for range 100 {
		ms, err := r.top().TakeWork(t.Context(), agent, 0)
		if err != nil {
			t.Fatalf("take %s: %v", agent, err)
		}
		if len(ms) == 0 {
			return out
		}
		out = append(out, ms...)
	}
	t.Fatalf("take %s: still messages after 100 takes", agent)
	return nil
}

// patience bounds the waits of the helpers below: long enough for a
// loaded machine, short enough to fail a test that would hang.
const patience = 10 * time.Second

// takeOne waits for agent's next message, at most patience.
func (r *routing) takeOne(t *testing.T, agent string) *transport.Message {
	t.Helper()
	m, err := r.takeNext(t, agent)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// takeNext is takeOne for a goroutine: it returns the error instead of
// failing the test.
func (r *routing) takeNext(t *testing.T, agent string) (*transport.Message, error) {
	for start := time.Now(); time.Since(start) < patience; {
		ms, err := r.top().TakeWork(t.Context(), agent, 1)
		if err != nil {
			return nil, err
		}
		if len(ms) == 1 {
			return ms[0], nil
		}
		if t.Context().Err() != nil {
			return nil, t.Context().Err()
		}
		time.Sleep(time.Millisecond)
	}
	return nil, &transport.ValidationError{Field: "agent", Reason: "got no message for " + agent}
}

// waitTimer waits until a callback is scheduled on the routing clock (a
// Request waiting for its answer), at most patience.
func (r *routing) waitTimer(t *testing.T) {
	t.Helper()
	for start := time.Now(); time.Since(start) < patience; {
		if _, ok := r.clock.NextDeadline(); ok {
			return
		}
		time.Sleep(500 * time.Microsecond)
	}
	t.Fatal("got no timer scheduled on the routing clock, want a waiting request")
}

// routingRequest builds a valid REQUEST.
func routingRequest(from, to, action string) *transport.Message {
	return &transport.Message{Type: transport.MessageRequest, From: from, To: to, Content: map[string]any{"action": action}}
}

// routingNotice builds a NOTIFICATION.
func routingNotice(from, to, action string) *transport.Message {
	return &transport.Message{Type: transport.MessageNotification, From: from, To: to, Content: map[string]any{"action": action}}
}

// routingActions returns the actions of msgs.
func routingActions(msgs []*transport.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Action()
	}
	return out
}

// routingIDs returns the message ids of msgs.
func routingIDs(msgs []*transport.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.MessageID
	}
	return out
}

// routingBalanced fails the test unless the transport's accounting balances.
func routingBalanced(t *testing.T, tr transport.Transport) transport.Snapshot {
	t.Helper()
	s := tr.Metrics()
	if !s.Balanced() {
		t.Fatalf("got accepted %d, want delivered %d + dead-lettered %d + queued %d + in flight %d",
			s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight)
	}
	return s
}
