package handoff

import (
	"strconv"
	"time"

	"github.com/batonhq/baton/registry"
)

// Reason says why a hand-off happens.
type Reason string

// The hand-off reasons. A rule's hand-off has reason ReasonRule; the others
// come from PRD-040's dynamic hand-offs.
const (
	// ReasonRule: a workflow rule fired (checked when the workflow loaded).
	ReasonRule Reason = "rule"
	// ReasonPlanStep: the supervisor's plan names the next agent.
	ReasonPlanStep Reason = "plan_step"
	// ReasonCapabilityMatch: the agent lacks a capability the target has.
	ReasonCapabilityMatch Reason = "capability_match"
	// ReasonUserRequest: a user selected another agent.
	ReasonUserRequest Reason = "user_request"
	// ReasonErrorRecovery: the system escalates a failure.
	ReasonErrorRecovery Reason = "error_recovery"
	// ReasonClarification: the agent needs more information.
	ReasonClarification Reason = "clarification"
)

// Valid reports whether r is one of the six reasons.
func (r Reason) Valid() bool {
	switch r {
	case ReasonRule, ReasonPlanStep, ReasonCapabilityMatch, ReasonUserRequest, ReasonErrorRecovery, ReasonClarification:
		return true
	}
	return false
}

// Dynamic reports whether a hand-off with this reason is decided at run time
// and so gets every run-time check (all reasons but ReasonRule).
func (r Reason) Dynamic() bool { return r != ReasonRule }

// Priority ranks on the seeds' scale: lower is more urgent. Zero in a
// Command means PriorityNormal.
const (
	PriorityCritical = 1  // also "urgent"
	PriorityHigh     = 2  //
	PriorityNormal   = 5  // also "medium"
	PriorityLow      = 10 //
)

// CapabilityKey is the payload key a capability_match command may use to
// name the capability it needs when Command.Capability is empty (PRD-040's
// payload.requiredCapability).
const CapabilityKey = "required_capability"

// Command asks for one hand-off: who hands what to whom, and why. The maps
// travel by reference inside the bus message: once a command is given to
// the Manager, neither side may modify them.
type Command struct {
	// From is the agent handing off.
	From string
	// To is the target agent.
	To string
	// Reason says why.
	Reason Reason
	// Explanation says why in words, for people reading the history.
	Explanation string
	// Task is the task description: what the target should do. Required.
	Task string
	// Context is the instance context sent with the hand-off.
	Context map[string]any
	// PreviousResult is the handing-off agent's result.
	PreviousResult map[string]any
	// Constraints are limits the target must respect.
	Constraints map[string]any
	// Payload is extra data for the target (PRD-040's payload).
	Payload map[string]any
	// Capability is the capability a capability_match hand-off needs; when
	// empty, Payload[CapabilityKey] is used.
	Capability string
	// ReturnControl asks for the target's result to come back to From.
	ReturnControl bool
	// Priority is the rank, 1 (critical) to 10 and beyond (low); 0 means
	// PriorityNormal.
	Priority int
	// WorkflowID and InstanceID say which instance the hand-off belongs to.
	WorkflowID, InstanceID string
	// Step is the step the target will run.
	Step int
	// IdempotencyKey identifies the step ("instanceID:step"); it travels in
	// the message metadata so that a redelivery can be recognised.
	IdempotencyKey string
	// Timeout overrides the manager's acceptance timeout; 0 keeps it.
	Timeout time.Duration
	// RequiresAck sends the HANDOFF message with at-least-once delivery: it
	// stays in flight until its receiver acks it on the bus, and is
	// redelivered if it does not in time.
	RequiresAck bool
}

// CommandOption sets an optional field of a Command built by NewCommand.
type CommandOption func(*Command)

// WithTask sets the task description.
func WithTask(task string) CommandOption { return func(c *Command) { c.Task = task } }

// WithPayload sets the payload.
func WithPayload(p map[string]any) CommandOption { return func(c *Command) { c.Payload = p } }

// WithContextData sets the context sent with the hand-off.
func WithContextData(ctx map[string]any) CommandOption {
	return func(c *Command) { c.Context = ctx }
}

// WithPreviousResult sets the handing-off agent's result.
func WithPreviousResult(r map[string]any) CommandOption {
	return func(c *Command) { c.PreviousResult = r }
}

// WithConstraints sets the constraints.
func WithConstraints(k map[string]any) CommandOption {
	return func(c *Command) { c.Constraints = k }
}

// WithCapability names the capability a capability_match hand-off needs.
func WithCapability(name string) CommandOption { return func(c *Command) { c.Capability = name } }

// WithReturnControl asks for control to come back after the target is done.
func WithReturnControl() CommandOption { return func(c *Command) { c.ReturnControl = true } }

