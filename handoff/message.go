package handoff

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/registry"
)

// The content actions of the messages the manager sends.
const (
	// ActionHandoff is content.action of a HANDOFF message.
	ActionHandoff = "handoff"
	// actionRejected is content.action of the ERROR telling a sender that
	// its hand-off was rejected.
	actionRejected = "handoff_rejected"
	// actionTimedOut is content.action of the ERROR telling a sender that
	// nobody took its hand-off (when no escalation agent is configured).
	actionTimedOut = "handoff_timed_out"
)

// Keys of a HANDOFF message. Content holds what the target needs to do the
// work; metadata holds the identifiers that place the hand-off.
const (
	KeyTaskDescription = "task_description" // content, string
	KeyContext         = "context"          // content, object
	KeyPreviousResult  = "previous_result"  // content, object
	KeyConstraints     = "constraints"      // content, object
	KeyReason          = "reason"           // content, string
	KeyExplanation     = "explanation"      // content, string
	KeyReturnControl   = "return_control"   // content, bool, only when true
	KeyPayload         = "payload"          // content, object, only when set
	KeyHandoffID       = "handoff_id"       // metadata, string
	KeyWorkflowID      = "workflow_id"      // metadata, string
	KeyInstanceID      = "instance_id"      // metadata, string
	KeyStep            = "step"             // metadata, integer
	KeyIdempotencyKey  = "idempotency_key"  // metadata, string
)

// handoffMessage builds the HANDOFF message of a recorded hand-off. The
// command's maps are shared, not copied; context, previous_result and
// constraints are always present (empty objects when the command has none),
// as RT-011's protocol requires.
func handoffMessage(rec *Record, cmd *Command) *bus.Message {
	// Eight keys fit a map's first group; return_control and payload are
	// added only when set, so a typical hand-off costs one small map.
	n := 8
	if cmd.ReturnControl {
		n++
	}
	if cmd.Payload != nil {
		n++
	}
	content := make(map[string]any, n)
	content["action"] = ActionHandoff
	content[KeyTaskDescription] = cmd.Task
	content[KeyContext] = orEmpty(cmd.Context)
	content[KeyPreviousResult] = orEmpty(cmd.PreviousResult)
	content[KeyConstraints] = orEmpty(cmd.Constraints)
	content[KeyReason] = reasonValue(cmd.Reason)
	content[KeyExplanation] = cmd.Explanation
	if cmd.ReturnControl {
		content[KeyReturnControl] = true
	}
	if cmd.Payload != nil {
		content[KeyPayload] = cmd.Payload
	}
	return &bus.Message{
		MessageID:   rec.MessageID,
		Type:        bus.MessageHandoff,
		From:        rec.From,
		To:          rec.To,
		Priority:    bus.PriorityFromRank(rec.Priority),
		Content:     content,
		Metadata:    metadata(rec),
		RequiresAck: cmd.RequiresAck,
	}
}

// errorMessage builds the ERROR message that tells a hand-off's sender it
// failed, threaded to the HANDOFF message by correlation_id and in_reply_to.
func errorMessage(rec *Record, action, text string) *bus.Message {
	return &bus.Message{
		Type:          bus.MessageError,
		From:          rec.To,
		To:            rec.From,
		CorrelationID: rec.MessageID,
		InReplyTo:     rec.MessageID,
		Priority:      bus.PriorityFromRank(rec.Priority),
		Content: map[string]any{
			"action":           action,
			"error":            text,
			KeyHandoffID:       rec.ID,
			KeyTaskDescription: rec.Task,
		},
		Metadata: metadata(rec),
	}
}

func metadata(rec *Record) map[string]any {
	return map[string]any{
		KeyHandoffID:      rec.ID,
		KeyWorkflowID:     rec.WorkflowID,
		KeyInstanceID:     rec.InstanceID,
		KeyStep:           rec.Step,
		KeyIdempotencyKey: rec.IdempotencyKey,
	}
}

