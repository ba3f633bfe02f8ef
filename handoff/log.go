package handoff

import (
	"errors"

	"go.uber.org/zap"
)

// logHandoff writes RF-009 scenario 16's log entry for a hand-off that was
// sent: category, from and to agents, workflow id, step number, task
// description, context size in KB, plus the ids, reason, priority and
// constraints (scenario 19: constraints are logged with the hand-off).
func (m *Manager) logHandoff(rec *Record, cmd *Command) {
	ce := m.log.Check(zap.InfoLevel, "handoff")
	if ce == nil {
		return
	}
	ce.Write(
		zap.String("category", "handoff"),
		zap.String("handoff_id", rec.ID),
		zap.String("from_agent", rec.From),
		zap.String("to_agent", rec.To),
		zap.String("workflow_id", rec.WorkflowID),
		zap.String("instance_id", rec.InstanceID),
		zap.Int("step_number", rec.Step),
		zap.String("task_description", rec.Task),
		zap.Float64("context_size_kb", rec.ContextKB()),
		zap.String("reason", string(rec.Reason)),
		zap.String("explanation", rec.Explanation),
		zap.Int("priority", rec.Priority),
		zap.Any("constraints", cmd.Constraints),
		zap.String("parent", rec.Parent),
	)
}

// logRefusal writes a validator's refusal.
func (m *Manager) logRefusal(cmd *Command, err error) {
	ce := m.log.Check(zap.WarnLevel, "handoff refused")
	if ce == nil {
		return
	}
	check := ""
	var r *RefusalError
	if errors.As(err, &r) {
		check = r.Check
	}
	ce.Write(
		zap.String("category", "handoff"),
		zap.String("from_agent", cmd.From),
		zap.String("to_agent", cmd.To),
		zap.String("workflow_id", cmd.WorkflowID),
		zap.Int("step_number", cmd.Step),
		zap.String("check", check),
		zap.Error(err),
	)
}
