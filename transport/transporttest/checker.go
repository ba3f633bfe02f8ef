package transporttest

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// poll is the pause between two looks at a transport that has not caught
// up yet.
const poll = 2 * time.Millisecond

// checker runs one subtest's calls against its transport and fails the
// subtest, with what it got and what it wanted, when a call goes wrong.
type checker struct {
	t  *testing.T
	h  Harness
	tr transport.Transport
}

// eventually polls cond until it holds or the harness's patience runs out;
// then it fails with cond's last explanation.
func (c *checker) eventually(cond func() (ok bool, why string)) {
	c.t.Helper()
	deadline := time.Now().Add(c.h.Patience)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s (waited %v)", why, c.h.Patience)
		}
		time.Sleep(poll)
	}
}

func (c *checker) open(agent string, capacity int) {
	c.t.Helper()
	require.NoError(c.t, c.tr.OpenMailbox(agent, capacity), "OpenMailbox(%q, %d)", agent, capacity)
}

// send sends m and returns its idempotency key, read before the transport
// owns m.
func (c *checker) send(m *transport.Message) string {
	c.t.Helper()
	key := m.Key()
	require.NoError(c.t, c.tr.SendWork(c.t.Context(), m), "SendWork %s to %s", key, m.To)
	return key
}

// take takes exactly n messages of agent, polling until they have all come,
// never asking for more than are still due.
func (c *checker) take(agent string, n int) []*transport.Message {
	c.t.Helper()
	var got []*transport.Message
	c.eventually(func() (bool, string) {
		want := n - len(got)
		ms, err := c.tr.TakeWork(c.t.Context(), agent, want)
		require.NoError(c.t, err, "TakeWork(%q, %d)", agent, want)
		require.LessOrEqual(c.t, len(ms), want, "TakeWork(%q, %d) returned more than max", agent, want)
		got = append(got, ms...)
		return len(got) == n, fmt.Sprintf("took %d messages of %s %v, want %d", len(got), agent, keys(got), n)
	})
	return got
}

// takeNone watches agent's mailbox for the harness's quiet time and fails
// if anything comes out of it.
func (c *checker) takeNone(agent string) {
	c.t.Helper()
	deadline := time.Now().Add(c.h.Quiet)
	for {
		ms, err := c.tr.TakeWork(c.t.Context(), agent, 0)
		require.NoError(c.t, err, "TakeWork(%q, 0)", agent)
		if len(ms) > 0 {
			c.t.Fatalf("took %v from %s, want nothing", keys(ms), agent)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(poll)
	}
}

func (c *checker) ack(ms ...*transport.Message) {
	c.t.Helper()
	for _, m := range ms {
		require.NoError(c.t, c.tr.Ack(c.t.Context(), m), "Ack %s", m.Key())
	}
}

func (c *checker) nack(m *transport.Message) {
	c.t.Helper()
	require.NoError(c.t, c.tr.Nack(c.t.Context(), m), "Nack %s", m.Key())
}

// advance makes d of the transport's time pass.
func (c *checker) advance(d time.Duration) { c.h.Advance(d) }

// counts are the figures of a transport.Snapshot that accounting adds
// up: Accepted == Delivered + DeadLettered + Queued + InFlight.
type counts struct {
	Accepted, Delivered, DeadLettered uint64
	Queued, InFlight                  int
}

func (n counts) String() string {
	return fmt.Sprintf("accepted %d = delivered %d + dead-lettered %d + queued %d + in flight %d",
		n.Accepted, n.Delivered, n.DeadLettered, n.Queued, n.InFlight)
}

// addsUp reports whether n keeps accounting.
func (n counts) addsUp() bool {
	return n.Queued >= 0 && n.InFlight >= 0 &&
		n.Accepted == n.Delivered+n.DeadLettered+uint64(n.Queued)+uint64(n.InFlight)
}

func countsOf(s transport.Snapshot) counts {
	return counts{Accepted: s.Accepted, Delivered: s.Delivered, DeadLettered: s.DeadLettered, Queued: s.Queued, InFlight: s.InFlight}
}

// metrics waits for the transport's metrics to show want and returns the
// snapshot that did. Every snapshot it reads must add up.
func (c *checker) metrics(want counts) transport.Snapshot {
	c.t.Helper()
	var s transport.Snapshot
	c.eventually(func() (bool, string) {
		s = c.tr.Metrics()
		got := countsOf(s)
		if !got.addsUp() {
			c.t.Fatalf("got metrics that do not add up: %v", got)
		}
		return got == want, fmt.Sprintf("got metrics %v, want %v", got, want)
	})
	return s
}

// letters records what a transport's OnDeadLetter reports.
type letters struct {
	mu     sync.Mutex
	got    []transport.DeadLetter
	cancel func()
}

// watch subscribes to the transport's dead letters until the subtest ends.
func (c *checker) watch() *letters {
	l := &letters{}
	l.cancel = c.tr.OnDeadLetter(func(d transport.DeadLetter) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got = append(l.got, d)
	})
	require.NotNil(c.t, l.cancel, "OnDeadLetter returned a nil cancel")
	c.t.Cleanup(l.cancel)
	return l
}

