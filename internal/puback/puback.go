// Package puback publishes to a JetStream stream and reads its answer as
// jetstream's PublishMsg does, without reflection for the usual answer and
// without a context per request where the caller's never ends: natsbus
// (each work sent) and natsstore (each commit) publish once per write, and
// PublishMsg's encoding/json decoding of the answer was a measurable part
// of both.
package puback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/jsonv"
)

// Publish sends msg, a publish to a stream with whatever headers the
// caller set, and returns the stream's acknowledgement, to PublishMsg's
// effect and with its errors: while no stream answers (a leader being
// elected, say) it asks again, at most DefaultPubRetryAttempts more times,
// DefaultPubRetryWait apart, then fails with ErrNoStreamResponse. It waits
// for each answer until ctx ends or, for a context that never ends (the
// engine sends under context.WithoutCancel), until deadline: nats.go's
// request with a timeout takes its timer from a pool, where a context with
// a deadline costs a timer, the context and its channel on every send.
// The pauses end by deadline too.
func Publish(ctx context.Context, nc *nats.Conn, msg *nats.Msg, deadline time.Time) (*jetstream.PubAck, error) {
	resp, err := request(ctx, nc, msg, deadline)
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < jetstream.DefaultPubRetryAttempts; r++ {
		select {
		case <-ctx.Done():
		case <-time.After(min(jetstream.DefaultPubRetryWait, max(time.Until(deadline), 0))):
		}
		resp, err = request(ctx, nc, msg, deadline)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, jetstream.ErrNoStreamResponse
	}
	if err != nil {
		return nil, err
	}
	return Decode(resp.Data)
}

// request sends msg and waits for its answer until ctx ends, or, when it
// never ends, until deadline.
func request(ctx context.Context, nc *nats.Conn, msg *nats.Msg, deadline time.Time) (*nats.Msg, error) {
	if ctx.Done() != nil {
		return nc.RequestMsgWithContext(ctx, msg)
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		return nil, nats.ErrTimeout
	}
	return nc.RequestMsg(msg, wait)
}

// answer is a publish's answer as jetstream decodes it: an
// acknowledgement or an error.
type answer struct {
	Error *jetstream.APIError `json:"error,omitempty"`
	*jetstream.PubAck
}

// fields are the keys of an acknowledgement without an error.
var fields = []string{"stream", "seq", "duplicate", "domain"}

// Decode reads a publish's answer: the acknowledgement, the server's
// refusal as PublishMsg words it ("nats: " wrapping the
// *jetstream.APIError), or jetstream.ErrInvalidJSAck. An answer of the
// usual keys only, each once, is read by hand; any other goes through
// encoding/json (FuzzDecode holds the two equal).
func Decode(data []byte) (*jetstream.PubAck, error) {
	ack := &jetstream.PubAck{}
	d := jsonv.NewDecoder(data)
	d.Fields(fields, func(i int) {
		switch i {
		case 0:
			ack.Stream = d.String()
		case 1:
			n, err := strconv.ParseUint(string(d.Raw()), 10, 64)
			if err != nil {
				d.Fail()
			}
			ack.Sequence = n
		case 2:
			ack.Duplicate = d.Bool()
		case 3:
			ack.Domain = d.String()
		}
	})
	d.End()
	if d.OK() && ack.Stream != "" {
		return ack, nil
	}
	return decodeJSON(data)
}

// decodeJSON is Decode through encoding/json alone, as PublishMsg reads
// an answer.
func decodeJSON(data []byte) (*jetstream.PubAck, error) {
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, jetstream.ErrInvalidJSAck
	}
	if a.Error != nil {
		return nil, fmt.Errorf("nats: %w", a.Error)
	}
	if a.PubAck == nil || a.PubAck.Stream == "" {
		return nil, jetstream.ErrInvalidJSAck
	}
	return a.PubAck, nil
}
