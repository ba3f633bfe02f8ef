package natsbus_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/transport"
)

// startServer starts an in-process JetStream server that syncs every write,
// with no listener unless listen is set (then on a random loopback port).
func startServer(tb testing.TB, listen bool) *server.Server {
	tb.Helper()
	return startServerSync(tb, listen, true)
}

// startServerSync is startServer with the choice of syncing every write
// (syncAlways) or on the server's default interval (2 minutes).
func startServerSync(tb testing.TB, listen, syncAlways bool) *server.Server {
	tb.Helper()
	opts := &server.Options{JetStream: true, StoreDir: tb.TempDir(), SyncAlways: syncAlways, NoLog: true, NoSigs: true}
	if listen {
		opts.Host, opts.Port = "127.0.0.1", -1
	} else {
		opts.DontListen = true
	}
	return runServer(tb, opts)
}

// runServer starts an in-process server with opts, shut down at the end of
// the test.
func runServer(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	ns, err := server.NewServer(opts)
	if err != nil {
		tb.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		tb.Fatal("nats server not ready")
	}
	tb.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// connect opens a client connection to ns, closed at the end of the test.
func connect(tb testing.TB, ns *server.Server) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// newTransport returns a Transport on a new connection to ns, closed at the
// end of the test.
func newTransport(tb testing.TB, ns *server.Server, change func(*natsbus.Config)) *natsbus.Transport {
	tb.Helper()
	cfg := natsbus.DefaultConfig()
	memStorage(&cfg)
	if change != nil {
		change(&cfg)
	}
	tr, err := natsbus.New(context.Background(), connect(tb, ns), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tr.Close() })
	return tr
}

// testTransport is a Transport on an in-process server of its own, closed
// at the end of the test, with the steps most of its tests begin with.
type testTransport struct {
	*natsbus.Transport
	tb testing.TB
	ns *server.Server
}

// newTestTransport starts a server and returns a Transport on it with
// memory storage and each of changes applied to its config in turn.
func newTestTransport(tb testing.TB, changes ...func(*natsbus.Config)) *testTransport {
	tb.Helper()
	return onServer(tb, startServer(tb, false), changes...)
}

// another returns a second Transport on tt's server, as another process's.
func (tt *testTransport) another(changes ...func(*natsbus.Config)) *testTransport {
	tt.tb.Helper()
	return onServer(tt.tb, tt.ns, changes...)
}

// onServer is newTestTransport on ns, a server the test started itself
// (with options of its own, or to share among subtests).
func onServer(tb testing.TB, ns *server.Server, changes ...func(*natsbus.Config)) *testTransport {
	tb.Helper()
	tr := newTransport(tb, ns, func(c *natsbus.Config) {
		for _, change := range changes {
			change(c)
		}
	})
	return &testTransport{Transport: tr, tb: tb, ns: ns}
}

// open opens agent's mailbox with capacity (0: the configured one).
func (tt *testTransport) open(agent string, capacity int) {
	tt.tb.Helper()
	if err := tt.OpenMailbox(agent, capacity); err != nil {
		tt.tb.Fatalf("OpenMailbox %s: %v", agent, err)
	}
}

// send sends agent work at normal priority under each of keys, in order.
func (tt *testTransport) send(agent string, keys ...string) {
	tt.tb.Helper()
	for _, key := range keys {
		if err := tt.SendWork(tt.tb.Context(), work(agent, transport.PriorityNormal, key)); err != nil {
			tt.tb.Fatalf("SendWork %s: %v", key, err)
		}
	}
}

// seen waits until agent's consumers know of the n messages sent.
func (tt *testTransport) seen(agent string, n int) {
	tt.tb.Helper()
	seen(tt.tb, tt.ns, agent, n)
}

// take takes up to n of agent's work (0: all that waits).
func (tt *testTransport) take(agent string, n int) []*transport.Message {
	tt.tb.Helper()
	ms, err := tt.TakeWork(tt.tb.Context(), agent, n)
	if err != nil {
		tt.tb.Fatalf("TakeWork %s: %v", agent, err)
	}
	return ms
}

