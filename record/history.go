package record

import (
	"time"

	"github.com/batonhq/baton/registry"
)

// Kind names an entry of an instance's history.
type Kind string

// History entry kinds.
const (
	KindStarted     Kind = "started"      // the instance was created (Result holds its input)
	KindDispatch    Kind = "dispatch"     // the engine dispatched a run itself (initial run, retry, re-entry)
	KindHandoff     Kind = "handoff"      // an agent-to-agent hand-off was sent
	KindFinalNotice Kind = "final_notice" // a hand-off into a terminal state (no run)
	KindNoticeTaken Kind = "notice_taken" // the agent of a final notice took it
	KindAgentRun    Kind = "agent_run"    // an agent finished a run (successfully or not)
	KindOutcome     Kind = "outcome"      // the outcome the rules are matched on, with the result and error they saw
	KindCondition   Kind = "condition"    // a condition that failed at run time (counted false)
	KindRuleFired   Kind = "rule_fired"   // the rule chosen, with its priority and condition
	KindTransition  Kind = "transition"   // the state machine moved
	KindRetry       Kind = "retry"        // a failed run will be retried after a backoff
	KindLimitHit    Kind = "limit_hit"    // a limit refused a transition
	KindLateReply   Kind = "late_reply"   // a reply for a run that had already ended
	KindReturned    Kind = "returned"     // a delegate's result went back to the agent that delegated
	KindSelected    Kind = "selected"     // a user handed the current step to another agent
	KindJoined      Kind = "joined"       // a parallel state's join completed (or timed out)
	KindWaiting     Kind = "waiting"      // a wait state began waiting for its signals (Detail lists them, Delay is its timeout)
	KindSignal      Kind = "signal"       // a signal the waiting instance accepted (Trigger is its name, Result its data)
	KindForeach     Kind = "foreach"      // a foreach state began its items (Result holds {items}; Error why there are none to run)
	KindChild       Kind = "child"        // a workflow state started its child (Detail is the child's id, Agent its workflow, Result its input, Delay the state's timeout)
	KindCompleted   Kind = "completed"    // a terminal state was entered
	KindFailed      Kind = "failed"       // the instance failed
	KindCanceled    Kind = "canceled"     // the instance was cancelled
)

// Entry is one line of an instance's history. Fields that do not apply to a
// kind are empty.
type Entry struct {
	Seq       int            `json:"seq"`
	Time      time.Time      `json:"time"`
	Kind      Kind           `json:"kind"`
	Step      int            `json:"step,omitempty"`
	Attempt   int            `json:"attempt,omitempty"`
	State     string         `json:"state,omitempty"`
	Agent     string         `json:"agent,omitempty"`
	Trigger   string         `json:"trigger,omitempty"`
	Rule      string         `json:"rule,omitempty"`
	Priority  int            `json:"priority,omitempty"`
	Condition string         `json:"condition,omitempty"`
	From      string         `json:"from,omitempty"`
	To        string         `json:"to,omitempty"`
	Next      string         `json:"next,omitempty"`
	HandoffID string         `json:"handoff_id,omitempty"`
	Result    map[string]any `json:"result,omitempty"` // the agent's result; for a handoff, its payload; for started, the input
	Error     string         `json:"error,omitempty"`
	Retryable bool           `json:"retryable,omitempty"`  // outcome: error.retryable as the rules saw it
	ErrorKind string         `json:"error_kind,omitempty"` // agent_run, retry, outcome: the failure's kind (error, timeout, heartbeat, panic, transport, invalid_result, rejected, or the agent's own such as rate_limited); failed: why (no_rule_matched, task, context, max_steps, max_visits, canceled, error)
	Limit     string         `json:"limit,omitempty"`      // limit_hit: the limit (max_steps, max_visits, max_tokens, max_cost or max_duration)
	Reason    string         `json:"reason,omitempty"`     // handoff: the hand-off's reason (rule, plan_step, user_request, ...)
	Detail    string         `json:"detail,omitempty"`
	Delay     time.Duration  `json:"delay,omitempty"`
	Index     int            `json:"index,omitempty"` // dispatch, resumed, agent_run, retry of a foreach item: the item's index, from 0
	Usage     registry.Usage `json:"usage,omitzero"`  // agent_run: what the run used, as its agent reported it; outcome of a workflow state: what the child instance used in all
}

// Status is an instance's life-cycle status.
type Status string

// Instance statuses.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCanceled  Status = "canceled"
)

// Finished reports whether the status is final.
func (s Status) Finished() bool { return s != StatusRunning }

// Snapshot is an instance's state after its last committed step.
type Snapshot struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Version  int    `json:"version"`
	Hash     string `json:"hash"`
	Status   Status `json:"status"`
	State    string `json:"state"`
	Outcome  string `json:"outcome,omitempty"`
	Error    string `json:"error,omitempty"`
	// CancelReason is the reason given with a cancel, for a cancelled
	// instance (whose Error is empty: it did not fail).
	CancelReason string         `json:"cancel_reason,omitempty"`
	Step         int            `json:"step"`
	Attempt      int            `json:"attempt"`
	Visits       map[string]int `json:"visits"`
	Input        map[string]any `json:"input"`
	Context      map[string]any `json:"context"`
	Created      time.Time      `json:"created"`
	Updated      time.Time      `json:"updated"`
	Commits      int            `json:"commits"`
	// Usage is what the instance's runs used: its totals, each agent's,
	// and the current visit's. A run's usage is in it exactly when the
	// run's agent_run entry is in the history.
	Usage registry.Ledger `json:"usage,omitzero"`
}
