package engine

import (
	"errors"
	"fmt"

	"github.com/batonhq/baton/record"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrUnknownInstance means no instance has the given id.
	ErrUnknownInstance = record.ErrUnknownInstance
	// ErrUnknownWorkflow means a store keeps no workflow source under the
	// given hash.
	ErrUnknownWorkflow = record.ErrUnknownWorkflow
	// ErrInvalidID matches every *IDError: an id StartID refuses.
	ErrInvalidID = record.ErrInvalidID
	// ErrInstanceFinished means the instance has already completed, failed or
	// been cancelled.
	ErrInstanceFinished = errors.New("engine: instance finished")
	// ErrStaleReport means an outcome was reported for a run that is not the
	// instance's current run (a late reply after a timeout, say). It is
	// recorded in the history and otherwise ignored.
	ErrStaleReport = errors.New("engine: stale report")
	// ErrFutureStep means an outcome, a heartbeat or a take was reported
	// for a step the instance has not reached: no work of that step was
	// ever sent, so the report is not late but wrong (answered invalid),
	// and nothing is recorded.
	ErrFutureStep = errors.New("engine: report for a step the instance has not reached")
	// ErrReservedTrigger means an agent reported one of the outcomes only the
	// engine may produce (error, timeout, rejected, joined, partial, conflict).
	ErrReservedTrigger = errors.New("engine: reserved trigger")
	// ErrLimit means an instance hit one of its workflow's limits.
	ErrLimit = errors.New("engine: limit exceeded")
	// ErrTimeout means an agent's run exceeded its state's timeout.
	ErrTimeout = errors.New("engine: run timed out")
	// ErrClosed means the engine has been closed.
	ErrClosed = errors.New("engine: closed")
	// ErrCanceled means the instance was cancelled.
	ErrCanceled = errors.New("engine: instance cancelled")
	// ErrInvalidData matches every *InputError.
	ErrInvalidData = errors.New("engine: invalid data")
	// ErrOverloaded matches every *OverloadedError: a start refused for
	// lack of room, never accepted.
	ErrOverloaded = errors.New("engine: overloaded")
	// ErrDuplicateInstance means an instance id is already taken.
	ErrDuplicateInstance = errors.New("engine: duplicate instance id")
	// ErrUnexpectedSignal means a signal came that the instance does not
	// wait for: it is not in a wait state, or the state does not list the
	// signal. The instance is left as it was.
	ErrUnexpectedSignal = errors.New("engine: unexpected signal")
	// ErrNoActiveRun means a user selection came when no agent was working on
	// the instance (or the state is parallel).
	ErrNoActiveRun = errors.New("engine: no run under way to hand over")
	// ErrNoTransport matches every *NoTransportError.
	ErrNoTransport = errors.New("engine: no transport for an external agent")
)

// NoTransportError is New refusing a workflow with an agent that has no Go
// handler when no transport (WithTransport) carries its work: nothing would
// ever take that agent's work. Give the engine a transport (bus.New() in
// one process, natsbus across processes), or the agent a handler.
type NoTransportError struct {
	// Workflow and Agent name the workflow and its first external agent.
	Workflow, Agent string
}

// Error returns the message text.
func (e *NoTransportError) Error() string {
	return fmt.Sprintf("engine: workflow %s: agent %s has no Go handler and no transport carries its work (WithTransport)", e.Workflow, e.Agent)
}

// Unwrap makes the error match ErrNoTransport.
func (e *NoTransportError) Unwrap() error { return ErrNoTransport }

// IDError is an instance id StartID refuses, and why (see record.CheckID:
// at most record.MaxIDLen bytes of UTF-8 without control characters, not
// "." or "..").
type IDError = record.IDError

// LimitError says which limit an instance hit, in which state, with which count.
type LimitError struct {
	Limit string // max_visits, max_steps, max_tokens, max_cost or max_duration
	State string // the state that would have been entered; for a state's own budget, that state; for max_duration, the state the instance was in
	Count int    // the count the transition would have reached; for max_tokens, the tokens used
	Max   int
	// Total and Budget are, for a budget, the total reached and the
	// budget: tokens, cost, or for max_duration seconds.
	Total, Budget float64
	// Visit marks a state's own max_tokens or max_cost, which the runs of
	// its current visit broke.
	Visit bool
}

func (e *LimitError) Error() string {
	if msg, ok := e.budgetText(); ok {
		return msg
	}
	if e.Limit == "max_steps" {
		return fmt.Sprintf("engine: limit max_steps exceeded: entering %s would make step %d (max %d)", e.State, e.Count, e.Max)
	}
	return fmt.Sprintf("engine: limit max_visits exceeded: state %s would be visited %d times (max %d)", e.State, e.Count, e.Max)
}

// Unwrap returns ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }

// FailedError is why an instance failed.
type FailedError struct {
	InstanceID string
	State      string
	Err        error
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("engine: instance %s failed in state %s: %v", e.InstanceID, e.State, e.Err)
}

// Unwrap returns the cause.
func (e *FailedError) Unwrap() error { return e.Err }

// InputError refuses data at the engine's door (a start input, an agent's
// result) and names the field that is wrong: a number JSON cannot hold,
// text that is not UTF-8, a value no store could encode, data too large, a
// field missing or of another type than the workflow's `input` or the
// agent's `result` declares.
type InputError struct {
	Field  string // input.items[2].price, say
	Reason string
}

func (e *InputError) Error() string { return "engine: " + e.Field + " " + e.Reason }

// Unwrap returns ErrInvalidData.
func (e *InputError) Unwrap() error { return ErrInvalidData }

// CommitError is how an instance fails when the store refuses its step even
// after retries: nothing of the step was sent, and the store keeps the
// instance at its last committed step, from which the engine resumes it by
// itself once the store takes commits again (Resume continues it too).
type CommitError struct {
	InstanceID string
	Step       int
	Err        error
}

func (e *CommitError) Error() string {
	return fmt.Sprintf("engine: instance %s: step %d not committed: %v", e.InstanceID, e.Step, e.Err)
}

// Unwrap returns the store's error.
func (e *CommitError) Unwrap() error { return e.Err }

// OverloadedError refuses a start because the first agent's mailbox stayed
// full until the caller's context ended (or at once: on a simulated
// executor, and when the first agent is external): the instance was never
// accepted.
type OverloadedError struct {
	Agent    string
	Capacity int
	Err      error // the context's error, when it ended the wait
}

func (e *OverloadedError) Error() string {
	return fmt.Sprintf("engine: overloaded: %s's mailbox is full (capacity %d)", e.Agent, e.Capacity)
}

// Unwrap returns ErrOverloaded.
func (e *OverloadedError) Unwrap() []error { return []error{ErrOverloaded, e.Err} }
