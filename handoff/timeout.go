package handoff

import (
	"maps"
	"time"

	"go.uber.org/zap"
)

// expire runs when a hand-off's acceptance time-out fires. If the hand-off
// is still pending it is marked timed out and escalated: a new hand-off
// with reason error_recovery goes to the escalation agent, carrying the
// original context, previous result and constraints. An escalation that
// times out is not escalated again, and without an escalation agent the
// sender is told with an ERROR message instead.
func (m *Manager) expire(id string, after time.Duration) {
	m.mu.Lock()
	e, ok := m.pending[id]
	if m.closed || !ok || e.timer == nil {
		m.mu.Unlock()
		return
	}
	cmd := e.cmd
	e.timer = nil
	m.settleLocked(e, StatusTimedOut, "not accepted within "+after.String())
	m.stats.TimedOut++
	rec := e.rec
	m.wg.Add(1)
	m.mu.Unlock()
	defer m.wg.Done()

	if ce := m.log.Check(zap.WarnLevel, "handoff timed out"); ce != nil {
		ce.Write(zap.String("category", "handoff"), zap.String("handoff_id", rec.ID),
			zap.String("from_agent", rec.From), zap.String("to_agent", rec.To),
			zap.String("workflow_id", rec.WorkflowID), zap.Int("step_number", rec.Step),
			zap.Duration("timeout", after), zap.String("escalation", m.escalation))
	}
	if m.escalation == "" || rec.Parent != "" {
		m.notifyTimeout(&rec)
		return
	}
	esc, err := m.dispatch(m.ctx, escalationCommand(cmd, &rec, m.escalation, after), rec.ID)
	if err != nil {
		if m.ctx.Err() != nil {
			return // closing: the escalation is abandoned with the manager
		}
		m.log.Error("handoff escalation failed", zap.String("category", "handoff"),
			zap.String("handoff_id", rec.ID), zap.String("escalation", m.escalation), zap.Error(err))
		m.notifyTimeout(&rec)
		return
	}
	m.mu.Lock()
	if p, ok := m.byID[rec.ID]; ok {
		p.rec.Escalation = esc.ID
	}
	m.mu.Unlock()
}

// notifyTimeout tells the sender of a hand-off that nobody took it.
func (m *Manager) notifyTimeout(rec *Record) {
	msg := errorMessage(rec, actionTimedOut, "hand-off to "+rec.To+" "+rec.Detail)
	if err := m.tr.Send(m.ctx, msg); err != nil && m.ctx.Err() == nil {
		m.log.Warn("handoff time-out notice not delivered", zap.String("category", "handoff"),
			zap.String("handoff_id", rec.ID), zap.String("to_agent", rec.From), zap.Error(err))
	}
}

// escalationCommand builds the error_recovery hand-off that replaces one
// that timed out. It travels at least at high priority, and its
// idempotency key is derived from the original's so that a bus that
// deduplicates by key still delivers it.
func escalationCommand(orig Command, rec *Record, to string, after time.Duration) Command {
	payload := maps.Clone(orig.Payload)
	if payload == nil {
		payload = make(map[string]any, 4)
	}
	payload["handoff_id"] = rec.ID
	payload["target"] = rec.To
	payload["timeout"] = after.String()
	payload["task_description"] = rec.Task
	key := orig.IdempotencyKey
	if key != "" {
		key += ":escalation"
	}
	return Command{
		From:           orig.From,
		To:             to,
		Reason:         ReasonErrorRecovery,
		Explanation:    "hand-off " + rec.ID + " to " + rec.To + " was " + rec.Detail,
		Task:           "recover timed-out hand-off to " + rec.To + ": " + rec.Task,
		Context:        orig.Context,
		PreviousResult: orig.PreviousResult,
		Constraints:    orig.Constraints,
		Payload:        payload,
		Priority:       min(orig.rank(), PriorityHigh),
		WorkflowID:     orig.WorkflowID,
		InstanceID:     orig.InstanceID,
		Step:           orig.Step,
		IdempotencyKey: key,
	}
}
