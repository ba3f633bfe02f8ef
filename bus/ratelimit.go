package bus

import (
	"math"
	"sync"
	"time"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// The priority bands that rate limits apply to; CRITICAL is never limited.
const (
	bandHigh = iota
	bandNormal
	bandLow
	numBands
)

// bandOf returns the rate-limit band of m, and false when m is not limited
// (CRITICAL, or an ACK for a message that already passed the limits).
func bandOf(m *transport.Message) (int, bool) {
	if m.Type == transport.MessageAck {
		return 0, false
	}
	switch m.Priority {
	case transport.PriorityHigh:
		return bandHigh, true
	case transport.PriorityNormal:
		return bandNormal, true
	case transport.PriorityLow:
		return bandLow, true
	}
	return 0, false
}

// limiter enforces WithRateLimits. One lock guards every agent's limiters
// and outbound queues, so the tokens of a sender and a receiver are taken
// together and a sender's backlog leaves in order.
type limiter struct {
	cfg RateLimits

	mu      sync.Mutex
	agents  map[string]*agentRate
	sweepAt int
}

// agentRate is one agent's limiters, per band, for what it sends and what
// it receives, and its outbound queue of messages waiting for tokens.
type agentRate struct {
	out, in [numBands]*rate.Limiter
	queue   [numBands][]*deferredSend
	timer   *timer
	timerAt int64
	gen     uint64
}

// deferredSend is an accepted message waiting in its sender's outbound
// queue; it is counted in its receiver's mailbox as deferred.
type deferredSend struct {
	mb    *mailbox
	m     *transport.Message
	start time.Time
	done  func(error)
}

func newLimiter(r *RateLimits) *limiter {
	if r == nil {
		return nil
	}
	return &limiter{cfg: *r, agents: make(map[string]*agentRate), sweepAt: 1024}
}

func (rl *limiter) factor(band int) float64 {
	switch band {
	case bandHigh:
		return rl.cfg.High
	case bandLow:
		return rl.cfg.Low
	}
	return 1
}

func (rl *limiter) newRate(perMinute float64, band int) *rate.Limiter {
	f := rl.factor(band)
	burst := max(1, int(math.Round(float64(rl.cfg.Burst)*f)))
	return rate.NewLimiter(rate.Limit(perMinute*f/60), burst)
}

func (rl *limiter) agentLocked(id string) *agentRate {
	a := rl.agents[id]
	if a == nil {
		a = &agentRate{}
		rl.agents[id] = a
	}
	return a
}

func (rl *limiter) outLocked(a *agentRate, band int) *rate.Limiter {
	if a.out[band] == nil {
		a.out[band] = rl.newRate(rl.cfg.Outbound, band)
	}
	return a.out[band]
}

func (rl *limiter) inLocked(a *agentRate, band int) *rate.Limiter {
	if a.in[band] == nil {
		a.in[band] = rl.newRate(rl.cfg.Inbound, band)
	}
	return a.in[band]
}

// sweepLocked forgets agents with nothing queued whose buckets are full
// again: they are indistinguishable from agents never seen, so a flood of
// distinct sender ids cannot grow the table without bound.
func (rl *limiter) sweepLocked(at time.Time) {
	for id, a := range rl.agents {
		if a.timer == nil && a.idle(at) {
			delete(rl.agents, id)
		}
	}
	rl.sweepAt = max(1024, 2*len(rl.agents))
}

func (a *agentRate) idle(at time.Time) bool {
	for band := range numBands {
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

// wait returns how long until l has a token at, zero when it has one.
func wait(l *rate.Limiter, at time.Time) time.Duration {
	t := l.TokensAt(at)
	if t >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - t) / float64(l.Limit()) * float64(time.Second)))
}

// rateLimited applies the rate limits to a point-to-point message bound for
// mb. It returns false when the message may be queued now (its tokens are
// taken) and true when it was accepted into its sender's outbound queue
// instead, to be queued by drain once the limits allow.
func (b *Bus) rateLimited(mb *mailbox, m *transport.Message, start time.Time, done func(error)) bool {
	band, limited := bandOf(m)
	if !limited {
		return false
	}
	rl := b.rl
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if len(rl.agents) >= rl.sweepAt {
		rl.sweepLocked(start)
	}
	s := rl.agentLocked(m.From)
	r := rl.agentLocked(m.To)
	out, in := rl.outLocked(s, band), rl.inLocked(r, band)
	if len(s.queue[band]) == 0 && out.TokensAt(start) >= 1 && in.TokensAt(start) >= 1 {
		out.AllowN(start, 1)
		in.AllowN(start, 1)
		return false
	}
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return false
	}
	mb.c.accepted++
	mb.c.deferred++
	mb.mu.Unlock()
	s.queue[band] = append(s.queue[band], &deferredSend{mb: mb, m: m, start: start, done: done})
	b.rateDeferred.Add(1)
	b.armDrainLocked(m.From, s, start)
	if ce := b.log.Check(zap.DebugLevel, "message rate-limited"); ce != nil {
		ce.Write(zap.String("category", "rate_limit"), messageFields(m), zap.Int("backlog", len(s.queue[band])))
	}
	return true
}

