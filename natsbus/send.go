package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/jsonv"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// errCodeStoreFailed is JetStream's error code for a write the stream
// refused, "maximum messages exceeded" among them: a full mailbox.
const errCodeStoreFailed = 10077

// JetStream's error codes of a write it cannot take for now, which a send
// made again later may get through.
const (
	// errCodeTemporarilyUnavailable: "JetStream system temporarily
	// unavailable" (a stream without a leader).
	errCodeTemporarilyUnavailable = 10008
	// errCodeInsufficientResources: "insufficient resources" (503), the
	// server's storage limit reached or its disk full.
	errCodeInsufficientResources = 10023
	// errCodeStorageExceeded: "insufficient storage resources available".
	errCodeStorageExceeded = 10047
)

// JetStream's error codes of a message that is not (or no longer) there.
const (
	errCodeMsgNotFound = 10037
	errCodeSeqNotFound = 10043
)

// SendWork queues m in the work stream of its To agent, on the subject of
// its priority, with its idempotency key (its message id when it has none)
// as Nats-Msg-Id: a second send of the key within the dedup window is
// dropped as a duplicate. It fills the message's id, conversation, timestamp
// and TTL as the bus does. A full stream is a *transport.QueueFullError naming
// the agent and an agent without a stream a *transport.UnknownAgentError; either
// way the message is dead-lettered. An invalid message is a
// *transport.ValidationError and is not sent. A send the server did not take for
// Config.Timeout (a stream electing a leader), or refused for want of
// storage (a full disk), matches transport.ErrUnavailable: it may be sent again
// under the same key.
func (t *Transport) SendWork(ctx context.Context, m *transport.Message) error {
	return t.send(ctx, m, false)
}

// OfferWork is SendWork, except for a full work stream: the message is
// refused with a *transport.QueueFullError naming the agent and is not
// dead-lettered (the server keeps no trace of it, and a later send under
// its key is not dropped as a duplicate): the sender keeps it, to send it
// again. The engine offers the work it resends as it resumes an instance,
// whose first send may be what fills the stream.
func (t *Transport) OfferWork(ctx context.Context, m *transport.Message) error {
	return t.send(ctx, m, true)
}

// WritesWorkOut marks the Transport as a wire.WorkWriter: a message sent
// is written out as JSON, and once SendWork or OfferWork returned nil the
// Transport keeps nothing of it (a dead letter, which keeps the message,
// comes only with an error), so wire.Send may reuse its maps.
func (t *Transport) WritesWorkOut() {}

// send is SendWork, or OfferWork when offer is set.
func (t *Transport) send(ctx context.Context, m *transport.Message, offer bool) error {
	if ctx == nil {
		return &transport.ValidationError{Field: "ctx", Reason: "is nil"}
	}
	if err := m.Validate(); err != nil {
		t.invalid.Add(1)
		return err
	}
	m.Fill(time.Now(), uuid.NewString)
	t.stampAckWait(m)
	mb, err := t.box(ctx, m.To)
	// The targets of errors.As are looked for only on an error: taken by
	// address, each was made on the heap for every send.
	if err != nil && isUnknownAgent(err) {
		_ = t.deadLetter(ctx, dead{m: m, reason: transport.ReasonReceiverNotFound, lastErr: err.Error()})
		return err
	}
	if err != nil && ctx.Err() == nil && (unanswered(err) || unavailable(err)) {
		return fmt.Errorf("%w: %w", transport.ErrUnavailable, err)
	}
	if err != nil {
		return err
	}
	// Called directly, the message's encoder writes its JSON once;
	// json.Marshal would check it and copy it again.
	data, err := m.MarshalJSON()
	if err != nil {
		return fmt.Errorf("natsbus: encode message %s: %w", m.MessageID, err)
	}
	key := m.Key()
	if key == "" {
		key = m.MessageID
	}
	msg := workMsg(mb.subjects[levelIndex(m.Priority)], msgID(key), data)
	ack, err := t.publishWork(ctx, msg)
	// The connection wrote the message out as it was published: it serves
	// the next send (its bytes, data, stay with t.sent).
	msg.Data = nil
	workMsgs.Put(msg)
	if err != nil && apiCode(err) == errCodeStoreFailed {
		full := &transport.QueueFullError{Agent: m.To, Capacity: mb.capacity}
		if !offer {
			_ = t.deadLetter(ctx, dead{m: m, reason: transport.ReasonQueueOverflow, lastErr: full.Error()})
		}
		return full
	}
	if err != nil && ctx.Err() == nil && (unanswered(err) || unavailable(err)) {
		// Sent again later under the same key, the server keeps it once.
		return fmt.Errorf("natsbus: send %s to %s: %w: %w", m.MessageID, m.To, transport.ErrUnavailable, err)
	}
	if err != nil {
		return fmt.Errorf("natsbus: send %s to %s: %w", m.MessageID, m.To, err)
	}
	if ack.Duplicate {
		t.duplicates.Add(1)
	} else {
		t.sent.put(ack.Stream, ack.Sequence, data)
	}
	return nil
}

