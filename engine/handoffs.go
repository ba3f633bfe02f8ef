package engine

import (
	"context"
	"strings"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/internal/jsonvalue"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"go.uber.org/zap"
)

// An agent-to-agent hand-off belongs to its instance: its id is the
// idempotency key of the step its target runs (instance:step), its record is
// the instance's history (a handoff or final_notice entry, then the target's
// run), and the loop window reads the instance's own recent hand-offs, which
// Resume rebuilds from the history. Nothing about it is kept elsewhere.

// checkHandoff runs the hand-off validator on a dynamic hand-off or user
// selection (a rule's hand-off was checked when its workflow loaded).
func (i *instance) checkHandoff(r *run) error {
	reason := r.handoffReason
	if reason == "" || reason == handoff.ReasonRule {
		return nil
	}
	cmd := handoff.Command{
		From: r.from, To: r.agent, Reason: reason, Task: r.description,
		Payload: r.payload, Priority: r.priority,
	}
	return i.e.val.Validate(cmd, i.recent)
}

// noteHandoff remembers a hand-off's target for the loop window.
func (i *instance) noteHandoff(to string) {
	w := i.e.wf.Limits.HandoffWindow
	if w <= 0 {
		return
	}
	if i.recent == nil {
		i.recent = make([]string, 0, w)
	}
	if len(i.recent) >= w {
		copy(i.recent, i.recent[1:])
		i.recent = i.recent[:w-1]
	}
	i.recent = append(i.recent, to)
}

// recentFrom rebuilds the loop window from an instance's history.
func (i *instance) recentFrom(history []record.Entry) {
	for _, e := range history {
		if e.Kind == record.KindHandoff || e.Kind == record.KindFinalNotice {
			i.noteHandoff(e.To)
		}
	}
}

// handoffReason is the reason a run's hand-off is recorded with.
func handoffReason(r *run) string {
	if r.handoffReason == "" {
		return string(handoff.ReasonRule)
	}
	return string(r.handoffReason)
}

// Handoffs returns the instance's agent-to-agent hand-offs (final notices
// included), oldest first, as records read from its committed history: a
// hand-off is pending until its target's run ends, then accepted, or
// rejected when the target refused it; a final notice is accepted once its
// agent took it.
func (h *Instance) Handoffs(ctx context.Context) ([]handoff.Record, error) {
	hist, err := h.History(ctx)
	if err != nil {
		return nil, err
	}
	return HandoffsOf(hist), nil
}

// HandoffsOf reads the hand-off records of one instance's history.
func HandoffsOf(history []record.Entry) []handoff.Record {
	var out []handoff.Record
	byStep := map[int]int{} // step -> index in out, for the hand-offs still open
	for _, e := range history {
		switch e.Kind {
		case record.KindHandoff, record.KindFinalNotice:
			rec := handoff.Record{
				ID: e.HandoffID, From: e.From, To: e.To, Reason: handoff.Reason(e.Reason), Task: e.Detail,
				Priority: e.Priority, InstanceID: instanceOf(e.HandoffID), Step: e.Step,
				IdempotencyKey: e.HandoffID, Status: handoff.StatusPending, Timestamp: e.Time, Payload: e.Result,
			}
			if e.Kind == record.KindFinalNotice {
				rec.Reason = handoff.ReasonRule
			}
			if e.Error != "" {
				rec.Status, rec.Detail, rec.Settled = handoff.StatusFailed, e.Error, e.Time
			}
			byStep[e.Step] = len(out)
			out = append(out, rec)
		case record.KindAgentRun, record.KindNoticeTaken:
			k, ok := byStep[e.Step]
			if !ok || out[k].Status != handoff.StatusPending {
				continue
			}
			out[k].Status, out[k].Settled = handoff.StatusAccepted, e.Time
			if e.ErrorKind == "rejected" {
				out[k].Status, out[k].Detail = handoff.StatusRejected, strings.TrimPrefix(e.Error, rejectedPrefix)
			}
			delete(byStep, e.Step)
		}
	}
	return out
}

// instanceOf is the instance in a hand-off id (instance:step).
func instanceOf(id string) string {
	instance, _ := registry.SplitStepKey(id)
	return instance
}

// rejectedPrefix is how a rejection's error text begins (registry.Reject):
// the record's detail is the agent's reason alone.
const rejectedPrefix = "registry: hand-off rejected: "

// logHandoff logs an agent-to-agent hand-off at debug level, with the fields
// operators search hand-off logs by. The context's size is measured only
// when the line is written.
func (i *instance) logHandoff(r *run) {
	ce := i.e.log.Check(zap.DebugLevel, "handoff")
	if ce == nil {
		return
	}
	ce.Write(
		zap.String("category", "handoff"), zap.String("handoff_id", r.handoffID),
		zap.String("from_agent", r.from), zap.String("to_agent", r.agent),
		zap.String("workflow_id", i.e.wf.Name), zap.String("instance_id", i.id),
		zap.Int("step_number", r.step), zap.String("task_description", r.description),
		zap.Float64("context_size_kb", float64(jsonvalue.Size(i.context))/1024),
		zap.String("reason", handoffReason(r)), zap.String("explanation", r.reason),
		zap.Int("priority", r.priority), zap.Any("constraints", orEmpty(r.constraints)),
	)
}
