package transport

// BreakerState is the state of a mailbox's circuit breaker.
type BreakerState string

// The states of a circuit breaker.
const (
	// BreakerClosed: sends pass.
	BreakerClosed BreakerState = "closed"
	// BreakerHalfOpen: one trial send passes; the others are refused.
	BreakerHalfOpen BreakerState = "half-open"
	// BreakerOpen: sends are refused.
	BreakerOpen BreakerState = "open"
	// BreakerNone: the bus has no circuit breakers (WithCircuitBreaker).
	BreakerNone BreakerState = ""
)