// workMsgs are the NATS messages work is published in, with their
// headers: made for every send, the message, its header map and the
// header's value were three allocations of each.
var workMsgs = sync.Pool{New: func() any { return nats.NewMsg("") }}

// workMsg is a pooled NATS message of work on subject, under message id
// id.
func workMsg(subject, id string, data []byte) *nats.Msg {
	msg := workMsgs.Get().(*nats.Msg)
	msg.Subject, msg.Data = subject, data
	if v := msg.Header[HeaderMsgID]; len(v) == 1 && len(msg.Header) == 1 {
		v[0] = id
	} else {
		clear(msg.Header)
		msg.Header.Set(HeaderMsgID, id)
	}
	return msg
}

// sendPause is the pause between two sends of a work message the server
// did not answer.
const sendPause = 50 * time.Millisecond

// publishWork sends a work message, and sends it again under the same
// message id (the server keeps it once) while the server does not answer,
// for at most Config.Timeout in all: a replicated stream electing a new
// leader answers nothing for a few seconds.
func (t *Transport) publishWork(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	deadline := time.Now().Add(t.cfg.Timeout)
	for {
		try := min(time.Until(deadline), 2*time.Second)
		ack, err := t.publish(ctx, msg, try)
		if err == nil || ctx.Err() != nil || !unanswered(err) || time.Until(deadline) < sendPause {
			return ack, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(sendPause):
		}
	}
}

// isUnknownAgent tells a *transport.UnknownAgentError.
func isUnknownAgent(err error) bool {
	var unknown *transport.UnknownAgentError
	return errors.As(err, &unknown)
}

// apiCode is the error code of err's *jetstream.APIError, 0 without one.
func apiCode(err error) jetstream.ErrorCode {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode
	}
	return 0
}

// unanswered tells a request the server did not answer (yet) from one it
// refused. Unlike jsretry.Unanswered it does not count a 503 API error:
// a publish answered 503 may have hit the stream's message limit, a
// refusal that sending again would only prolong.
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// unavailable tells JetStream's answer that it cannot take writes for
// now (503, "JetStream system temporarily unavailable": a stream without a
// leader; "insufficient resources": a server out of storage, until space
// is freed) from a refusal of this message. A full mailbox is a refusal
// (errCodeStoreFailed), not this.
func unavailable(err error) bool {
	switch apiCode(err) {
	case errCodeTemporarilyUnavailable, errCodeInsufficientResources, errCodeStorageExceeded:
		return true
	}
	return false
}

// stampAckWait tells the agent, in the work's metadata, how long it may
// hold the work before it is delivered again (the first delivery's wait
// when the ack wait is a backoff schedule): a plain client need not read
// the consumer's configuration to know when to send in-progress acks.
func (t *Transport) stampAckWait(m *transport.Message) {
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	m.Metadata[wire.KeyAckWait] = t.ackWaitSecs
}

