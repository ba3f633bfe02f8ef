package natsbus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/natsbus"
)

// A work stream that lost its quorum takes no send: SendWork says so with
// an error matching bus.ErrUnavailable, not a refusal, and the same send
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
		m := &bus.Message{Type: bus.MessageHandoff, From: "e", To: "a", IdempotencyKey: "i:1", RequiresAck: true, Content: map[string]any{"action": "work"}}
		return tr.SendWork(ctx, m)
	}
	c.Kill(1)
	c.Kill(2)
	err = send()
	if !errors.Is(err, bus.ErrUnavailable) {
		t.Fatalf("got %v, want an error matching bus.ErrUnavailable", err)
	}
	c.Restart(1)
	c.Restart(2)
	clustertest.WaitFor(t, "the stream to take the send again", 2*time.Minute, func() bool { return send() == nil })
	if err := send(); err != nil {
		t.Fatal(err)
	}
	var got []*bus.Message
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
