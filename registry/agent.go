package registry

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"
)

// Agent describes one agent of a workflow.
type Agent struct {
	// ID is the agent's unique id; it is also its mailbox address on the bus.
	ID string
	// Type groups agents for selective broadcast ("booking", "finance").
	Type string
	// Capabilities lists what the agent can do; capability-match hand-offs
	// are checked against it.
	Capabilities []string
	// System marks an agent that accepts dynamic hand-offs only from the
	// supervisor.
	System bool
	// Selectable marks an agent a user may select directly.
	Selectable bool
	// Queue is the agent's mailbox capacity; 0 means the bus default.
	Queue int
	// Concurrency is how many runs of the agent's Handler an engine runs at
	// once; 0 means the engine's default.
	Concurrency int
	// Expertise is the agent's declared expertise in [0, 1], a weight for
	// weighted-vote merges.
	Expertise float64
	// Accuracy is the agent's historical accuracy in [0, 1], a weight for
	// weighted-vote merges.
	Accuracy float64
	// Handler runs the agent's work in process; nil for external agents,
	// which read the bus and report through the engine's API.
	Handler Handler
}

// HasCapability reports whether the agent declares capability c.
func (a Agent) HasCapability(c string) bool { return slices.Contains(a.Capabilities, c) }

// External reports whether the agent has no Go handler.
func (a Agent) External() bool { return a.Handler == nil }

// validate checks every field and returns the first problem found.
func (a Agent) validate() error {
	switch {
	case a.ID == "":
		return &AgentError{ID: a.ID, Field: "id", Reason: "is required"}
	case strings.ContainsFunc(a.ID, isSpaceOrControl):
		return &AgentError{ID: a.ID, Field: "id", Reason: "must not contain spaces or control characters"}
	case a.ID == "*" || strings.HasPrefix(a.ID, "topic:"):
		return &AgentError{ID: a.ID, Field: "id", Reason: `must not be "*" or start with "topic:" (bus addresses)`}
	case a.Queue < 0:
		return &AgentError{ID: a.ID, Field: "queue", Reason: "must not be negative"}
	case a.Concurrency < 0:
		return &AgentError{ID: a.ID, Field: "concurrency", Reason: "must not be negative"}
	case !unit(a.Expertise):
		return &AgentError{ID: a.ID, Field: "expertise", Reason: "must be between 0 and 1"}
	case !unit(a.Accuracy):
		return &AgentError{ID: a.ID, Field: "accuracy", Reason: "must be between 0 and 1"}
	}
	for _, c := range a.Capabilities {
		if c == "" {
			return &AgentError{ID: a.ID, Field: "capabilities", Reason: "must not contain an empty name"}
		}
	}
	return nil
}

func unit(f float64) bool { return !math.IsNaN(f) && f >= 0 && f <= 1 }

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// Task is one piece of work as an agent sees it: a Go handler receives it
// as it is, and the wire codec (package wire) writes it into and reads it
// from the HANDOFF message an external agent takes from a transport.
type Task struct {
	// Agent is the agent the work is for.
	Agent string
	// WorkflowID and InstanceID name the workflow and the running instance;
	// Version is the workflow's version.
	WorkflowID, InstanceID string
	Version                int
	// State is the state the agent works in.
	State string
	// From is the agent that handed the work over ("" for the engine's own
	// dispatches: the initial run, retries and re-entries).
	From string
	// Reason is why the work was sent, in words: a rule's reason, a
	// delegating agent's explanation, or for the engine's own dispatches
	// start, retry, resume, on_limit or return_control.
	Reason string
	// Kind is the hand-off reason of an agent-to-agent hand-off (rule,
	// plan_step, capability_match, user_request, ...), rule for work a rule
	// sent with no agent handing over (leaving a wait, foreach or workflow
	// state); "" for the engine's own dispatches.
	Kind string
	// Description is the task description: what the agent should do.
	Description string
	// Notice marks a final notice: a hand-off into a terminal state, which
	// asks for no outcome.
	Notice bool
	// HandoffID identifies an agent-to-agent hand-off ("" for the engine's
	// own dispatches).
	HandoffID string
	// IdempotencyKey identifies the step ("instanceID:step"); an agent that
	// sees the same key twice is running the same step again.
	IdempotencyKey string
	// Step is the step this run is, from 1.
	Step int
	// Attempt counts runs of this agent in the current visit, from 1.
	Attempt int
	// Priority is the rank the work travels at (1 critical ... 10 low).
	Priority int
	// Input is the instance's start input.
	Input map[string]any
	// Context is the instance context after the last merge.
	Context map[string]any
	// PreviousResult is the result of the agent that handed the work over.
	PreviousResult map[string]any
	// Constraints are the limits the agent must respect.
	Constraints map[string]any
	// Payload is the data a dynamic hand-off carries for its target (nil
	// for rule hand-offs).
	Payload map[string]any
	// ReturnControl says the agent's result goes back to the agent that
	// delegated to it.
	ReturnControl bool
	// Item and Index are, for a run over one item of a list, the item and
	// its index from 0; HasItem tells an item run from others.
	Item    any
	Index   int
	HasItem bool
	// Deadline is when the run times out (zero: no timeout).
	Deadline time.Time
	// Heartbeat is how often a long run should report that it is alive
	// (zero: no heartbeats asked).
	Heartbeat time.Duration
	// Traceparent is the W3C trace context the run belongs to.
	Traceparent string
}

// Outcome is what an agent reports at the end of a run.
type Outcome struct {
	// Trigger names the outcome the workflow's rules match on.
	Trigger string
	// Result is the agent's result data.
	Result map[string]any
	// Handoff, when set, asks to delegate the current step to another agent.
	Handoff *Delegation
	// Usage is what the run used (tokens, cost, model); it counts even
	// when the handler also returns an error. Negative or non-finite usage
	// fails the run with kind invalid_result.
	Usage Usage
}

// Delegation is a dynamic hand-off requested by an agent in its Outcome.
type Delegation struct {
	// To is the target agent's id.
	To string
	// Reason is one of the hand-off reasons (capability_match,
	// clarification, ...).
	Reason string
	// Explanation says in words why the agent delegates.
	Explanation string
	// Task is the task description for the target.
	Task string
	// Payload is the data the target needs.
	Payload map[string]any
	// ReturnControl asks for the target's result to come back to the
	// delegating agent instead of being matched against the rules.
	ReturnControl bool
}

// Handler runs an agent's work for one task.
type Handler interface {
	// Handle does the task and reports its outcome, or an error: Reject to
	// refuse the hand-off, Permanent for a failure retrying cannot fix, any
	// other error for a retryable failure.
	Handle(ctx context.Context, t *Task) (Outcome, error)
}

// HandlerFunc adapts a function to the Handler interface.
type HandlerFunc func(ctx context.Context, t *Task) (Outcome, error)

// Handle calls f(ctx, t).
func (f HandlerFunc) Handle(ctx context.Context, t *Task) (Outcome, error) { return f(ctx, t) }
