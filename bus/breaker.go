package bus

import (
	"errors"
	"sync/atomic"

	"github.com/batonhq/baton/transport"
	"github.com/sony/gobreaker/v2"
	"go.uber.org/zap"
)

// The outcomes a breaker counts as failed deliveries, and the one it
// ignores (a message that expired or lost its receiver says nothing about
// the receiver's health).
var (
	errBreakerFull  = errors.New("bus: mailbox at breaker capacity")
	errAckTimeout   = errors.New("bus: not acknowledged in time")
	errRejected     = errors.New("bus: rejected by receiver")
	errNotDelivered = errors.New("bus: not delivered")
)

// breaker is one mailbox's circuit breaker. Each point-to-point send asks
// it first; its outcome is reported when known: at once for a plain
// message, at the acknowledgement, ack timeout or rejection for a
// requires_ack one (pending until then, under the mailbox's lock).
type breaker struct {
	cb         *gobreaker.TwoStepCircuitBreaker[struct{}]
	atCapacity int         // depth from which a queued message counts as a failure
	full       atomic.Bool // the failure being reported is a capacity one
	pending    map[string]func(error)
}

func (b *Bus) newBreaker(agent string, capacity int) *breaker {
	s := *b.cfg.breaker
	br := &breaker{atCapacity: max(1, int(s.Capacity*float64(capacity)+0.999999))}
	br.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        agent,
		MaxRequests: 1,
		Timeout:     s.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= uint32(s.Failures) || br.full.Load()
		},
		IsExcluded: func(err error) bool { return err == errNotDelivered },
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.breakerOpened.Add(1)
			}
			if ce := b.log.Check(zap.WarnLevel, "circuit breaker"); ce != nil {
				ce.Write(zap.String("category", "circuit_breaker"), zap.String("agent", name),
					zap.String("from", from.String()), zap.String("to", to.String()))
			}
		},
	})
	return br
}

// allow asks the breaker to let one send through. It refuses with a
// *CircuitOpenError when open, or half-open with its trial under way.
func (br *breaker) allow(agent string) (func(error), error) {
	done, err := br.cb.Allow()
	if err == nil {
		return done, nil
	}
	state := transport.BreakerOpen
	if errors.Is(err, gobreaker.ErrTooManyRequests) {
		state = transport.BreakerHalfOpen
	}
	return nil, &CircuitOpenError{Agent: agent, State: state}
}

// report tells the breaker the outcome of one send it allowed.
func (br *breaker) report(done func(error), err error) {
	if br == nil || done == nil {
		return
	}
	br.full.Store(err == errBreakerFull || errors.Is(err, transport.ErrQueueFull))
	done(err)
}

// queuedLocked reports the outcome of a send whose message was just queued:
// a failure when the mailbox is at breaker capacity, pending until acked
// for a requires_ack message, a success otherwise.
func (br *breaker) queuedLocked(mb *mailbox, m *transport.Message, done func(error)) {
	switch {
	case br == nil || done == nil:
	case mb.c.depth >= br.atCapacity:
		br.report(done, errBreakerFull)
	case m.RequiresAck:
		if br.pending == nil {
			br.pending = make(map[string]func(error))
		}
		if prev := br.pending[m.MessageID]; prev != nil {
			br.report(prev, errNotDelivered)
		}
		br.pending[m.MessageID] = done
	default:
		br.report(done, nil)
	}
}

// resolveLocked reports the outcome of a pending requires_ack send. It is
// safe on a nil breaker and on a message that is not pending.
func (br *breaker) resolveLocked(id string, err error) {
	if br == nil || br.pending == nil {
		return
	}
	if done := br.pending[id]; done != nil {
		delete(br.pending, id)
		br.report(done, err)
	}
}

func (br *breaker) state() transport.BreakerState {
	if br == nil {
		return transport.BreakerNone
	}
	switch br.cb.State() {
	case gobreaker.StateOpen:
		return transport.BreakerOpen
	case gobreaker.StateHalfOpen:
		return transport.BreakerHalfOpen
	}
	return transport.BreakerClosed
}

// Breaker returns the state of agentID's circuit breaker, BreakerNone when
// the bus has none.
func (b *Bus) Breaker(agentID string) (transport.BreakerState, error) {
	mb, err := b.mailboxFor(agentID)
	if err != nil {
		return transport.BreakerNone, err
	}
	return mb.br.state(), nil
}
