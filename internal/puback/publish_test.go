package puback_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/puback"
	"github.com/batonhq/baton/natsserver"
)

// TestPublish_AcknowledgedRefusedOrUnanswered: a publish to a stream is
// acknowledged, one whose expectation fails is the server's refusal as
// PublishMsg words it, and one no stream takes is ErrNoStreamResponse
// after the retries, with a context that ends and with one that never does.
func TestPublish_AcknowledgedRefusedOrUnanswered(t *testing.T) {
	ns, err := natsserver.Start(natsserver.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)

	ack, err := puback.Publish(ctx, nc, &nats.Msg{Subject: "s.a", Data: []byte("one")}, deadline)
	if err != nil || ack.Stream != "S" || ack.Sequence != 1 {
		t.Fatalf("got %+v, %v; want S's first message", ack, err)
	}
	ack, err = puback.Publish(context.WithoutCancel(ctx), nc, &nats.Msg{Subject: "s.a", Data: []byte("two")}, deadline)
	if err != nil || ack.Sequence != 2 {
		t.Fatalf("a context that never ends: got %+v, %v; want the second message", ack, err)
	}

	stale := &nats.Msg{Subject: "s.a", Data: []byte("three"), Header: nats.Header{}}
	stale.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "1")
	_, err = puback.Publish(ctx, nc, stale, deadline)
	var api *jetstream.APIError
	if !errors.As(err, &api) || api.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("a stale expectation: got %v, want the wrong last sequence API error", err)
	}

	_, err = puback.Publish(ctx, nc, &nats.Msg{Subject: "nowhere", Data: []byte("x")}, deadline)
	if !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("no stream: got %v, want ErrNoStreamResponse", err)
	}
	_, err = puback.Publish(context.Background(), nc, &nats.Msg{Subject: "nowhere", Data: []byte("x")}, time.Now())
	if !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("a context that never ends, past its deadline: got %v, want nats.ErrTimeout", err)
	}
}
