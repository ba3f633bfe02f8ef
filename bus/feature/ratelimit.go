package feature

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// RateLimits are the per-agent message rates of a RateLimiter. Zero fields
// take the defaults.
type RateLimits struct {
	// Outbound is how many NORMAL messages per minute one agent may send
	// (60 by default).
	Outbound float64
	// Inbound is how many NORMAL messages per minute one agent may receive
	// (120 by default).
	Inbound float64
	// Burst is how many NORMAL messages may pass at once before the rate
	// applies (10 by default).
	Burst int
	// High and Low scale the rates and the burst of HIGH and LOW messages
	// (2 and 0.5 by default). CRITICAL messages are never limited.
	High, Low float64
}

func (r RateLimits) withDefaults() RateLimits {
	if r.Outbound <= 0 {
		r.Outbound = 60
	}
	if r.Inbound <= 0 {
		r.Inbound = 120
	}
	if r.Burst <= 0 {
		r.Burst = 10
	}
	if r.High <= 0 {
		r.High = 2
	}
	if r.Low <= 0 {
		r.Low = 0.5
	}
	return r
}

// RateStats are a RateLimiter's figures.
type RateStats struct {
	// Deferred is the number of messages waiting in senders' outbound
	// queues now; DeferredFor splits it by receiver.
	Deferred    int
	DeferredFor map[string]int
	// DeferredTotal counts every message that had to wait for its tokens.
	DeferredTotal uint64
	// Refused counts deferred messages the wrapped transport refused for
	// good when their turn came, without queueing or dead-lettering them
	// (a decorator inside the limiter refused them): nobody was waiting
	// for the error. A full or unknown mailbox is no refusal: the
	// transport dead-letters those messages.
	Refused uint64
}

// The priority bands that rate limits apply to; CRITICAL is never limited.
const (
	rateBandHigh = iota
	rateBandNormal
	rateBandLow
	rateBands
)

// rateBandOf returns the band of m, and false when m is not limited:
// CRITICAL, an ACK for a message that already passed the limits, a
// broadcast or a publication on a topic.
func rateBandOf(m *transport.Message) (int, bool) {
	if m.Type == transport.MessageAck || m.To == transport.BroadcastAll {
		return 0, false
	}
	if _, topic := m.Topic(); topic {
		return 0, false
	}
	switch m.Priority {
	case transport.PriorityHigh:
		return rateBandHigh, true
	case transport.PriorityNormal:
		return rateBandNormal, true
	case transport.PriorityLow:
		return rateBandLow, true
	}
	return 0, false
}

// RateLimiter limits, per agent, the messages it sends and receives point
// to point through it. A message over a limit is accepted at once and waits
// in its sender's outbound queue, one FIFO per priority, until both the
// sender's and the receiver's limits allow it: nothing is dropped, SendWork
// returns nil straight away (Send reports the message deferred), and a
// timer on the limiter's clock sends the backlog on to the transport it
// wraps, in order. A message the transport then refuses is dead-lettered by
// it as any refused send is ("receiver_not_found", "queue_overflow"):
// nobody is waiting for the error any more. CRITICAL messages, ACKs,
// broadcasts and publications are never limited.
//
// Metrics counts the messages waiting in outbound queues as accepted and
// queued, so that the accounting still adds up. Close stops the timer and
// waits for it; the messages still waiting stay counted. The limiter does
// not close the transport it wraps.
type RateLimiter struct {
	transport.Transport
	cfg   RateLimits
	clock clock.Clock
	ctx   context.Context // of the sends the timer makes; cancelled by Close
	stop  context.CancelFunc

	shut     atomic.Bool // closed, read without the lock by every send
	mu       sync.Mutex
	closed   bool
	agents   map[string]*rateAgent
	sweepAt  int
	deferred map[string]int // by receiver
	waiting  int
	total    uint64
	refused  uint64
	timers   map[*rateTimer]struct{}
	wg       sync.WaitGroup
}

// rateAgent is one agent's limiters, per band, for what it sends and what
// it receives, and its outbound queue of messages waiting for tokens.
type rateAgent struct {
	out, in [rateBands]*rate.Limiter
	queue   [rateBands][]*transport.Message
	timer   *rateTimer
	timerAt time.Time
	placing bool // a drain is sending its head messages on, outside the lock
}

