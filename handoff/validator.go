package handoff

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/batonhq/baton/registry"
)

// Validator applies the hand-off checks against a registry. It is
// stateless apart from its settings and safe for concurrent use.
type Validator struct {
	reg        *registry.Registry
	window     int
	repeats    int
	supervisor string
}

// NewValidator returns a validator over reg, with the loop window that
// WithLoopWindow sets.
func NewValidator(reg *registry.Registry, opts ...Option) (*Validator, error) {
	if reg == nil {
		return nil, &OptionError{Option: "NewValidator", Reason: "registry is nil"}
	}
	c := newConfig(opts)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return newValidator(reg, c), nil
}

func newValidator(reg *registry.Registry, c *config) *Validator {
	return &Validator{reg: reg, window: c.window, repeats: c.repeats, supervisor: DefaultSupervisor}
}

// Validate checks cmd given the targets of the instance's recent hand-offs
// (oldest first: the loop window, as the engine keeps it) and returns nil or a *RefusalError naming the
// check that refused. The checks run in this order:
//
//  1. target exists (with a "did you mean" on a typo);
//  2. for a user_request, the target is selectable;
//  3. the target is not the agent handing off;
//  4. a system target is reached only from the supervisor;
//  5. the target received fewer than repeats of the last window hand-offs;
//  6. for a capability_match naming a capability, the target has it;
//  7. a task description is given;
//  8. the priority is on the scale (0 for the default, else 1 or more);
//  9. the reason is known.
//
// A rule's hand-off (reason "rule") was checked when its workflow loaded, so
// only checks 1, 7 and 8 run for it.
func (v *Validator) Validate(cmd Command, recent []string) error {
	return v.check(&cmd, func(to string) int {
		n := 0
		for i := len(recent) - 1; i >= 0 && i >= len(recent)-v.window; i-- {
			if recent[i] == to {
				n++
			}
		}
		return n
	})
}

// check runs the checks; recentTo counts the hand-offs to an agent among the
// last window ones.
func (v *Validator) check(cmd *Command, recentTo func(to string) int) error {
	target, err := v.reg.Get(cmd.To)
	if err != nil {
		r := refuse(CheckTarget, ErrUnknownTarget, cmd, "target agent "+strconv.Quote(cmd.To)+" not found")
		var ue *registry.UnknownAgentError
		if errors.As(err, &ue) && ue.Suggestion != "" {
			r.Reason += " (did you mean " + strconv.Quote(ue.Suggestion) + "?)"
		}
		r.cause = err
		return r
	}
	dynamic := cmd.Reason.Dynamic()
	if dynamic {
		if err := v.checkDynamic(cmd, &target, recentTo); err != nil {
			return err
		}
	}
	if cmd.Task == "" {
		return refuse(CheckTask, ErrTaskRequired, cmd, "a task description is required")
	}
	if cmd.Priority < 0 {
		return refuse(CheckPriority, ErrInvalidPriority, cmd,
			"priority "+strconv.Itoa(cmd.Priority)+" is not a rank (1 critical, 2 high, 5 normal, 10 low)")
	}
	if dynamic && !cmd.Reason.Valid() {
		return refuse(CheckReason, ErrInvalidReason, cmd, "unknown reason "+strconv.Quote(string(cmd.Reason)))
	}
	return nil
}

func (v *Validator) checkDynamic(cmd *Command, target *registry.Agent, recentTo func(string) int) error {
	if cmd.Reason == ReasonUserRequest && !target.Selectable {
		return refuse(CheckSelectable, ErrNotSelectable, cmd, "agent "+strconv.Quote(cmd.To)+" is not user-selectable")
	}
	if cmd.To == cmd.From {
		return refuse(CheckSelf, ErrSelfHandoff, cmd, "cannot hand off to self")
	}
	if target.System && cmd.From != v.supervisor {
		return refuse(CheckSystem, ErrSystemAgent, cmd,
			fmt.Sprintf("cannot hand off to system agent %q (only %q may)", cmd.To, v.supervisor))
	}
	if n := recentTo(cmd.To); n >= v.repeats {
		return refuse(CheckLoop, ErrLoopDetected, cmd,
			fmt.Sprintf("potential hand-off loop: %q already received %d of the last %d hand-offs (limit %d)", cmd.To, n, v.window, v.repeats))
	}
	if cmd.Reason == ReasonCapabilityMatch {
		if c := cmd.RequiredCapability(); c != "" && !target.HasCapability(c) {
			return refuse(CheckCapability, ErrCapabilityMismatch, cmd,
				fmt.Sprintf("target agent %q does not have capability %q", cmd.To, c))
		}
	}
	return nil
}
