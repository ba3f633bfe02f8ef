package feature

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// DefaultRetrySchedule is the backoff of a send to a full mailbox: retry
// after 100ms, then 500ms, then 2s.
func DefaultRetrySchedule() []time.Duration {
	return []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}
}

// RetrySettings configure NewRetry.
type RetrySettings struct {
	// Schedule is the waits between attempts of a send that meets a full
	// mailbox. Non-positive waits are dropped; nil takes
	// DefaultRetrySchedule, and an empty (non-nil) schedule sends without
	// retrying.
	Schedule []time.Duration
	// Logger receives a debug entry per retry; nil logs nothing.
	Logger *zap.Logger
}

// RetryStats are the counters of a Retry.
type RetryStats struct {
	// Retries counts attempts made after a first one met a full mailbox.
	Retries uint64
	// Retrying is the number of sends waiting for their next attempt now.
	Retrying int
	// GaveUp counts sends dead-lettered after waiting: "max_retries" at the
	// end of the schedule, "queue_overflow" when the wait was cut short.
	GaveUp uint64
}

// Retry is a transport whose sends to a full mailbox wait and try again
// instead of failing at once: SendWork waits for each duration of the
// schedule in turn, on its clock, and tries again, until the message fits,
// the schedule is over, ctx is done or Retry is closed. It blocks its
// caller meanwhile and starts no goroutine.
//
// When the inner transport is a transport.Offerer and a
// transport.DeadLetterer (the in-memory bus and natsbus are), each attempt
// offers the message, so a refusal leaves no trace, and a send that never
// fits is dead-lettered once: "max_retries" after the whole schedule (its
// *transport.QueueFullError then carries the number of attempts), or
// "queue_overflow" when ctx ended or Retry closed first (the error then
// matches both ErrQueueFull and the cause). Until then the message is not
// accepted by the inner transport, whose accounting therefore adds up at
// every moment. Over another transport each attempt is a SendWork, and each
// refusal leaves a "queue_overflow" dead letter.
//
// A broadcast ("*") or a publication ("topic:<name>") is sent once, not
// retried: compose the broadcast and topic decorators over Retry to retry
// each of their copies.
//
// Build one Retry per schedule: it holds no per-send state, so two over the
// same transport cost nothing more.
type Retry struct {
	transport.Transport
	clk      clock.Clock
	schedule []time.Duration
	log      *zap.Logger
	offer    transport.Offerer      // nil unless the inner transport offers and dead-letters
	dead     transport.DeadLetterer // with offer

	mu     sync.Mutex
	closed bool
	done   chan struct{}
	active sync.WaitGroup // sends in progress

	retries  atomic.Uint64
	retrying atomic.Int64
	gaveUp   atomic.Uint64
}

// NewRetry returns inner with sender retries on s's schedule, timed by clk
// (nil: clock.Real()).
func NewRetry(inner transport.Transport, s RetrySettings, clk clock.Clock) *Retry {
	if clk == nil {
		clk = clock.Real()
	}
	schedule := DefaultRetrySchedule()
	if s.Schedule != nil {
		schedule = make([]time.Duration, 0, len(s.Schedule))
		for _, d := range s.Schedule {
			if d > 0 {
				schedule = append(schedule, d)
			}
		}
	}
	log := s.Logger
	if log == nil {
		log = zap.NewNop()
	}
	r := &Retry{Transport: inner, clk: clk, schedule: schedule, log: log, done: make(chan struct{})}
	offer, canOffer := inner.(transport.Offerer)
	dead, canDead := inner.(transport.DeadLetterer)
	if canOffer && canDead {
		r.offer, r.dead = offer, dead
	}
	return r
}

// SendWork sends m, waiting and trying again while its mailbox is full.
func (r *Retry) SendWork(ctx context.Context, m *transport.Message) error {
	return r.SendAll(ctx, []*transport.Message{m})[0]
}

// SendAll sends every message of msgs and reports each result at the same
// index. The messages that meet a full mailbox wait on the schedule
// together, so the call takes as long as the slowest of them, not the sum.
func (r *Retry) SendAll(ctx context.Context, msgs []*transport.Message) []error {
	errs := make([]error, len(msgs))
	if !r.enter() {
		for i := range errs {
			errs[i] = transport.ErrClosed
		}
		return errs
	}
	defer r.active.Done()
	var waiting []*pending
	for i, m := range msgs {
		if m != nil && (m.To == transport.BroadcastAll || isTopic(m)) {
			// One refused copy must not send the others again.
			errs[i] = r.Transport.SendWork(ctx, m)
			continue
		}
		err := r.attempt(ctx, m)
		if len(r.schedule) > 0 && errors.Is(err, transport.ErrQueueFull) {
			waiting = append(waiting, &pending{m: m, err: err, idx: i})
			continue
		}
		errs[i] = err
	}
	if len(waiting) > 0 {
		r.retry(ctx, waiting)
		for _, p := range waiting {
			errs[p.idx] = p.err
		}
	}
	return errs
}

