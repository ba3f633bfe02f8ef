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
	cfg.Storage = jetstream.MemoryStorage
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

// wantBalanced fails unless s's counts add up.
func wantBalanced(tb testing.TB, s transport.Snapshot) {
	tb.Helper()
	if sum := s.Delivered + s.DeadLettered + uint64(s.Queued) + uint64(s.InFlight); sum != s.Accepted {
		tb.Errorf("got accepted %d, delivered %d + dead %d + queued %d + in flight %d = %d, want them equal",
			s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight, sum)
	}
}
