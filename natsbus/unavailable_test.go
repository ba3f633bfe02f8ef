package natsbus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/transport"
)

// A work stream that lost its quorum takes no send: SendWork says so with
// an error matching transport.ErrUnavailable, not a refusal, and the same send
// made again once the stream is back is kept once.
func TestSendWork_AStreamWithoutQuorumIsUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of three nats-server processes")
	}
	c := clustertest.Start(t, 3)
	nc := c.Connect(t, 0, "sender")
	cfg := natsbus.DefaultConfig()
	cfg.Replicas = 3
	cfg.Timeout = time.Second
	ctx := context.Background()
	tr, err := clustertest.OpenRetrying(ctx, func() (*natsbus.Transport, error) { return natsbus.New(ctx, nc, cfg) })
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := clustertest.OpenRetrying(ctx, func() (struct{}, error) { return struct{}{}, tr.OpenMailbox("a", 0) }); err != nil {
		t.Fatal(err)
	}
	send := func() error {
		m := &transport.Message{Type: transport.MessageHandoff, From: "e", To: "a", IdempotencyKey: "i:1", RequiresAck: true, Content: map[string]any{"action": "work"}}
		return tr.SendWork(ctx, m)
	}
	c.Kill(1)
	c.Kill(2)
	err = send()
	if !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("got %v, want an error matching transport.ErrUnavailable", err)
	}
	c.Restart(1)
	c.Restart(2)
	clustertest.WaitFor(t, "the stream to take the send again", 2*time.Minute, func() bool { return send() == nil })
	if err := send(); err != nil {
		t.Fatal(err)
	}
	var got []*transport.Message
	clustertest.WaitFor(t, "the work to be taken", time.Minute, func() bool {
		ms, err := tr.TakeWork(ctx, "a", 0)
		if err == nil {
			got = append(got, ms...)
		}
		return len(got) > 0
	})
	if ms, _ := tr.TakeWork(ctx, "a", 0); len(ms)+len(got) != 1 {
		t.Fatalf("got %d messages, want the key kept once", len(ms)+len(got))
	}
}

// A server out of storage answers a send 503 "insufficient resources": the
// send is unavailable, not refused, so the engine sends it again (and the
// run goes on waiting) instead of failing the run; once space is freed the
// same send goes through. The storage limit of JetStream stands for a full
// disk: the server answers both the same way, and the limit needs no root.
func TestSendWork_AServerOutOfStorageIsUnavailable(t *testing.T) {
	ns := runServer(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), JetStreamMaxStore: 256 << 10, DontListen: true, NoLog: true, NoSigs: true})
	tr := onServer(t, ns, func(c *natsbus.Config) { c.Storage = jetstream.FileStorage })
	tr.open("a", 0)
	ctx := context.Background()
	js := tr.jetStream()
	filler, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "filler", Subjects: []string{"filler"}})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, js)
	err = tr.SendWork(ctx, work("a", transport.PriorityNormal, "i:1"))
	if !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("got %v, want an error matching transport.ErrUnavailable", err)
	}
	var full *transport.QueueFullError
	if errors.As(err, &full) {
		t.Fatalf("got %v, want no *transport.QueueFullError: the mailbox has room", err)
	}
	if err := filler.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tr.SendWork(ctx, work("a", transport.PriorityNormal, "i:1")); err != nil {
		t.Fatalf("got %v once space was freed, want the send taken", err)
	}
	if ms := tr.take("a", 0); len(ms) != 1 {
		t.Fatalf("got %d messages, want the one sent", len(ms))
	}
}

// fill publishes on subject "filler" until the server refuses for want of
// storage (at most 1,000 messages of 8 KiB: the limit is far lower).
func fill(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	data := make([]byte, 8<<10)
	for range 1000 {
		_, err := js.Publish(context.Background(), "filler", data)
		var api *jetstream.APIError
		if errors.As(err, &api) && api.Code == 503 {
			return
		}
		if err != nil {
			t.Fatalf("filling the server: %v", err)
		}
	}
	t.Fatal("the server took 8 MiB under a storage limit of 256 KiB")
}
