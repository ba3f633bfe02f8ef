package feature

import (
	"context"

	"github.com/batonhq/baton/transport"
)

// guardError is the type of the sentinels of the rate limiter, the circuit
// breakers and the pressure gauge. Each matches transport.ErrCommunication,
// the root of every message-layer error.
type guardError struct{ msg string }

// Error returns the message text.
func (e *guardError) Error() string { return e.msg }

// Is reports whether target is the root of the hierarchy.
func (e *guardError) Is(target error) bool { return target == transport.ErrCommunication }

var (
	// ErrCircuitOpen marks a send refused because the receiver's circuit
	// breaker is open (or half-open with its trial message under way).
	ErrCircuitOpen error = &guardError{"feature: circuit open"}
	// ErrNoRoom is returned by Room, and by the pressure gauge, when the
	// wrapped transport cannot tell how much room a mailbox has (it is not
	// a transport.RoomTeller).
	ErrNoRoom error = &guardError{"feature: the transport does not tell a mailbox's room"}
)

// CircuitOpenError reports a send refused by the receiver's circuit
// breaker. The message was not accepted.
type CircuitOpenError struct {
	// Agent is the receiver whose breaker refused the message.
	Agent string
	// State is BreakerOpen, or BreakerHalfOpen when the one trial message
	// allowed is still under way.
	State BreakerState
}

// Error returns the message text.
func (e *CircuitOpenError) Error() string {
	return "feature: circuit breaker of " + e.Agent + " is " + string(e.State)
}

// Unwrap makes the error match ErrCircuitOpen.
func (e *CircuitOpenError) Unwrap() error { return ErrCircuitOpen }

// roomOf asks tr for agent's room, ErrNoRoom when it cannot tell.
func roomOf(ctx context.Context, tr transport.Transport, agent string) (free, capacity int, err error) {
	rt, ok := tr.(transport.RoomTeller)
	if !ok {
		return 0, 0, ErrNoRoom
	}
	return rt.Room(ctx, agent)
}