// rateTimer is one scheduled drain. Whoever removes it from the limiter's
// timers (the callback starting, a re-arm, or Close) calls wg.Done.
type rateTimer struct{ t clock.Timer }

// NewRateLimiter returns inner with limits applied, on clk (clock.Real()
// when nil).
func NewRateLimiter(inner transport.Transport, limits RateLimits, clk clock.Clock) *RateLimiter {
	if clk == nil {
		clk = clock.Real()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &RateLimiter{
		Transport: inner, cfg: limits.withDefaults(), clock: clk, ctx: ctx, stop: stop,
		agents: make(map[string]*rateAgent), sweepAt: 1024,
		deferred: make(map[string]int), timers: make(map[*rateTimer]struct{}),
	}
}

// SendWork sends m on, or accepts it into its sender's outbound queue when
// a limit is reached (see Send).
func (r *RateLimiter) SendWork(ctx context.Context, m *transport.Message) error {
	_, err := r.send(ctx, m, false)
	return err
}

// Send is SendWork, and reports whether m was deferred: accepted into its
// sender's outbound queue, to be sent on when the limits allow.
func (r *RateLimiter) Send(ctx context.Context, m *transport.Message) (deferred bool, err error) {
	return r.send(ctx, m, false)
}

// OfferWork offers m to the transport it wraps (SendWork when that one is
// not a transport.Offerer) when the limits allow it now. Over a limit, m is
// deferred as SendWork defers it: once accepted the limiter cannot give it
// back, so a full mailbox then dead-letters it.
func (r *RateLimiter) OfferWork(ctx context.Context, m *transport.Message) error {
	_, err := r.send(ctx, m, true)
	return err
}

// Room is the wrapped transport's, when it tells it.
func (r *RateLimiter) Room(ctx context.Context, agent string) (free, capacity int, err error) {
	return roomOf(ctx, r.Transport, agent)
}

func (r *RateLimiter) send(ctx context.Context, m *transport.Message, offer bool) (bool, error) {
	if r.shut.Load() {
		return false, transport.ErrClosed
	}
	if m == nil || ctx == nil || m.Validate() != nil {
		return false, r.pass(ctx, m, offer) // the transport refuses it, and counts it
	}
	band, limited := rateBandOf(m)
	if !limited {
		return false, r.pass(ctx, m, offer)
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	at := r.clock.Now()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false, transport.ErrClosed
	}
	if len(r.agents) >= r.sweepAt {
		r.sweepLocked(at)
	}
	s, d := r.agentLocked(m.From), r.agentLocked(m.To)
	out, in := r.outLocked(s, band), r.inLocked(d, band)
	if len(s.queue[band]) == 0 && !s.placing && out.TokensAt(at) >= 1 && in.TokensAt(at) >= 1 {
		out.AllowN(at, 1)
		in.AllowN(at, 1)
		r.mu.Unlock()
		return false, r.pass(ctx, m, offer)
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = at.UTC() // its TTL runs from the send, not from the moment it leaves
	}
	s.queue[band] = append(s.queue[band], m)
	r.deferred[m.To]++
	r.waiting++
	r.total++
	r.armLocked(m.From, s, at)
	r.mu.Unlock()
	return true, nil
}

// pass hands m to the wrapped transport.
func (r *RateLimiter) pass(ctx context.Context, m *transport.Message, offer bool) error {
	if o, ok := r.Transport.(transport.Offerer); ok && offer {
		return o.OfferWork(ctx, m)
	}
	return r.Transport.SendWork(ctx, m)
}

func (r *RateLimiter) factor(band int) float64 {
	switch band {
	case rateBandHigh:
		return r.cfg.High
	case rateBandLow:
		return r.cfg.Low
	}
	return 1
}

func (r *RateLimiter) newRate(perMinute float64, band int) *rate.Limiter {
	f := r.factor(band)
	burst := max(1, int(math.Round(float64(r.cfg.Burst)*f)))
	return rate.NewLimiter(rate.Limit(perMinute*f/60), burst)
}

func (r *RateLimiter) agentLocked(id string) *rateAgent {
	a := r.agents[id]
	if a == nil {
		a = &rateAgent{}
		r.agents[id] = a
	}
	return a
}

func (r *RateLimiter) outLocked(a *rateAgent, band int) *rate.Limiter {
	if a.out[band] == nil {
		a.out[band] = r.newRate(r.cfg.Outbound, band)
	}
	return a.out[band]
}

func (r *RateLimiter) inLocked(a *rateAgent, band int) *rate.Limiter {
	if a.in[band] == nil {
		a.in[band] = r.newRate(r.cfg.Inbound, band)
	}
	return a.in[band]
}

// sweepLocked forgets agents with nothing queued whose buckets are full
// again: they are indistinguishable from agents never seen, so a flood of
// distinct sender ids cannot grow the table without bound.
func (r *RateLimiter) sweepLocked(at time.Time) {
	for id, a := range r.agents {
		if a.timer == nil && !a.placing && a.idle(at) {
			delete(r.agents, id)
		}
	}
	r.sweepAt = max(1024, 2*len(r.agents))
}

func (a *rateAgent) idle(at time.Time) bool {
	for band := range rateBands {
		if len(a.queue[band]) > 0 {
			return false
		}
		for _, l := range []*rate.Limiter{a.out[band], a.in[band]} {
			if l != nil && l.TokensAt(at) < float64(l.Burst()) {
				return false
			}
		}
	}
	return true
}

// rateWait returns how long until l has a token at, zero when it has one.
func rateWait(l *rate.Limiter, at time.Time) time.Duration {
	t := l.TokensAt(at)
	if t >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - t) / float64(l.Limit()) * float64(time.Second)))
}