func isTopic(m *transport.Message) bool {
	_, ok := m.Topic()
	return ok
}

// pending is a send waiting for its next attempt.
type pending struct {
	m   *transport.Message
	err error
	idx int
}

// enter counts a send in progress, unless Retry is closed.
func (r *Retry) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.active.Add(1)
	return true
}

// attempt tries m once: an offer when the schedule leaves room for retries
// and the inner transport can offer, a plain send otherwise.
func (r *Retry) attempt(ctx context.Context, m *transport.Message) error {
	if r.offer != nil && len(r.schedule) > 0 {
		return r.offer.OfferWork(ctx, m)
	}
	return r.Transport.SendWork(ctx, m)
}

// retry runs the schedule for the sends in waiting, all in the calling
// goroutine.
func (r *Retry) retry(ctx context.Context, waiting []*pending) {
	r.retrying.Add(int64(len(waiting)))
	defer func() { r.retrying.Add(-int64(len(waiting))) }() // those still waiting at the end
	attempts := 1
	for _, wait := range r.schedule {
		if err := r.sleep(ctx, wait); err != nil {
			for _, p := range waiting {
				p.err = fmt.Errorf("%w (stopped retrying: %w)", p.err, err)
				r.giveUp(ctx, p, transport.ReasonQueueOverflow, attempts)
			}
			return
		}
		attempts++
		still := waiting[:0]
		for _, p := range waiting {
			r.retries.Add(1)
			if ce := r.log.Check(zap.DebugLevel, "send retry"); ce != nil {
				ce.Write(zap.String("category", "retry"), zap.String("to", p.m.To), zap.String("message_id", p.m.MessageID),
					zap.Int("attempt", attempts), zap.Duration("wait", wait))
			}
			p.err = r.attempt(ctx, p.m)
			if errors.Is(p.err, transport.ErrQueueFull) {
				still = append(still, p)
			}
		}
		r.retrying.Add(-int64(len(waiting) - len(still)))
		waiting = still
		if len(waiting) == 0 {
			return
		}
	}
	for _, p := range waiting {
		var full *transport.QueueFullError
		if errors.As(p.err, &full) {
			full.Attempts = attempts
		}
		r.giveUp(ctx, p, transport.ReasonMaxRetries, attempts)
	}
}

// sleep waits d on the clock, or returns why it stopped early.
func (r *Retry) sleep(ctx context.Context, d time.Duration) error {
	fired := make(chan struct{})
	t := r.clk.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	case <-r.done:
		t.Stop()
		return transport.ErrClosed
	}
}

// giveUp dead-letters a send that stopped waiting. Over a transport
// without offers, its last refusal was dead-lettered already.
func (r *Retry) giveUp(ctx context.Context, p *pending, reason transport.DeadLetterReason, attempts int) {
	r.gaveUp.Add(1)
	if r.dead == nil {
		return
	}
	// The send's ctx may be what ended: the dead letter is recorded anyway.
	if err := r.dead.DeadLetterWork(context.WithoutCancel(ctx), p.m, reason, attempts, p.err.Error()); err != nil {
		r.log.Warn("retry: dead letter not recorded", zap.String("message_id", p.m.MessageID), zap.Error(err))
	}
}

// Stats returns the retry counters.
func (r *Retry) Stats() RetryStats {
	return RetryStats{Retries: r.retries.Load(), Retrying: int(r.retrying.Load()), GaveUp: r.gaveUp.Load()}
}

// Close stops the sends waiting for a retry (each is dead-lettered
// "queue_overflow" and returns an error matching ErrQueueFull and
// ErrClosed), waits for them to return, and makes later sends return
// ErrClosed. It does not close the inner transport. It is safe to call
// more than once.
func (r *Retry) Close() error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.done)
	}
	r.mu.Unlock()
	r.active.Wait()
	return nil
}

var _ transport.Transport = (*Retry)(nil)
