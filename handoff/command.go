package handoff

// Reason says why a hand-off happens.
type Reason string

// The hand-off reasons. A rule's hand-off has reason ReasonRule; the others
// come from the dynamic hand-offs.
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

// CapabilityKey is the payload key a capability_match hand-off names the
// capability it needs with.
const CapabilityKey = "required_capability"

// Command asks for one hand-off: who hands what to whom, and why; it is what
// the Validator checks. The payload travels by reference: once a command is
// given to the validator, neither side may modify it.
type Command struct {
	// From is the agent handing off.
	From string
	// To is the target agent.
	To string
	// Reason says why.
	Reason Reason
	// Task is the task description: what the target should do. Required.
	Task string
	// Payload is extra data for the target; Payload[CapabilityKey] names
	// the capability a capability_match hand-off needs.
	Payload map[string]any
	// Priority is the rank, 1 (critical) to 10 and beyond (low); 0 means
	// the default.
	Priority int
}

// RequiredCapability returns the capability a capability_match command
// needs: a string Payload[CapabilityKey], else "".
func (c *Command) RequiredCapability() string {
	s, _ := c.Payload[CapabilityKey].(string)
	return s
}