// armLocked makes sure sender's backlog is looked at again as soon as the
// first message of one of its bands could get its tokens.
func (r *RateLimiter) armLocked(sender string, s *rateAgent, at time.Time) {
	if r.closed || s.placing {
		return // the running drain re-arms when it is done
	}
	next := time.Duration(-1)
	for band := range rateBands {
		if len(s.queue[band]) == 0 {
			continue
		}
		h := s.queue[band][0]
		w := max(rateWait(r.outLocked(s, band), at), rateWait(r.inLocked(r.agentLocked(h.To), band), at))
		if next < 0 || w < next {
			next = w
		}
	}
	if next < 0 {
		return
	}
	due := at.Add(next)
	if s.timer != nil && !s.timerAt.After(due) {
		return
	}
	r.stopLocked(s.timer)
	tm := &rateTimer{}
	s.timer, s.timerAt = tm, due
	r.timers[tm] = struct{}{}
	r.wg.Add(1)
	tm.t = r.clock.AfterFunc(next, func() { r.drain(sender, s, tm) })
}

// stopLocked cancels tm if its callback has not started; safe on nil.
func (r *RateLimiter) stopLocked(tm *rateTimer) {
	if tm == nil {
		return
	}
	if _, live := r.timers[tm]; !live {
		return
	}
	delete(r.timers, tm)
	tm.t.Stop()
	r.wg.Done()
}

// drain sends on every message of sender's backlog whose tokens are
// available, band by band and in order within a band, then re-arms. The
// messages leave the lock to be sent, and stay counted as deferred until
// the transport has them.
func (r *RateLimiter) drain(sender string, s *rateAgent, tm *rateTimer) {
	r.mu.Lock()
	if _, live := r.timers[tm]; !live {
		r.mu.Unlock()
		return // stopped, or Close came first
	}
	delete(r.timers, tm)
	defer r.wg.Done()
	if s.timer == tm {
		s.timer = nil
	}
	if s.placing {
		r.mu.Unlock()
		return
	}
	at := r.clock.Now()
	var ready []*transport.Message
	for band := range rateBands {
		q := s.queue[band]
		for len(q) > 0 {
			h := q[0]
			out, in := r.outLocked(s, band), r.inLocked(r.agentLocked(h.To), band)
			if out.TokensAt(at) < 1 || in.TokensAt(at) < 1 {
				break
			}
			out.AllowN(at, 1)
			in.AllowN(at, 1)
			q[0] = nil
			q = q[1:]
			ready = append(ready, h)
		}
		if len(q) == 0 {
			q = nil
		}
		s.queue[band] = q
	}
	s.placing = len(ready) > 0
	r.mu.Unlock()

	var kept []*transport.Message
	var keptErr error
	refused := 0
	for i, m := range ready {
		err := r.Transport.SendWork(r.ctx, m)
		if rateLater(err) || (err != nil && r.ctx.Err() != nil) {
			kept, keptErr = ready[i:], err // not taken: they wait again, at the head of their bands
			break
		}
		if !rateTaken(err) {
			refused++ // refused for good (an open breaker, say): nobody waits for the error
		}
	}

	r.mu.Lock()
	for _, m := range ready[:len(ready)-len(kept)] {
		r.settleLocked(m)
	}
	r.refused += uint64(refused)
	for i := len(kept) - 1; i >= 0; i-- {
		band, _ := rateBandOf(kept[i])
		s.queue[band] = append([]*transport.Message{kept[i]}, s.queue[band]...)
	}
	s.placing = false
	switch {
	case len(kept) == 0:
		r.armLocked(sender, s, r.clock.Now())
	case r.ctx.Err() == nil && !errors.Is(keptErr, transport.ErrClosed):
		// The transport could not take them for now: try again after a
		// pause instead of at once.
		r.armAfterLocked(sender, s, at, rateUnavailablePause)
	}
	r.mu.Unlock()
}

