package handoff

import (
	"errors"
	"fmt"

	"github.com/batonhq/baton/transport"
)

// Sentinel errors of the hand-off package, matched with errors.Is.
var (
	// ErrHandoffRefused matches every refusal of the validator.
	ErrHandoffRefused = errors.New("handoff: refused")
	// ErrUnknownTarget: the target agent is not registered.
	ErrUnknownTarget = errors.New("handoff: unknown target agent")
	// ErrNotSelectable: a user selected an agent that is not selectable.
	ErrNotSelectable = errors.New("handoff: agent not user-selectable")
	// ErrSelfHandoff: an agent tried to hand off to itself.
	ErrSelfHandoff = errors.New("handoff: hand-off to self")
	// ErrSystemAgent: a dynamic hand-off to a system agent not made by the
	// supervisor.
	ErrSystemAgent = errors.New("handoff: system agent")
	// ErrLoopDetected: the target already received too many of the recent
	// hand-offs.
	ErrLoopDetected = errors.New("handoff: loop detected")
	// ErrCapabilityMismatch: the target lacks the capability a
	// capability_match hand-off requires.
	ErrCapabilityMismatch = errors.New("handoff: capability mismatch")
	// ErrTaskRequired: the command has no task description.
	ErrTaskRequired = errors.New("handoff: task description required")
	// ErrInvalidPriority: the command's priority is not on the scale.
	ErrInvalidPriority = errors.New("handoff: invalid priority")
	// ErrInvalidReason: the command's reason is not a known hand-off reason.
	ErrInvalidReason = errors.New("handoff: invalid reason")

	// ErrInvalidOption matches every *OptionError.
	ErrInvalidOption = errors.New("handoff: invalid option")
)

// The checks of the validator, in the order it runs them. A RefusalError
// names the one that refused.
const (
	CheckTarget     = "target_exists"
	CheckSelectable = "selectable"
	CheckSelf       = "not_self"
	CheckSystem     = "system_agent"
	CheckLoop       = "loop"
	CheckCapability = "capability"
	CheckTask       = "task_description"
	CheckPriority   = "priority"
	CheckReason     = "reason"
)

// RefusalError is the validator's refusal of a hand-off: which check refused
// it, the agents involved and why. It matches ErrHandoffRefused, the
// check's own sentinel (ErrSelfHandoff, ErrLoopDetected, ...) and
// transport.ErrHandoff; for an unknown target it also matches
// registry.ErrUnknownAgent.
type RefusalError struct {
	Check  string // one of the Check* constants
	From   string // the agent handing off
	To     string // the requested target
	Reason string // a sentence saying why
	err    error  // the check's sentinel
	cause  error  // an underlying error, such as the registry's
}

// Error reads like "handoff: refused seller -> seller (not_self): cannot
// hand off to self".
func (e *RefusalError) Error() string {
	return fmt.Sprintf("handoff: refused %s -> %s (%s): %s", e.From, e.To, e.Check, e.Reason)
}

// Unwrap returns ErrHandoffRefused, the check's sentinel, transport.ErrHandoff and
// the underlying cause, if any.
func (e *RefusalError) Unwrap() []error {
	errs := []error{ErrHandoffRefused, transport.ErrHandoff}
	if e.err != nil {
		errs = append(errs, e.err)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

func refuse(check string, sentinel error, cmd *Command, reason string) *RefusalError {
	return &RefusalError{Check: check, From: cmd.From, To: cmd.To, Reason: reason, err: sentinel}
}

// OptionError reports an option given an invalid value.
type OptionError struct {
	Option string // "WithTimeout", ...
	Reason string
}

// Error reads like "handoff: WithTimeout: must be positive".
func (e *OptionError) Error() string { return "handoff: " + e.Option + ": " + e.Reason }

// Unwrap returns ErrInvalidOption.
func (e *OptionError) Unwrap() error { return ErrInvalidOption }