// WithPriority sets the priority rank (1 critical ... 10 low).
func WithPriority(rank int) CommandOption { return func(c *Command) { c.Priority = rank } }

// WithInstance places the hand-off in a workflow instance at a step and sets
// its idempotency key to "instanceID:step".
func WithInstance(workflowID, instanceID string, step int) CommandOption {
	return func(c *Command) {
		c.WorkflowID, c.InstanceID, c.Step = workflowID, instanceID, step
		c.IdempotencyKey = instanceID + ":" + strconv.Itoa(step)
	}
}

// WithIdempotencyKey overrides the idempotency key.
func WithIdempotencyKey(key string) CommandOption {
	return func(c *Command) { c.IdempotencyKey = key }
}

// WithCommandTimeout overrides the manager's acceptance timeout for this
// command.
func WithCommandTimeout(d time.Duration) CommandOption {
	return func(c *Command) { c.Timeout = d }
}

// NewCommand builds a command from the handing-off agent, the target, the
// reason and an explanation, plus options. It checks the fields a command
// cannot do without (from, to, a known reason) and the ranges of the
// optional ones (priority, step, timeout); whether the hand-off is allowed
// is the Validator's business.
func NewCommand(from, to string, reason Reason, explanation string, opts ...CommandOption) (Command, error) {
	c := Command{From: from, To: to, Reason: reason, Explanation: explanation}
	for _, o := range opts {
		o(&c)
	}
	return c, c.check()
}

func (c *Command) check() error {
	switch {
	case c.From == "":
		return &CommandError{Field: "from", Reason: "is required"}
	case c.To == "":
		return &CommandError{Field: "to", Reason: "is required"}
	case c.Reason == "":
		return &CommandError{Field: "reason", Reason: "is required"}
	case !c.Reason.Valid():
		return &CommandError{Field: "reason", Reason: "is unknown: " + strconv.Quote(string(c.Reason))}
	case c.Priority < 0:
		return &CommandError{Field: "priority", Reason: "must not be negative"}
	case c.Step < 0:
		return &CommandError{Field: "step", Reason: "must not be negative"}
	case c.Timeout < 0:
		return &CommandError{Field: "timeout", Reason: "must not be negative"}
	}
	return nil
}

// RequiredCapability returns the capability a capability_match command
// needs: Capability, else a string Payload[CapabilityKey], else "".
func (c *Command) RequiredCapability() string {
	if c.Capability != "" {
		return c.Capability
	}
	s, _ := c.Payload[CapabilityKey].(string)
	return s
}

// rank returns the priority rank with the default applied.
func (c *Command) rank() int {
	if c.Priority == 0 {
		return PriorityNormal
	}
	return c.Priority
}

// ToRecord converts the command into the record of a hand-off with the
// given id made at the given time (stored in UTC). The record's Status is
// left empty: the Manager sets it when it dispatches the hand-off.
func (c Command) ToRecord(id string, at time.Time) Record {
	return Record{
		ID:             id,
		From:           c.From,
		To:             c.To,
		Reason:         c.Reason,
		Explanation:    c.Explanation,
		Task:           c.Task,
		Payload:        c.Payload,
		Constraints:    c.Constraints,
		ReturnControl:  c.ReturnControl,
		Priority:       c.rank(),
		WorkflowID:     c.WorkflowID,
		InstanceID:     c.InstanceID,
		Step:           c.Step,
		IdempotencyKey: c.IdempotencyKey,
		ContextBytes:   JSONSize(c.Context),
		Timestamp:      at.UTC(),
	}
}

// FromDelegation turns an agent's Delegation (the hand-off request in its
// Outcome) into a command from that agent.
func FromDelegation(from string, d registry.Delegation) Command {
	return Command{
		From:          from,
		To:            d.To,
		Reason:        Reason(d.Reason),
		Explanation:   d.Explanation,
		Task:          d.Task,
		Payload:       d.Payload,
		ReturnControl: d.ReturnControl,
	}
}

// IsCommand reports whether v is a hand-off command object: a Command or
// *Command with a target, a registry.Delegation or *registry.Delegation with
// a target, or a map with "type": "handoff" and a non-empty string "to" (the
// shape an agent written in another language sends, PRD-040's
// isHandoffCommand).
func IsCommand(v any) bool {
	switch x := v.(type) {
	case Command:
		return x.To != ""
	case *Command:
		return x != nil && x.To != ""
	case registry.Delegation:
		return x.To != ""
	case *registry.Delegation:
		return x != nil && x.To != ""
	case map[string]any:
		typ, _ := x["type"].(string)
		to, _ := x["to"].(string)
		return typ == "handoff" && to != ""
	}
	return false
}