// rateTaken reports whether the transport took responsibility for a
// message it was sent: queued it, dropped it as a duplicate, or
// dead-lettered it (a full or unknown mailbox).
func rateTaken(err error) bool {
	return err == nil || errors.Is(err, transport.ErrQueueFull) || errors.Is(err, transport.ErrUnknownAgent)
}

// rateLater reports whether the transport could not take a message for
// now (transport.ErrUnavailable) or is closed: the message keeps waiting.
func rateLater(err error) bool {
	return errors.Is(err, transport.ErrUnavailable) || errors.Is(err, transport.ErrClosed)
}

// rateUnavailablePause is the pause before a backlog the transport could
// not take (transport.ErrUnavailable, for one) is sent again.
const rateUnavailablePause = 100 * time.Millisecond

// armAfterLocked arms sender's drain d from at, whatever its tokens say.
func (r *RateLimiter) armAfterLocked(sender string, s *rateAgent, at time.Time, d time.Duration) {
	if r.closed {
		return
	}
	r.stopLocked(s.timer)
	tm := &rateTimer{}
	s.timer, s.timerAt = tm, at.Add(d)
	r.timers[tm] = struct{}{}
	r.wg.Add(1)
	tm.t = r.clock.AfterFunc(d, func() { r.drain(sender, s, tm) })
}

// settleLocked forgets a deferred message the transport now has.
func (r *RateLimiter) settleLocked(m *transport.Message) {
	r.waiting--
	if r.deferred[m.To]--; r.deferred[m.To] <= 0 {
		delete(r.deferred, m.To)
	}
}

// Metrics is the wrapped transport's, with the messages waiting in
// outbound queues counted as accepted and queued.
func (r *RateLimiter) Metrics() transport.Snapshot {
	r.mu.Lock()
	n := r.waiting
	r.mu.Unlock()
	s := r.Transport.Metrics()
	s.Accepted += uint64(n)
	s.Queued += n
	return s
}

// Stats returns the limiter's figures.
func (r *RateLimiter) Stats() RateStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := RateStats{Deferred: r.waiting, DeferredTotal: r.total, Refused: r.refused, DeferredFor: make(map[string]int, len(r.deferred))}
	for to, n := range r.deferred {
		st.DeferredFor[to] = n
	}
	return st
}

// Close stops the limiter's timer and waits for a drain under way; later
// sends return transport.ErrClosed. The messages still waiting stay
// counted. Close is safe to call more than once and returns nil.
func (r *RateLimiter) Close() error {
	r.shut.Store(true)
	r.mu.Lock()
	r.closed = true
	for tm := range r.timers {
		delete(r.timers, tm)
		tm.t.Stop()
		r.wg.Done()
	}
	r.mu.Unlock()
	r.stop()
	r.wg.Wait()
	return nil
}

var (
	_ transport.Transport  = (*RateLimiter)(nil)
	_ transport.Offerer    = (*RateLimiter)(nil)
	_ transport.RoomTeller = (*RateLimiter)(nil)
)
