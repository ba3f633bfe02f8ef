package natsbus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/puback"
)

// publish is jetstream's PublishMsg without options, bounded by timeout,
// to the same effect and errors (puback.Publish): it sends msg, asks again
// while no stream answers, and returns the stream's acknowledgement.
func (t *Transport) publish(ctx context.Context, msg *nats.Msg, timeout time.Duration) (*jetstream.PubAck, error) {
	if ctx.Done() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return puback.Publish(ctx, t.nc, msg, time.Now().Add(timeout))
}
