package engine

import "time"

// EventType names an event delivered to observers.
type EventType string

// Event types.
const (
	EventStateChanged   EventType = "state_changed"   // the instance entered a new state (or re-entered one)
	EventAgentHandoff   EventType = "agent_handoff"   // an agent-to-agent hand-off (or final notice) was sent
	EventAgentChanged   EventType = "agent_changed"   // the agent responsible for the instance changed
	EventSignalReceived EventType = "signal_received" // a waiting instance accepted a signal
	EventConditionError EventType = "condition_error" // a rule's condition failed at run time and counted as false
	EventCompleted      EventType = "completed"       // a terminal state was entered
	EventFailed         EventType = "failed"          // the instance failed or was cancelled
)

// Event is a notification for observers. Events of one instance arrive in
// order; observers are called synchronously on the engine's goroutine and
// must return quickly and must not call back into the engine.
type Event struct {
	Type       EventType
	InstanceID string
	Workflow   string
	Step       int
	Time       time.Time
	From, To   string // states for state_changed, agents for agent_handoff and agent_changed
	Rule       string
	Signal     string // the signal's name, for signal_received
	Outcome    string // the terminal state, for completed
	Err        error  // for failed; the condition's error, for condition_error
}

// Observer receives the engine's events.
type Observer func(Event)
