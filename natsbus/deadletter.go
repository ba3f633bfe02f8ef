package natsbus

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/transport"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// dead is a dead letter on its way to the dead-letter stream.
type dead struct {
	m        *transport.Message
	reason   transport.DeadLetterReason
	stream   string // the work stream it leaves, if it was in one
	seq      uint64
	attempts int
	lastErr  string
	term     *nats.Msg // the delivery to terminate, if any
	termWhy  string
	refused  bool // never stored, for a reason a stored message may have too (see DeadLetterWork)
}

// deadLetterJSON is the form of a dead letter in the dead-letter stream.
type deadLetterJSON struct {
	Message   *transport.Message         `json:"message"`
	Reason    transport.DeadLetterReason `json:"reason"`
	At        time.Time                  `json:"at"`
	Attempts  int                        `json:"attempts"`
	LastError string                     `json:"last_error,omitempty"`
	Stream    string                     `json:"stream,omitempty"`
	Seq       uint64                     `json:"seq,omitempty"`
}

// deadLetter publishes d to the dead-letter stream, then takes its message
// out of its work stream (terminating the delivery d.term when set, and
// deleting it by sequence), and then, unless another process had already
// dead-lettered the same stored message, hands it to this Transport's
// callbacks: a callback that reads Metrics finds the message counted once.
// A dead letter of a message stored in a work stream carries the stream and
// sequence as its Nats-Msg-Id, so that two processes giving up on the same
// message record it once. Publishing first means a crash in between leaves
// the message to be dead-lettered again (and deduplicated), never lost.
func (t *Transport) deadLetter(ctx context.Context, d dead) error {
	dl := transport.DeadLetter{Message: d.m, Reason: d.reason, At: time.Now().UTC(), Attempts: max(d.attempts, 1), LastError: d.lastErr}
	data, err := json.Marshal(deadLetterJSON{Message: d.m, Reason: d.reason, At: dl.At, Attempts: dl.Attempts,
		LastError: d.lastErr, Stream: d.stream, Seq: d.seq})
	if err != nil {
		t.log.Error("natsbus: dead letter not encoded", zap.String("message_id", d.m.MessageID), zap.Error(err))
		return err
	}
	subject := deadSubject(d.m.To, d.reason)
	if d.refused {
		subject += refusedSuffix
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(HeaderOrigin, t.id)
	msg.Header.Set(HeaderReason, string(d.reason))
	if d.stream != "" {
		msg.Header.Set(HeaderMsgID, "dead."+d.stream+"."+strconv.FormatUint(d.seq, 10))
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), t.cfg.Timeout)
		defer cancel()
	}
	ack, err := t.js.PublishMsg(ctx, msg)
	if err != nil {
		// Not stored: leave the message where it is, to be dead-lettered
		// again by the next taker; the callbacks still learn of it.
		t.log.Error("natsbus: dead letter not stored", zap.String("message_id", d.m.MessageID),
			zap.String("reason", string(d.reason)), zap.Error(err))
		t.notify(dl)
		return fmt.Errorf("natsbus: dead letter of %s not stored: %w", d.m.MessageID, err)
	}
	var rmErr error
	if d.term != nil {
		_ = t.nc.Publish(d.term.Reply, []byte(ackTerm+d.termWhy))
	}
	if d.stream != "" {
		rmErr = t.remove(ctx, d.stream, d.seq)
		if rmErr != nil {
			t.log.Error("natsbus: dead letter left in its work stream", zap.String("message_id", d.m.MessageID), zap.Error(rmErr))
		}
	}
	if !ack.Duplicate {
		t.notify(dl)
	}
	return rmErr
}

// notify hands dl to every callback.
func (t *Transport) notify(dl transport.DeadLetter) {
	t.cbMu.RLock()
	defer t.cbMu.RUnlock()
	if t.cbDone {
		return
	}
	for _, f := range t.cbs {
		c := dl
		c.Message = dl.Message.Clone()
		f(c)
	}
}

// OnDeadLetter calls f for every dead letter of every process sharing the
// NATS system, from the moment it is called until cancel is: the dead
// letters this Transport makes as it makes them, the others' as they reach
// the dead-letter stream. f must not block for long.
func (t *Transport) OnDeadLetter(f func(transport.DeadLetter)) (cancel func()) {
	if f == nil {
		return func() {}
	}
	t.cbMu.Lock()
	id := t.nextCb
	t.nextCb++
	t.cbs[id] = f
	t.cbMu.Unlock()
	return func() {
		t.cbMu.Lock()
		delete(t.cbs, id)
		t.cbMu.Unlock()
	}
}

