package natsstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/puback"
)

// publishAcked publishes msg to a stream and waits for the stream's
// acknowledgement, expecting the stream stream and, on the subject, the
// last revision expect: what jetstream's PublishMsg does with
// WithMsgID(msgID) (when not ""), WithExpectStream and
// WithExpectLastSequencePerSubject, sending the request again while no
// stream answers (twice at most, DefaultPubRetryWait apart), with the
// same errors. Only the acknowledgement is read differently: by hand
// (package puback), where PublishMsg decodes it with encoding/json, which was
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
	return puback.Decode(resp.Data)
}