// reasonValue boxes a reason without allocating for the six known ones.
func reasonValue(r Reason) any {
	switch r {
	case ReasonRule:
		return string(ReasonRule)
	case ReasonPlanStep:
		return string(ReasonPlanStep)
	case ReasonCapabilityMatch:
		return string(ReasonCapabilityMatch)
	case ReasonUserRequest:
		return string(ReasonUserRequest)
	case ReasonErrorRecovery:
		return string(ReasonErrorRecovery)
	case ReasonClarification:
		return string(ReasonClarification)
	}
	return string(r)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Delivery is a HANDOFF message read back by its target.
type Delivery struct {
	// HandoffID is the id to pass to Manager.Accept or Manager.Reject.
	HandoffID string
	// MessageID is the bus message's id.
	MessageID string
	// Explanation is the hand-off's explanation.
	Explanation string
	// Payload is the command's payload, nil when it had none.
	Payload map[string]any
	// ReturnControl is the command's.
	ReturnControl bool
	// Priority is the level the message travelled at.
	Priority bus.Priority
	// Task is the hand-off as the target's handler sees it (State, Attempt
	// and Input are left for the engine to fill).
	Task registry.Task
}

// Unpack reads a HANDOFF message, as sent in process or after a JSON round
// trip, into a Delivery. A message that is not a well-formed hand-off gives
// a *MessageError naming the field.
func Unpack(m *bus.Message) (Delivery, error) {
	if m == nil {
		return Delivery{}, &MessageError{Field: "message", Reason: "is nil"}
	}
	if m.Type != bus.MessageHandoff {
		return Delivery{}, &MessageError{Field: "message_type", Reason: "is " + strconv.Quote(string(m.Type)) + ", want HANDOFF"}
	}
	if m.Action() != ActionHandoff {
		return Delivery{}, &MessageError{Field: "content.action", Reason: "is " + strconv.Quote(m.Action()) + ", want \"handoff\""}
	}
	r := reader{content: m.Content, metadata: m.Metadata}
	d := Delivery{
		MessageID:     m.MessageID,
		HandoffID:     r.str(true, KeyHandoffID),
		Explanation:   r.str(false, KeyExplanation),
		Payload:       r.obj(false, KeyPayload),
		ReturnControl: r.boolean(KeyReturnControl),
		Priority:      m.Priority,
		Task: registry.Task{
			WorkflowID:     r.str(true, KeyWorkflowID),
			InstanceID:     r.str(true, KeyInstanceID),
			From:           m.From,
			Reason:         r.str(false, KeyReason),
			Description:    r.str(false, KeyTaskDescription),
			IdempotencyKey: r.str(true, KeyIdempotencyKey),
			Step:           r.integer(KeyStep),
			Context:        r.obj(false, KeyContext),
			PreviousResult: r.obj(false, KeyPreviousResult),
			Constraints:    r.obj(false, KeyConstraints),
		},
	}
	if r.err == nil && d.HandoffID == "" {
		r.err = &MessageError{Field: "metadata." + KeyHandoffID, Reason: "is required"}
	}
	if r.err == nil && d.Task.Description == "" {
		r.err = &MessageError{Field: "content." + KeyTaskDescription, Reason: "is required"}
	}
	if r.err != nil {
		return Delivery{}, r.err
	}
	return d, nil
}

// reader reads typed fields, keeping the first problem.
type reader struct {
	content, metadata map[string]any
	err               error
}

func (r *reader) get(meta bool, key string) any {
	if meta {
		return r.metadata[key]
	}
	return r.content[key]
}

// fail keeps the first problem; the field name is only built here, so that
// reading a well-formed message does not allocate.
func (r *reader) fail(meta bool, key, reason string) {
	if r.err != nil {
		return
	}
	field := "content." + key
	if meta {
		field = "metadata." + key
	}
	r.err = &MessageError{Field: field, Reason: reason}
}

func (r *reader) str(meta bool, key string) string {
	switch s := r.get(meta, key).(type) {
	case nil:
		return ""
	case string:
		return s
	}
	r.fail(meta, key, "must be a string")
	return ""
}

func (r *reader) obj(meta bool, key string) map[string]any {
	switch o := r.get(meta, key).(type) {
	case nil:
		return nil
	case map[string]any:
		return o
	}
	r.fail(meta, key, "must be an object")
	return nil
}

func (r *reader) boolean(key string) bool {
	switch b := r.content[key].(type) {
	case nil:
		return false
	case bool:
		return b
	}
	r.fail(false, key, "must be a boolean")
	return false
}

func (r *reader) integer(key string) int {
	switch n := r.metadata[key].(type) {
	case nil:
		return 0
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		if n == math.Trunc(n) && n >= 0 && n <= math.MaxInt32 {
			return int(n)
		}
	case json.Number:
		if i, err := strconv.Atoi(string(n)); err == nil {
			return i
		}
	}
	r.fail(true, key, "must be a non-negative integer")
	return 0
}
