package engine

import (
	"time"

	"github.com/batonhq/baton/registry"
)

// EventType names an event delivered to observers.
type EventType string

// Event types. Every event carries the instance, workflow, version, step,
// state, agent and time; the comments say which other fields it sets.
const (
	// EventInstanceStarted: an instance was started (not a resumed one).
	EventInstanceStarted EventType = "instance_started"
	// EventRunStarted: a run's work was sent to its agent (From, Rule,
	// Attempt; Reason "resume" for work sent again after a restart).
	EventRunStarted EventType = "run_started"
	// EventAgentReported: a run ended: the agent's report (Trigger, or Err
	// and Kind for a failed run), or the engine's verdict when no report
	// came in time (Kind timeout or heartbeat) or the work could not be
	// delivered (Kind transport, rejected). Duration is the run's time
	// since its work was sent; To the agent it asked to hand off to; Usage
	// what the run used.
	EventAgentReported EventType = "agent_reported"
	// EventAgentProgress: a run under way sent progress (Progress; Attempt).
	// It is told at once and never recorded in the history.
	EventAgentProgress EventType = "agent_progress"
	// EventRetryScheduled: a failed run will be tried again after Delay
	// (Attempt is the attempt to come; Kind and Err the failure's).
	EventRetryScheduled EventType = "retry_scheduled"
	// EventRuleFired: a rule matched an outcome (Rule, Trigger, Condition;
	// To is the state it enters).
	EventRuleFired EventType = "rule_fired"
	// EventConditionError: a rule's condition failed at run time and
	// counted as false (Rule, Condition, Err).
	EventConditionError EventType = "condition_error"
	// EventLimitHit: a limit stopped a transition (Limit, Count, Max, and
	// Total and Budget for a budget; To is the state whose limit it is;
	// Err the limit error).
	EventLimitHit EventType = "limit_hit"
	// EventStateChanged: the instance entered a new state or re-entered
	// one (From, To; Rule is the rule's id, or the limit event).
	EventStateChanged EventType = "state_changed"
	// EventAgentHandoff: an agent-to-agent hand-off or a final notice was
	// sent (From, To are agents; Rule, Reason).
	EventAgentHandoff EventType = "agent_handoff"
	// EventAgentChanged: the agent responsible for the instance changed
	// (From, To are agents).
	EventAgentChanged EventType = "agent_changed"
	// EventSignalReceived: a waiting instance accepted a signal (Signal).
	EventSignalReceived EventType = "signal_received"
	// EventDeadLettered: work was given up on and kept as a dead letter
	// (Reason, MessageID, From, Attempt, Err); Agent is its addressee.
	EventDeadLettered EventType = "dead_lettered"
	// EventCompleted: a terminal state was entered (Outcome; Duration
	// since the instance was created).
	EventCompleted EventType = "completed"
	// EventFailed: the instance failed (Err, Kind; Duration).
	EventFailed EventType = "failed"
	// EventCancelled: the instance was cancelled (Err is ErrCanceled
	// wrapped; Duration).
	EventCancelled EventType = "cancelled"
)

// Event is a notification for observers. Events of one instance arrive in
// order; observers are called synchronously on the engine's goroutines
// (several at once for different instances) and must return quickly and
// must not call back into the engine. Events are built only when the
// engine has observers.
type Event struct {
	Type       EventType
	InstanceID string
	Workflow   string
	Version    int
	Step       int
	State      string // the instance's state; for state_changed, the state entered
	Agent      string // the agent the event is about (the run's, the state's)
	Time       time.Time
	From, To   string // states for state_changed, agents for agent_handoff and agent_changed
	Rule       string
	Trigger    string        // agent_reported, rule_fired, condition_error
	Condition  string        // rule_fired, condition_error: the condition's source
	Attempt    int           // run_started, agent_reported, retry_scheduled, dead_lettered
	Kind       string        // the failure's kind: agent_reported, retry_scheduled, failed
	Delay      time.Duration // retry_scheduled
	Duration   time.Duration // agent_reported: the run's; completed, failed, cancelled: the instance's
	Limit      string        // limit_hit: max_steps, max_visits, max_tokens, max_cost or max_duration
	Count, Max int           // limit_hit
	// Total and Budget are, for a limit_hit of a budget, the total reached
	// and the budget (tokens, cost, or seconds for max_duration).
	Total, Budget float64
	Signal        string // signal_received
	Outcome       string // completed: the terminal state
	Reason        string // agent_handoff, run_started; dead_lettered: why
	MessageID     string // dead_lettered
	Err           error  // agent_reported, retry_scheduled, condition_error, limit_hit, dead_lettered, failed, cancelled
	// Usage is what the run used, as its agent reported it (agent_reported).
	Usage registry.Usage
	// Progress is what the run said while it worked (agent_progress).
	Progress *registry.Progress
}

// Observer receives the engine's events.
type Observer func(Event)
