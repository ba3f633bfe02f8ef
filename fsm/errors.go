package fsm

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrUnknownEvent means the event names no rule of the workflow.
	ErrUnknownEvent = errors.New("fsm: unknown event")
	// ErrInvalidTransition means the event exists but not from the current state.
	ErrInvalidTransition = errors.New("fsm: invalid transition")
	// ErrUnknownState means a state name is not declared by the workflow.
	ErrUnknownState = errors.New("fsm: unknown state")
	// ErrTransitionFailed wraps any other failure reported by the underlying machine.
	ErrTransitionFailed = errors.New("fsm: transition failed")
)

// TransitionError describes a refused transition.
type TransitionError struct {
	Event string // the rule id or LimitEvent
	State string // the state the machine was in
	Err   error  // one of the sentinels above
}

func (e *TransitionError) Error() string {
	switch {
	case errors.Is(e.Err, ErrUnknownEvent):
		return fmt.Sprintf("fsm: unknown event %q (state %s)", e.Event, e.State)
	case errors.Is(e.Err, ErrInvalidTransition):
		return fmt.Sprintf("fsm: invalid transition: event %q is not allowed in state %s", e.Event, e.State)
	case errors.Is(e.Err, ErrUnknownState):
		return fmt.Sprintf("fsm: unknown state %q", e.State)
	default:
		return fmt.Sprintf("fsm: event %q in state %s: %v", e.Event, e.State, e.Err)
	}
}

// Unwrap returns the sentinel the error wraps.
func (e *TransitionError) Unwrap() error { return e.Err }
