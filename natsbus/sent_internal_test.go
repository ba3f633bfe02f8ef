package natsbus

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/transport"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The work a Transport remembers stays within its bounds, in count and in
// bytes: past them the oldest is forgotten, and forgetting keeps the order
// as small as what it orders.
func TestSentWork_BoundedOldestForgotten(t *testing.T) {
	s := newSentWork()
	for seq := range uint64(maxSent + 10) {
		s.put("S", seq, []byte("x"))
	}
	if len(s.items) != maxSent {
		t.Fatalf("got %d messages kept, want %d", len(s.items), maxSent)
	}
	if _, ok := s.get("S", 9); ok {
		t.Error("the 10th oldest is kept, want it forgotten")
	}
	if _, ok := s.get("S", 10); !ok {
		t.Error("the 11th oldest is forgotten, want it kept")
	}
	big := []byte(strings.Repeat("x", maxSentBytes/4))
	for seq := range uint64(8) {
		s.put("B", seq, big)
	}
	if s.bytes > maxSentBytes {
		t.Errorf("got %d bytes kept, want at most %d", s.bytes, maxSentBytes)
	}
	for seq := range uint64(10 * maxSent) {
		s.put("F", seq, []byte("x"))
		s.forget("F", seq)
	}
	if len(s.order) > 2*maxSent+1 {
		t.Errorf("got an order of %d keys for %d messages, want it compacted", len(s.order), len(s.items))
	}
}

// A Transport that hears of terminated work another one sent asks it, and
// gets the work as it was sent; work no Transport remembers is told by
// what the advisory says.
func TestTerminatedWork_AskedOfTheSender(t *testing.T) {
	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, DontListen: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	open := func() *Transport {
		nc, err := nats.Connect("", nats.InProcessServer(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		cfg := DefaultConfig()
		cfg.Storage = jetstream.MemoryStorage
		tr, err := New(t.Context(), nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
		return tr
	}
	sender, other := open(), open()
	if err := sender.OpenMailbox("a", 0); err != nil {
		t.Fatal(err)
	}
	m := &transport.Message{Type: transport.MessageHandoff, From: "engine", To: "a", RequiresAck: true, IdempotencyKey: "i:1",
		Content: map[string]any{"action": "run"}}
	if err := sender.SendWork(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	stream := WorkStream("a")
	got := other.terminatedWork(t.Context(), stream, 1)
	if got.MessageID != m.MessageID || got.Key() != "i:1" {
		t.Fatalf("got %s key %q, want the work sent, %s key i:1", got.MessageID, got.Key(), m.MessageID)
	}
	sender.sent.forget(stream, 1)
	got = other.terminatedWork(t.Context(), stream, 1)
	if got.MessageID != stream+":1" || got.To != "a" {
		t.Fatalf("work no one remembers: got %s to %s, want %s:1 to a", got.MessageID, got.To, stream)
	}
}
