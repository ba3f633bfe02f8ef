package feature

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// Defaults of RequestSettings.
const (
	// DefaultRequestTimeout bounds Request of a REQUEST or HANDOFF when its
	// context has no earlier deadline.
	DefaultRequestTimeout = 2 * time.Minute
	// DefaultQueryTimeout bounds Request of a QUERY, a lightweight request
	// for information that must be answered sooner than a REQUEST.
	DefaultQueryTimeout = 30 * time.Second
	// DefaultRequestKeys bounds the idempotency keys of requests Requests
	// remembers to refuse a request sent again; the oldest go first.
	DefaultRequestKeys = 100_000
)

// RequestSettings configure Requests. Zero fields take the defaults.
type RequestSettings struct {
	// Timeout is how long Request waits for the response to a REQUEST or a
	// HANDOFF (DefaultRequestTimeout).
	Timeout time.Duration
	// QueryTimeout is how long Request waits for the answer to a QUERY
	// (DefaultQueryTimeout).
	QueryTimeout time.Duration
	// Keys bounds the idempotency keys remembered (DefaultRequestKeys).
	Keys int
	// Logger receives an entry per answered request; nil keeps
	// zap.NewNop().
	Logger *zap.Logger
}

// RequestStats are the counters of Requests.
type RequestStats struct {
	// Requests counts requests sent; Answered those whose response was
	// handed to their caller, TimedOut those that gave up waiting.
	Requests, Answered, TimedOut uint64
	// Waiting is the number of requests waiting for their response now.
	Waiting int
	// RoundTrip is the time from Request to its response.
	RoundTrip transport.LatencySummary
}

// RequestOption configures one Request.
type RequestOption func(*requestConfig)

type requestConfig struct{ timeout time.Duration }

// WithTimeout bounds how long one Request waits for its response,
// overriding the settings' timeout for its message type.
func WithTimeout(d time.Duration) RequestOption {
	return func(c *requestConfig) { c.timeout = d }
}

// Requests decorates a transport with request/reply: Request sends a
// message and waits for its answer, which Reply builds and sends, and
// SendWork hands such an answer straight to the waiting caller instead of
// the transport, so that the requester need not have a mailbox. Reply
// and answers must go through the same Requests as the request (the
// waiting caller is in this process).
type Requests struct {
	transport.Transport
	clock clock.Clock
	log   *zap.Logger
	set   RequestSettings

	done      chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	pending map[string]waiter
	keys    map[string]string // idempotency key -> the request's id
	order   []string          // keys, oldest first
	closed  bool

	requests, answered, timedOut atomic.Uint64
	roundTrip                    latency
}

// waiter is a Request blocked on its response.
type waiter struct {
	ch   chan *transport.Message // cap 1; receives the response exactly once
	from string                  // the requester, who the response must be addressed to
}

// NewRequests returns inner decorated with request/reply, on clk (nil:
// clock.Real()), which measures the timeouts.
func NewRequests(inner transport.Transport, s RequestSettings, clk clock.Clock) *Requests {
	if clk == nil {
		clk = clock.Real()
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultRequestTimeout
	}
	if s.QueryTimeout <= 0 {
		s.QueryTimeout = DefaultQueryTimeout
	}
	if s.Keys <= 0 {
		s.Keys = DefaultRequestKeys
	}
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	return &Requests{Transport: inner, clock: clk, log: s.Logger, set: s, done: make(chan struct{}),
		pending: make(map[string]waiter), keys: make(map[string]string)}
}

