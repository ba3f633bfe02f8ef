package natsbus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/puback"
)

// publish is jetstream's PublishMsg without options, bounded by timeout,
// to the same effect and errors: it sends msg, asks again (twice, a
// quarter second apart) while no stream answers, and returns the stream's
// acknowledgement. The acknowledgement is read without reflection:
// jetstream's json.Unmarshal of it was a measurable part of each work
// sent.
func (t *Transport) publish(ctx context.Context, msg *nats.Msg, timeout time.Duration) (*jetstream.PubAck, error) {
	if ctx.Done() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	deadline := time.Now().Add(timeout)
	resp, err := t.request(ctx, msg, deadline)
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < jetstream.DefaultPubRetryAttempts; r++ {
		// A stream electing a leader, say: jetstream asks again too.
		select {
		case <-ctx.Done():
		case <-time.After(min(jetstream.DefaultPubRetryWait, max(time.Until(deadline), 0))):
		}
		resp, err = t.request(ctx, msg, deadline)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, jetstream.ErrNoStreamResponse
	}
	if err != nil {
		return nil, err
	}
	return puback.Decode(resp.Data)
}

// request sends msg and waits for the answer until ctx ends, or, for a
// context that never ends (the engine sends under context.WithoutCancel),
// until deadline: nats.go's request with a timeout takes its timer from a
// pool, where a context with a deadline costs a timer, the context and its
// channel on every send.
func (t *Transport) request(ctx context.Context, msg *nats.Msg, deadline time.Time) (*nats.Msg, error) {
	if ctx.Done() != nil {
		return t.nc.RequestMsgWithContext(ctx, msg)
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		return nil, nats.ErrTimeout
	}
	return t.nc.RequestMsg(msg, wait)
}
