package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/jsonv"
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
	return decodePubAck(resp.Data)
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

// pubAckAnswer is JetStream's answer to a publish, as jetstream reads it.
type pubAckAnswer struct {
	Error *jetstream.APIError `json:"error,omitempty"`
	*jetstream.PubAck
}

// decodePubAck reads JetStream's answer to a publish: the acknowledgement,
// or the server's refusal as jetstream words it ("nats: " and the
// *jetstream.APIError). The usual answer, {"stream":…,"seq":…} and
// perhaps "duplicate" and "domain", is read directly; anything else by
// encoding/json, as jetstream reads it.
func decodePubAck(data []byte) (*jetstream.PubAck, error) {
	ack := new(jetstream.PubAck)
	d := jsonv.NewDecoder(data)
	seen := 0
	once := func(bit int) {
		if seen&bit != 0 {
			d.Fail()
		}
		seen |= bit
	}
	d.Object(func(key string) {
		switch key {
		case "stream":
			once(1)
			ack.Stream = d.String()
		case "seq":
			once(2)
			n := d.Int()
			if n < 0 {
				d.Fail()
			}
			ack.Sequence = uint64(n)
		case "duplicate":
			once(4)
			ack.Duplicate = d.Bool()
		case "domain":
			once(8)
			ack.Domain = d.String()
		default:
			d.Fail()
		}
	})
	d.End()
	if d.OK() && ack.Stream != "" {
		return ack, nil
	}
	return decodePubAckReflect(data)
}

// decodePubAckReflect is decodePubAck by encoding/json alone.
func decodePubAckReflect(data []byte) (*jetstream.PubAck, error) {
	var ans pubAckAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, jetstream.ErrInvalidJSAck
	}
	if ans.Error != nil {
		return nil, fmt.Errorf("nats: %w", ans.Error)
	}
	if ans.PubAck == nil || ans.Stream == "" {
		return nil, jetstream.ErrInvalidJSAck
	}
	return ans.PubAck, nil
}