// followDeadLetters creates the dead-letter stream if needed, follows it
// from now on with an ordered consumer, and listens (in a queue group with
// the other processes) for the messages agents terminate themselves.
func (t *Transport) followDeadLetters(ctx context.Context) error {
	sc := jetstream.StreamConfig{
		Name:        DeadStream,
		Description: "Baton dead letters",
		Subjects:    []string{DeadPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      t.cfg.DeadLetterMaxAge,
		Duplicates:  t.cfg.DedupWindow,
		Storage:     t.cfg.Storage,
		Replicas:    t.cfg.Replicas,
	}
	if t.cfg.AsyncPersist {
		sc.PersistMode = jetstream.AsyncPersistMode
	}
	s, err := openStream(ctx, t.js, sc, t.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("natsbus: dead-letter stream: %w", err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return fmt.Errorf("natsbus: follow the dead letters: %w", err)
	}
	cc, err := c.Consume(t.received)
	if err != nil {
		return fmt.Errorf("natsbus: follow the dead letters: %w", err)
	}
	t.deadCons = cc
	sub, err := t.nc.QueueSubscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.*.*", advisoryQueue, t.terminated)
	if err != nil {
		cc.Stop()
		<-cc.Closed()
		return fmt.Errorf("natsbus: listen for terminated messages: %w", err)
	}
	t.advSub = sub
	if t.sentSub, err = t.nc.Subscribe(sentSubject+">", t.answerSent); err != nil {
		_ = sub.Unsubscribe()
		cc.Stop()
		<-cc.Closed()
		return fmt.Errorf("natsbus: answer for the work sent: %w", err)
	}
	return nil
}

// received hands a dead letter another process published to the callbacks.
func (t *Transport) received(jm jetstream.Msg) {
	if jm.Headers().Get(HeaderOrigin) == t.id {
		return
	}
	var w deadLetterJSON
	if err := json.Unmarshal(jm.Data(), &w); err != nil || w.Message == nil {
		t.log.Warn("natsbus: unreadable dead letter", zap.String("subject", jm.Subject()), zap.Error(err))
		return
	}
	t.notify(transport.DeadLetter{Message: w.Message, Reason: w.Reason, At: w.At, Attempts: w.Attempts, LastError: w.LastError})
}

// deletedWhilePending is the reason JetStream gives in a terminated
// advisory for a message removed from its stream while a consumer had it
// delivered and unacknowledged.
const deletedWhilePending = "Unacknowledged message was deleted"

// terminatedAdvisory is the part of JetStream's terminated advisory natsbus
// reads.
type terminatedAdvisory struct {
	Stream     string `json:"stream"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries int    `json:"deliveries"`
	Reason     string `json:"reason"`
}

// terminated dead-letters a message an agent terminated with a plain NATS
// client: "ttl_expired" or "max_retries" when that is the reason it gave
// (it found the work expired, or delivered too often), "rejected" with its
// reason otherwise. natsbus's own terminations (reasons starting with
// "natsbus:") follow a dead letter already published. JetStream has removed
// the message from the work-queue stream by then, and the advisory tells
// only the stream, the sequence and the reason: the dead letter holds the
// work as the Transport that sent it remembers it (this one, or another
// that answers its ask; see sentWork), with its instance, step and
// idempotency key, or, where none remembers it, a message naming only the
// agent and the stream sequence.
//
// JetStream's own terminations of messages deleted while delivered
// (deletedWhilePending) are not dead letters: natsbus deletes work only
// when it has dead-lettered it already, and the work-queue stream deletes
// it when it is acknowledged, which a consumer whose leader has just
// changed may still hold as delivered. Those are counted
// (DeletedWhilePending) and logged, and change nothing.
func (t *Transport) terminated(am *nats.Msg) {
	var a terminatedAdvisory
	if err := json.Unmarshal(am.Data, &a); err != nil || !strings.HasPrefix(a.Stream, WorkStreamPrefix) {
		return
	}
	if strings.HasPrefix(a.Reason, "natsbus:") {
		return
	}
	if a.Reason == deletedWhilePending {
		t.deletedPending.Add(1)
		t.log.Info("natsbus: delivered work left its stream unacknowledged by this consumer (acknowledged through an earlier leader, or deleted by hand)",
			zap.String("stream", a.Stream), zap.Uint64("seq", a.StreamSeq))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	m := t.terminatedWork(ctx, a.Stream, a.StreamSeq)
	reason := transport.ReasonRejected
	switch transport.DeadLetterReason(a.Reason) {
	case transport.ReasonTTLExpired, transport.ReasonMaxRetries:
		reason = transport.DeadLetterReason(a.Reason)
	default:
		t.rejects.Add(1)
	}
	_ = t.deadLetter(ctx, dead{m: m, reason: reason, stream: a.Stream, seq: a.StreamSeq, attempts: a.Deliveries,
		lastErr: a.Reason})
}

// DeletedWhilePending counts the terminated advisories this process took
// for work JetStream deleted from its stream while a consumer still held it
// as delivered (see terminated): none is a dead letter.
func (t *Transport) DeletedWhilePending() uint64 { return t.deletedPending.Load() }
