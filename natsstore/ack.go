package natsstore

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

// publishAcked publishes msg to a stream and waits for the stream's
// acknowledgement, expecting the stream stream and, on the subject, the
// last revision expect: what jetstream's PublishMsg does with
// WithMsgID(msgID) (when not ""), WithExpectStream and
// WithExpectLastSequencePerSubject, sending the request again while no
// stream answers (twice at most, DefaultPubRetryWait apart), with the
// same errors. Only the acknowledgement is read differently: by hand
// (decodeAck), where PublishMsg decodes it with encoding/json, which was
// 1.3% of the server's CPU in BenchmarkServeChain4 (eight of these per
// instance).
func (s *Store) publishAcked(ctx context.Context, msg *nats.Msg, msgID, stream string, expect uint64) (*jetstream.PubAck, error) {
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	if msgID != "" {
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	msg.Header.Set(jetstream.ExpectedStreamHeader, stream)
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
	resp, err := s.nc.RequestMsgWithContext(ctx, msg)
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < jetstream.DefaultPubRetryAttempts; r++ {
		// A stream's leader may be changing: as PublishMsg, wait and ask again.
		select {
		case <-ctx.Done():
		case <-time.After(jetstream.DefaultPubRetryWait):
		}
		resp, err = s.nc.RequestMsgWithContext(ctx, msg)
	}
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, jetstream.ErrNoStreamResponse
		}
		return nil, err
	}
	return decodeAck(resp.Data)
}

// pubAckResponse is a publish's answer as jetstream decodes it: an
// acknowledgement or an error.
type pubAckResponse struct {
	Error *jetstream.APIError `json:"error,omitempty"`
	*jetstream.PubAck
}

// ackFields are the keys of an acknowledgement without an error.
var ackFields = []string{"stream", "seq", "duplicate", "domain"}

// decodeAck reads a publish's answer as jetstream's PublishMsg does: the
// acknowledgement, a *jetstream.APIError (wrapped as PublishMsg wraps it)
// or jetstream.ErrInvalidJSAck. An answer of the usual keys only, each
// once, is read by hand; any other goes through encoding/json
// (FuzzDecodeAck holds the two equal).
func decodeAck(data []byte) (*jetstream.PubAck, error) {
	ack := &jetstream.PubAck{}
	d := jsonv.NewDecoder(data)
	d.Fields(ackFields, func(i int) {
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
	return decodeAckJSON(data)
}

// decodeAckJSON is decodeAck through encoding/json, as PublishMsg reads an
// answer.
func decodeAckJSON(data []byte) (*jetstream.PubAck, error) {
	var resp pubAckResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, jetstream.ErrInvalidJSAck
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("nats: %w", resp.Error)
	}
	if resp.PubAck == nil || resp.PubAck.Stream == "" {
		return nil, jetstream.ErrInvalidJSAck
	}
	return resp.PubAck, nil
}
