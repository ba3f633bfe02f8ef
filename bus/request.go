package bus

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
)

// waiter is a Request blocked on its response.
type waiter struct {
	ch   chan *transport.Message // cap 1; receives the response exactly once
	from string                  // the requester, who the response must be addressed to
}

// Request sends m (a REQUEST when message_type is empty) and waits for the
// RESPONSE or ERROR whose in_reply_to is m's id and whose to_agent is m's
// sender, as Reply builds it. The response goes straight
// to the waiting caller, not through the requester's mailbox, so the
// requester need not be registered. Only a REQUEST, QUERY or HANDOFF may be
// sent this way: the other types expect no reply (a NOTIFICATION is sent
// with Send), and are refused with a *ValidationError on message_type.
//
// Request gives up after the bus's request timeout (2 minutes by default,
// WithRequestTimeout) or, for a QUERY, its shorter query timeout (30s,
// WithQueryTimeout), unless WithTimeout overrides it or ctx ends first, with
// a *TimeoutError matching ErrTimeout (and ctx.Err() when the context's
// deadline passed); a cancelled ctx returns ctx.Err(). A response that
// arrives later is delivered to the requester's mailbox like any other
// message. A request whose idempotency key was already accepted is not sent
// again: Request returns a *DuplicateError at once.
func (b *Bus) Request(ctx context.Context, m *transport.Message, opts ...SendOption) (*transport.Message, error) {
	start := b.clock.Now()
	if m != nil && m.Type == "" {
		m.Type = transport.MessageRequest
	}
	if err := b.admit(ctx, m); err != nil {
		return nil, err
	}
	switch m.Type {
	case transport.MessageRequest, transport.MessageQuery, transport.MessageHandoff:
	default:
		err := &transport.ValidationError{Field: "message_type", Reason: string(m.Type) + " expects no reply: send it with Send"}
		b.refuse(m, err)
		return nil, err
	}
	if _, isTopic := m.Topic(); isTopic || m.To == transport.BroadcastAll {
		return nil, &transport.ValidationError{Field: "to_agent", Reason: "must name one agent for a request"}
	}
	sc := sendConfig{}
	if len(opts) > 0 {
		sc = b.sendOptions(opts)
	}
	var receipt Receipt
	if sc.receipt == nil {
		sc.receipt = &receipt
	}
	if b.conv != nil {
		b.conv.inherit(m)
	}
	b.fill(m, start)
	w := waiter{ch: make(chan *transport.Message, 1), from: m.From}
	b.reqMu.Lock()
	if _, dup := b.pending[m.MessageID]; dup {
		b.reqMu.Unlock()
		return nil, &transport.ValidationError{Field: "message_id", Reason: "is already awaiting a response"}
	}
	b.pending[m.MessageID] = w
	b.npending.Add(1)
	b.reqMu.Unlock()

	err := b.sendOne(m, start, &sc)
	b.flush()
	if err == nil && sc.receipt.Duplicate {
		err = &transport.DuplicateError{Key: m.Key(), MessageID: m.MessageID, DuplicateOf: sc.receipt.DuplicateOf}
	}
	if err != nil {
		if !b.forget(m.MessageID) {
			// A copy did reach the receiver (a dead letter requeued while
			// this send gave up, say) and its answer was handed over and
			// counted delivered: take it rather than drop it.
			return b.answered(m, <-w.ch, start), nil
		}
		return nil, err
	}

	timeout := sc.timeout
	switch {
	case timeout > 0:
	case m.Type == transport.MessageQuery:
		timeout = b.cfg.queryTimeout
	default:
		timeout = b.cfg.requestTimeout
	}
	expired := make(chan struct{})
	t := b.timers.after(timeout, func() { close(expired) })
	defer t.stop()
	select {
	case resp := <-w.ch:
		return b.answered(m, resp, start), nil
	case <-expired:
		err = &transport.TimeoutError{Op: "request", MessageID: m.MessageID, After: timeout}
	case <-ctx.Done():
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = &transport.TimeoutError{Op: "request", MessageID: m.MessageID, After: b.clock.Now().Sub(start), Cause: err}
		}
	case <-b.done:
		err = transport.ErrClosed
	}
	if !b.forget(m.MessageID) {
		// The response was handed over while we gave up: take it.
		return b.answered(m, <-w.ch, start), nil
	}
	return nil, err
}

// forget removes a waiter and reports whether it was still waiting.
func (b *Bus) forget(id string) bool {
	b.reqMu.Lock()
	defer b.reqMu.Unlock()
	if _, ok := b.pending[id]; !ok {
		return false
	}
	delete(b.pending, id)
	b.npending.Add(-1)
	return true
}

func (b *Bus) answered(req, resp *transport.Message, start time.Time) *transport.Message {
	d := b.clock.Now().Sub(start)
	b.roundTrip.record(d)
	if ce := b.log.Check(zap.DebugLevel, "request answered"); ce != nil {
		ce.Write(zap.String("category", "request"), messageFields(resp),
			zap.String("in_reply_to", req.MessageID), zap.Duration("latency", d))
	}
	return resp
}

// handToWaiter gives a response to the Request waiting for it, if any. The
// response counts as accepted and delivered.
func (b *Bus) handToWaiter(m *transport.Message, start time.Time) bool {
	b.reqMu.Lock()
	w, ok := b.pending[m.InReplyTo]
	if !ok || w.from != m.To {
		b.reqMu.Unlock()
		return false
	}
	delete(b.pending, m.InReplyTo)
	b.npending.Add(-1)
	b.reqMu.Unlock()
	b.mu.Lock()
	b.extra.accepted++
	b.extra.delivered++
	b.mu.Unlock()
	w.ch <- m
	if ce := b.log.Check(zap.DebugLevel, "message sent"); ce != nil {
		ce.Write(zap.String("category", sendCategory(m)), messageFields(m), zap.Duration("latency", b.clock.Now().Sub(start)))
	}
	return true
}

// Reply sends resp as the answer to req: it sets to_agent to req's sender,
// in_reply_to to req's id, correlation_id to req's correlation_id (or its id
// when it has none), conversation_id to req's, message_type to RESPONSE
// when empty, and from_agent to req's receiver when empty.
func (b *Bus) Reply(ctx context.Context, req, resp *transport.Message, opts ...SendOption) error {
	if req == nil {
		return &transport.ValidationError{Field: "request", Reason: "is required"}
	}
	if resp == nil {
		return &transport.ValidationError{Field: "message", Reason: "is required"}
	}
	if resp.Type == "" {
		resp.Type = transport.MessageResponse
	}
	if resp.From == "" {
		resp.From = req.To
	}
	resp.To = req.From
	resp.InReplyTo = req.MessageID
	resp.CorrelationID = req.CorrelationID
	if resp.CorrelationID == "" {
		resp.CorrelationID = req.MessageID
	}
	resp.ConversationID = req.ConversationID
	return b.Send(ctx, resp, opts...)
}