// Request sends m (a REQUEST when message_type is empty) and waits for the
// RESPONSE or ERROR whose in_reply_to is m's id and whose to_agent is m's
// sender, as Reply builds it. Only a REQUEST, QUERY or HANDOFF may be sent
// this way: the other types expect no reply (a NOTIFICATION is sent with
// SendWork), and are refused with a *transport.ValidationError on
// message_type; so is a message to "*" or a topic, on to_agent.
//
// Request gives up after the settings' Timeout or, for a QUERY, their
// shorter QueryTimeout, unless WithTimeout overrides it or ctx ends first,
// with a *transport.TimeoutError matching transport.ErrTimeout (and
// ctx.Err() when the context's deadline passed); a cancelled ctx returns
// ctx.Err(), and Close transport.ErrClosed. A response that arrives later
// goes to the requester's mailbox like any other message. A request whose
// idempotency key an earlier Request sent is not sent again: Request
// returns a *transport.DuplicateError at once.
func (r *Requests) Request(ctx context.Context, m *transport.Message, opts ...RequestOption) (*transport.Message, error) {
	start := r.clock.Now()
	if m != nil && m.Type == "" {
		m.Type = transport.MessageRequest
	}
	if err := admit(ctx, m); err != nil {
		return nil, err
	}
	switch m.Type {
	case transport.MessageRequest, transport.MessageQuery, transport.MessageHandoff:
	default:
		return nil, &transport.ValidationError{Field: "message_type", Reason: string(m.Type) + " expects no reply: send it with SendWork"}
	}
	if _, isTopic := m.Topic(); isTopic || m.To == transport.BroadcastAll {
		return nil, &transport.ValidationError{Field: "to_agent", Reason: "must name one agent for a request"}
	}
	var rc requestConfig
	for _, o := range opts {
		o(&rc)
	}
	// Only the id, which the answer names: the transport (and a
	// Conversations below, which lets a reply inherit its parent's
	// conversation first) fills the rest.
	if m.MessageID == "" {
		m.MessageID = uuid.NewString()
	}
	w := waiter{ch: make(chan *transport.Message, 1), from: m.From}
	if err := r.wait(m, w); err != nil {
		return nil, err
	}
	r.requests.Add(1)
	if err := r.Transport.SendWork(ctx, m); err != nil {
		r.forgetKey(m)
		if !r.forget(m.MessageID) {
			// A copy did reach the receiver (a dead letter requeued while
			// this send gave up, say) and its answer was handed over:
			// take it rather than drop it.
			return r.tookAnswer(m, <-w.ch, start), nil
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			// The deadline passed during the send (natsbus waits for
			// its server): the same timeout as one passing later.
			err = &transport.TimeoutError{Op: "request", MessageID: m.MessageID, After: r.clock.Now().Sub(start), Cause: err}
			r.timedOut.Add(1)
		}
		return nil, err
	}

	timeout := rc.timeout
	switch {
	case timeout > 0:
	case m.Type == transport.MessageQuery:
		timeout = r.set.QueryTimeout
	default:
		timeout = r.set.Timeout
	}
	expired := make(chan struct{})
	t := r.clock.AfterFunc(timeout, func() { close(expired) })
	defer t.Stop()
	var err error
	select {
	case resp := <-w.ch:
		return r.tookAnswer(m, resp, start), nil
	case <-expired:
		err = &transport.TimeoutError{Op: "request", MessageID: m.MessageID, After: timeout}
	case <-ctx.Done():
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = &transport.TimeoutError{Op: "request", MessageID: m.MessageID, After: r.clock.Now().Sub(start), Cause: err}
		}
	case <-r.done:
		err = transport.ErrClosed
	}
	if !r.forget(m.MessageID) {
		// The response was handed over while we gave up: take it.
		return r.tookAnswer(m, <-w.ch, start), nil
	}
	if errors.Is(err, transport.ErrTimeout) {
		r.timedOut.Add(1)
	}
	return nil, err
}

// wait registers w for m's response, refusing an id already awaited and an
// idempotency key already sent.
func (r *Requests) wait(m *transport.Message, w waiter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return transport.ErrClosed
	}
	if _, dup := r.pending[m.MessageID]; dup {
		return &transport.ValidationError{Field: "message_id", Reason: "is already awaiting a response"}
	}
	if k := m.Key(); k != "" {
		if first, dup := r.keys[k]; dup {
			return &transport.DuplicateError{Key: k, MessageID: m.MessageID, DuplicateOf: first}
		}
		for len(r.order) >= r.set.Keys {
			delete(r.keys, r.order[0])
			r.order = r.order[1:]
		}
		r.keys[k] = m.MessageID
		r.order = append(r.order, k)
	}
	r.pending[m.MessageID] = w
	return nil
}

// forgetKey frees the idempotency key of a request the transport refused,
// so that it may be sent again.
func (r *Requests) forgetKey(m *transport.Message) {
	k := m.Key()
	if k == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys[k] == m.MessageID {
		delete(r.keys, k)
		if i := len(r.order) - 1; i >= 0 && r.order[i] == k {
			r.order = r.order[:i]
		}
	}
}

