package feature_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/transport"
)

// onEach runs f as a subtest on each transport the features decorate: the
// in-memory bus and natsbus on an in-process NATS server of its own. A
// feature's behaviour is the same on both.
func onEach(t *testing.T, f func(t *testing.T, tr transport.Transport)) {
	t.Helper()
	t.Run("bus", func(t *testing.T) { f(t, newBus(t)) })
	t.Run("nats", func(t *testing.T) { f(t, newNATS(t)) })
}

// newBus returns an in-memory bus closed when the test ends.
func newBus(t testing.TB, opts ...bus.Option) *bus.Bus {
	t.Helper()
	b := bus.New(opts...)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// newNATS returns a natsbus transport on an in-process JetStream server
// (memory storage, no listener), both closed when the test ends; change,
// when given, adjusts the transport's configuration.
func newNATS(t testing.TB, change ...func(*natsbus.Config)) *natsbus.Transport {
	t.Helper()
	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: t.TempDir(), DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cfg := natsbus.DefaultConfig()
	cfg.Storage = jetstream.MemoryStorage
	cfg.TakeWait = 20 * time.Millisecond
	for _, c := range change {
		c(&cfg)
	}
	tr, err := natsbus.New(context.Background(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// TestOnEach_CarriesWork checks the harness itself: work sent on each
// transport is taken back from it.
func TestOnEach_CarriesWork(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		ctx := t.Context()
		if err := tr.OpenMailbox("worker", 0); err != nil {
			t.Fatal(err)
		}
		m := &transport.Message{Type: transport.MessageHandoff, From: "engine", To: "worker", IdempotencyKey: "k1",
			Content: map[string]any{"action": "run"}}
		if err := tr.SendWork(ctx, m); err != nil {
			t.Fatal(err)
		}
		var got []*transport.Message
		for range 100 {
			ms, err := tr.TakeWork(ctx, "worker", 1)
			if err != nil {
				t.Fatal(err)
			}
			if got = ms; len(got) > 0 {
				break
			}
		}
		if len(got) != 1 || got[0].Key() != "k1" {
			t.Fatalf("got %d messages, want the one sent (k1)", len(got))
		}
	})
}