// sendAndTake opens agent's mailbox, sends it work under key and takes
// that work: the start of every test of what becomes of work once taken.
func (tt *testTransport) sendAndTake(agent, key string) *transport.Message {
	tt.tb.Helper()
	tt.open(agent, 0)
	tt.send(agent, key)
	tt.seen(agent, 1)
	got := tt.take(agent, 1)
	if len(got) != 1 || got[0].IdempotencyKey != key {
		tt.tb.Fatalf("got %v taken, want [%s]", keys(got), key)
	}
	return got[0]
}

// collectDeadLetters collects the dead letters tt reports from now on.
func (tt *testTransport) collectDeadLetters() *deadLetters {
	d, _ := collect(tt.Transport)
	return d
}

// jetStream is a plain JetStream client on tt's server, as an agent
// without natsbus has.
func (tt *testTransport) jetStream() jetstream.JetStream {
	tt.tb.Helper()
	js, err := jetstream.New(connect(tt.tb, tt.ns))
	if err != nil {
		tt.tb.Fatal(err)
	}
	return js
}

// work is a message of work for agent at priority p.
func work(agent string, p transport.Priority, key string) *transport.Message {
	return &transport.Message{Type: transport.MessageHandoff, From: "engine", To: agent, Priority: p, RequiresAck: true,
		IdempotencyKey: key, Content: map[string]any{"action": "run", "key": key}}
}

// deadLetters collects the dead letters a transport reports.
type deadLetters struct {
	mu  sync.Mutex
	got []transport.DeadLetter
}

func collect(tr *natsbus.Transport) (*deadLetters, func()) {
	d := &deadLetters{}
	cancel := tr.OnDeadLetter(func(dl transport.DeadLetter) {
		d.mu.Lock()
		d.got = append(d.got, dl)
		d.mu.Unlock()
	})
	return d, cancel
}

func (d *deadLetters) all() []transport.DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]transport.DeadLetter(nil), d.got...)
}

// waitFor polls cond every few milliseconds for up to 10 seconds: the
// conditions tested come true in milliseconds, and the bound only stops a
// broken test.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// balanced returns tt's counts, failing unless they add up.
func (tt *testTransport) balanced() transport.Snapshot {
	tt.tb.Helper()
	s := tt.Metrics()
	wantBalanced(tt.tb, s)
	return s
}

// memStorage has a transport keep its streams in memory.
func memStorage(c *natsbus.Config) { c.Storage = jetstream.MemoryStorage }

// settled waits (for what) until none of tr's work is in flight, and
// returns its counts, failing unless they add up.
func settled(tb testing.TB, tr *natsbus.Transport, what string) transport.Snapshot {
	tb.Helper()
	var s transport.Snapshot
	waitFor(tb, what, func() bool { s = tr.Metrics(); return s.InFlight == 0 })
	wantBalanced(tb, s)
	return s
}

// wantBalanced fails unless s's counts add up.
func wantBalanced(tb testing.TB, s transport.Snapshot) {
	tb.Helper()
	if sum := s.Delivered + s.DeadLettered + uint64(s.Queued) + uint64(s.InFlight); sum != s.Accepted {
		tb.Errorf("got accepted %d, delivered %d + dead %d + queued %d + in flight %d = %d, want them equal",
			s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight, sum)
	}
}

// keys are the idempotency keys of ms, in order.
func keys(ms []*transport.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.IdempotencyKey
	}
	return out
}

// seen waits until agent's consumers know of the n messages sent: JetStream
// tells them a moment after it acknowledges a publish, and a take waits
// for the news only Config.TakeWait at each level.
func seen(tb testing.TB, ns *server.Server, agent string, n int) {
	tb.Helper()
	js, err := jetstream.New(connect(tb, ns))
	if err != nil {
		tb.Fatal(err)
	}
	waitFor(tb, "the consumers to see the work", func() bool {
		var pending uint64
		for _, level := range []string{"critical", "high", "normal", "low"} {
			c, err := js.Consumer(context.Background(), natsbus.WorkStream(agent), level)
			if err != nil {
				tb.Fatal(err)
			}
			info, err := c.Info(context.Background())
			if err != nil {
				tb.Fatal(err)
			}
			pending += info.NumPending
		}
		return pending == uint64(n)
	})
}