// forget removes a waiter and reports whether it was still waiting.
func (r *Requests) forget(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pending[id]; !ok {
		return false
	}
	delete(r.pending, id)
	return true
}

func (r *Requests) tookAnswer(req, resp *transport.Message, start time.Time) *transport.Message {
	d := r.clock.Now().Sub(start)
	r.answered.Add(1)
	r.roundTrip.record(d)
	if ce := r.log.Check(zap.DebugLevel, "request answered"); ce != nil {
		ce.Write(zap.String("category", "request"), zap.String("from", resp.From), zap.String("to", resp.To),
			zap.String("message_id", resp.MessageID), zap.String("in_reply_to", req.MessageID), zap.Duration("latency", d))
	}
	return resp
}

// SendWork hands a RESPONSE or ERROR to the Request waiting for it (the
// one whose id is its in_reply_to and whose sender is its to_agent), and
// passes every other message to the transport.
func (r *Requests) SendWork(ctx context.Context, m *transport.Message) error {
	if m == nil || (m.Type != transport.MessageResponse && m.Type != transport.MessageError) || m.InReplyTo == "" {
		return r.Transport.SendWork(ctx, m)
	}
	r.mu.Lock()
	w, ok := r.pending[m.InReplyTo]
	r.mu.Unlock()
	if !ok || w.from != m.To {
		return r.Transport.SendWork(ctx, m)
	}
	if err := admit(ctx, m); err != nil {
		return err
	}
	now := r.clock.Now()
	if err := joinBelow(r.Transport, m, now); err != nil {
		return err
	}
	m.Fill(now, uuid.NewString)
	r.mu.Lock()
	w, ok = r.pending[m.InReplyTo]
	if ok && w.from == m.To {
		delete(r.pending, m.InReplyTo)
	}
	r.mu.Unlock()
	if !ok || w.from != m.To {
		// The Request gave up in the meantime: the requester's mailbox
		// gets the answer.
		return r.Transport.SendWork(ctx, m)
	}
	w.ch <- m
	return nil
}

// Reject rejects m on the transport and, when a Request is waiting for
// m's answer, ends it with an ERROR from m's receiver (action "rejected",
// the reason in "error", as the bus tells the sender of a rejected
// message): the caller learns of the rejection now, not at its timeout. A
// requester that also has a mailbox may find the transport's own notice
// there.
func (r *Requests) Reject(ctx context.Context, m *transport.Message, reason string) error {
	if err := r.Transport.Reject(ctx, m, reason); err != nil {
		return err
	}
	r.mu.Lock()
	w, ok := r.pending[m.MessageID]
	r.mu.Unlock()
	if !ok || w.from != m.From {
		return nil
	}
	return r.SendWork(ctx, m.Notice(transport.MessageError, map[string]any{"action": "rejected", "error": reason, "message_id": m.MessageID}))
}

// Reply sends resp as the answer to req: it sets to_agent to req's sender,
// in_reply_to to req's id, correlation_id to req's correlation_id (or its id
// when it has none), conversation_id to req's, message_type to RESPONSE
// when empty, and from_agent to req's receiver when empty.
func (r *Requests) Reply(ctx context.Context, req, resp *transport.Message) error {
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
	return r.SendWork(ctx, resp)
}

// Stats returns the counters of Requests.
func (r *Requests) Stats() RequestStats {
	r.mu.Lock()
	n := len(r.pending)
	r.mu.Unlock()
	return RequestStats{Requests: r.requests.Load(), Answered: r.answered.Load(), TimedOut: r.timedOut.Load(),
		Waiting: n, RoundTrip: r.roundTrip.summary()}
}

// Close makes every waiting Request, and every later one, return
// transport.ErrClosed. It is safe to call more than once and returns nil;
// closing the transport is its owner's business.
func (r *Requests) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.done)
	})
	return nil
}

// join and alias pass the conversation hooks on to the transport below.
func (r *Requests) join(m *transport.Message, now time.Time) error {
	return joinBelow(r.Transport, m, now)
}
func (r *Requests) alias(copyID, templateID string) { aliasBelow(r.Transport, copyID, templateID) }

var _ transport.Transport = (*Requests)(nil)
