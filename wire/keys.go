package wire

// The actions of a HANDOFF message's content.
const (
	ActionRun    = "run"    // work to do: report how it ended
	ActionNotice = "notice" // a final notice: take it, nothing to report
)

// Content keys of a HANDOFF message.
const (
	KeyAction         = "action"
	KeyTask           = "task_description"
	KeyInput          = "input"
	KeyContext        = "context"
	KeyPreviousResult = "previous_result"
	KeyConstraints    = "constraints"
	KeyReason         = "reason"
	KeyExplanation    = "explanation"
	KeyReturnControl  = "return_control"
	KeyPayload        = "payload"
	KeyItem           = "item"
	KeyIndex          = "index"
)

// Metadata keys of a HANDOFF message.
const (
	KeyWorkflow       = "workflow"
	KeyVersion        = "version"
	KeyInstanceID     = "instance_id"
	KeyStep           = "step"
	KeyAttempt        = "attempt"
	KeyState          = "state"
	KeyHandoffID      = "handoff_id"
	KeyIdempotencyKey = "idempotency_key"
	KeyDeadline       = "deadline"
	KeyHeartbeat      = "heartbeat"
	KeyTraceparent    = "traceparent"
	// KeyAckWait is set by a transport with acks (NATS): seconds the agent
	// may hold the work before it is delivered again, unless it sends
	// in-progress acks.
	KeyAckWait = "ack_wait"
)

// Engine is the from_agent of the work the engine dispatches itself (the
// initial run, retries, re-entries).
const Engine = "engine"

// The codes of a refused report.
const (
	CodeStale           = "stale"            // the step is over; the report changed nothing
	CodeInvalid         = "invalid"          // the report is not one the run can end with
	CodeUnknownInstance = "unknown_instance" // no instance has that id
)

// ReasonRule is content.reason of work a rule sent (handoff.ReasonRule):
// a hand-off, or work sent by a rule leaving a wait, foreach or workflow
// state; content.explanation then holds the rule's reason in words.
const ReasonRule = "rule"