func (l *letters) all() []transport.DeadLetter {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// wait waits until l holds n dead letters and returns them; more than n
// fails at once.
func (c *checker) wait(l *letters, n int) []transport.DeadLetter {
	c.t.Helper()
	var got []transport.DeadLetter
	c.eventually(func() (bool, string) {
		got = l.all()
		if len(got) > n {
			c.t.Fatalf("got %d dead letters %v, want %d", len(got), letterKeys(got), n)
		}
		return len(got) == n, fmt.Sprintf("got %d dead letters %v, want %d", len(got), letterKeys(got), n)
	})
	return got
}

// letterFor returns the dead letter of the message with key, failing if
// there is none or more than one, and checks its reason.
func (c *checker) letterFor(ds []transport.DeadLetter, key string, reason transport.DeadLetterReason) transport.DeadLetter {
	c.t.Helper()
	var found []transport.DeadLetter
	for _, d := range ds {
		if d.Message != nil && d.Message.Key() == key {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		c.t.Fatalf("got %d dead letters of %s among %v, want 1", len(found), key, letterKeys(ds))
	}
	if d := found[0]; d.Reason != reason {
		c.t.Fatalf("got %s dead-lettered %q (%s), want %q", key, d.Reason, d.LastError, reason)
	}
	return found[0]
}

// work is a realistic work item: the HANDOFF message wire.Encode writes for
// step of a run on agent, whose idempotency key is "<agent>-run:<step>".
func work(agent string, step int) *transport.Message {
	return wire.Encode(task(agent, step, 5))
}

// workAt is work at a priority rank (1 critical ... 10 low).
func workAt(agent string, step, rank int) *transport.Message {
	return wire.Encode(task(agent, step, rank))
}

func task(agent string, step, rank int) *registry.Task {
	return &registry.Task{
		Agent:       agent,
		WorkflowID:  "transporttest",
		Version:     1,
		InstanceID:  agent + "-run",
		State:       "working",
		Reason:      "start",
		Description: "step " + strconv.Itoa(step) + " of the conformance run",
		Step:        step,
		Attempt:     1,
		Priority:    rank,
		Input:       map[string]any{"order": "A-1"},
		Context:     map[string]any{"step": step},
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
}

// keyOf is the idempotency key work(agent, step) carries.
func keyOf(agent string, step int) string { return agent + "-run:" + strconv.Itoa(step) }

func keys(ms []*transport.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Key()
	}
	return out
}

func letterKeys(ds []transport.DeadLetter) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		if d.Message == nil {
			out[i] = "<nil message>/" + string(d.Reason)
			continue
		}
		out[i] = d.Message.Key() + "/" + string(d.Reason)
	}
	return out
}