// firstAckWait is the ack wait of a first delivery, in seconds: the
// value stampAckWait writes, made once (an any holding a float64 costs an
// allocation each time it is made).
func firstAckWait(cfg *Config) any {
	wait := cfg.AckWait
	if len(cfg.Backoff) > 0 {
		wait = cfg.Backoff[0]
	}
	return wait.Seconds()
}

// Room returns how many more messages agent's work stream takes now (its
// capacity less the messages it holds, taken or not), and its capacity. It
// asks the server, so it sees the work every process sent.
func (t *Transport) Room(ctx context.Context, agent string) (free, capacity int, err error) {
	if ctx == nil {
		return 0, 0, &transport.ValidationError{Field: "ctx", Reason: "is nil"}
	}
	mb, err := t.box(ctx, agent)
	if err != nil {
		return 0, 0, err
	}
	held, err := t.streamMsgs(ctx, WorkStream(agent))
	if err != nil {
		return 0, 0, fmt.Errorf("natsbus: room of %s: %w", agent, err)
	}
	return max(mb.capacity-int(held), 0), mb.capacity, nil
}

// streamInfoSubject is JetStream's API subject of a stream's information.
const streamInfoSubject = "$JS.API.STREAM.INFO."

// streamHeld is the part of JetStream's answer about a stream that Room
// reads: decoding only it, not the whole configuration and state (as
// jetstream.Stream.Info does), keeps the check an engine makes on every
// start cheap.
type streamHeld struct {
	Error *jetstream.APIError `json:"error,omitempty"`
	State struct {
		Msgs uint64 `json:"messages"`
	} `json:"state"`
}

// streamMsgs asks the server how many messages stream holds.
func (t *Transport) streamMsgs(ctx context.Context, stream string) (uint64, error) {
	var resp *nats.Msg
	var err error
	switch _, ok := ctx.Deadline(); {
	case ctx.Done() == nil:
		// A context that never ends: a request with a timeout of its own
		// takes a pooled timer, not a context and a timer per call (one
		// per instance started).
		resp, err = t.nc.Request(streamInfoSubject+stream, nil, t.cfg.Timeout)
	case !ok:
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.cfg.Timeout)
		defer cancel()
		fallthrough
	default:
		resp, err = t.nc.RequestWithContext(ctx, streamInfoSubject+stream, nil)
	}
	if err != nil {
		return 0, err
	}
	if n, ok := heldFast(resp.Data); ok {
		return n, nil
	}
	var info streamHeld
	if err := json.Unmarshal(resp.Data, &info); err != nil {
		return 0, fmt.Errorf("decode the stream information of %s: %w", stream, err)
	}
	if info.Error != nil {
		return 0, info.Error
	}
	return info.State.Msgs, nil
}

// heldFast reads state.messages of JetStream's answer about a stream
// without reflection, skipping the rest without making it (the answer
// holds the stream's whole configuration, and Room is asked on every
// start); ok is false for an error, a key spelled in another case, or
// anything else the Decoder does not take, which json.Unmarshal then
// reads.
func heldFast(data []byte) (n uint64, ok bool) {
	d := jsonv.NewDecoder(data)
	seen := false
	exact := func(key, want string) bool {
		if key != want && strings.EqualFold(key, want) {
			d.Fail() // encoding/json matches keys in any case
		}
		return key == want
	}
	d.Object(func(key string) {
		switch {
		case exact(key, "state"):
			d.Object(func(key string) {
				if exact(key, "messages") {
					m := d.Int()
					if m < 0 {
						d.Fail()
					}
					n, seen = uint64(m), true
					return
				}
				d.Raw()
			})
		case exact(key, "error"):
			d.Fail()
		default:
			d.Raw()
		}
	})
	d.End()
	return n, d.OK() && seen
}