// armDrainLocked makes sure sender's backlog is looked at again as soon as
// the first message of one of its bands could get its tokens.
func (b *Bus) armDrainLocked(sender string, s *agentRate, at time.Time) {
	rl := b.rl
	next := time.Duration(-1)
	for band := range numBands {
		if len(s.queue[band]) == 0 {
			continue
		}
		h := s.queue[band][0]
		r := rl.agentLocked(h.m.To)
		w := max(wait(rl.outLocked(s, band), at), wait(rl.inLocked(r, band), at))
		if next < 0 || w < next {
			next = w
		}
	}
	if next < 0 {
		return
	}
	due := at.UnixNano() + int64(next)
	if s.timer != nil && s.timerAt <= due {
		return
	}
	s.timer.stop()
	s.gen++
	gen := s.gen
	s.timerAt = due
	s.timer = b.timers.after(next, func() { b.drain(sender, s, gen) })
}

// drain queues every message of sender's backlog whose tokens are
// available, band by band and in order within a band, then re-arms.
func (b *Bus) drain(sender string, s *agentRate, gen uint64) {
	at := b.clock.Now()
	rl := b.rl
	var dead []deadNote
	rl.mu.Lock()
	if s.gen == gen {
		s.timer = nil
	}
	for band := range numBands {
		q := s.queue[band]
		for len(q) > 0 {
			h := q[0]
			out, in := rl.outLocked(s, band), rl.inLocked(rl.agentLocked(h.m.To), band)
			if out.TokensAt(at) < 1 || in.TokensAt(at) < 1 {
				break
			}
			out.AllowN(at, 1)
			in.AllowN(at, 1)
			q[0] = nil
			q = q[1:]
			if d, ok := b.placeDeferred(h, at); !ok {
				dead = append(dead, d)
			}
		}
		if len(q) == 0 {
			q = nil
		}
		s.queue[band] = q
	}
	b.armDrainLocked(sender, s, at)
	rl.mu.Unlock()
	for _, d := range dead {
		b.logDeadLetter(d.m, d.reason, d.err)
	}
	b.flush()
}

// deadNote is a dead letter to log once the locks are released.
type deadNote struct {
	m      *transport.Message
	reason transport.DeadLetterReason
	err    string
}

// placeDeferred moves a rate-limited message from its sender's backlog into
// its receiver's mailbox, or dead-letters it if the receiver is gone
// ("receiver_not_found") or full ("queue_overflow"): nobody is waiting for
// a send error any more.
func (b *Bus) placeDeferred(h *deferredSend, at time.Time) (deadNote, bool) {
	mb, m := h.mb, h.m
	now := at.UnixNano()
	var expired []*transport.Message
	mb.mu.Lock()
	mb.c.deferred--
	if mb.closed {
		err := (&transport.RoutingError{To: m.To, Reason: "receiver not found", Err: transport.ErrUnknownAgent}).Error()
		b.deadLetterLocked(&mb.c, m, transport.ReasonReceiverNotFound, 1, err, at)
		mb.mu.Unlock()
		return deadNote{m, transport.ReasonReceiverNotFound, err}, false
	}
	if err := b.reserveLocked(mb, now, at, &expired); err != nil {
		b.deadLetterLocked(&mb.c, m, transport.ReasonQueueOverflow, 1, err.Error(), at)
		mb.br.report(h.done, err)
		mb.mu.Unlock()
		b.logExpired(expired)
		return deadNote{m, transport.ReasonQueueOverflow, err.Error()}, false
	}
	if m.Type == transport.MessageHandoff {
		mb.c.handoffs++
	}
	b.pushLocked(mb, entry{m: m, enq: now, exp: m.ExpiresAt().UnixNano()}, false, now)
	mb.br.queuedLocked(mb, m, h.done)
	mb.mu.Unlock()
	b.logExpired(expired)
	b.recordSent(mb, m, h.start)
	return deadNote{}, true
}
