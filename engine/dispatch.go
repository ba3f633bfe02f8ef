package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

// dispatcherID is the from_agent of the runs the engine dispatches itself.
const dispatcherID = "engine"

// Message metadata keys the engine sets on every piece of work it sends, so
// that the receiver (a worker or an external agent) can report back.
const (
	metaInstance = "instance_id"
	metaStep     = "step"
	metaHandoff  = "handoff_id"
)

// prepareHandoff validates and records an agent-to-agent hand-off (or, for
// a final notice, the hand-off into a terminal state) with the manager and
// returns its id; the hand-off goes out once its step has committed.
func (e *Engine) prepareHandoff(ctx context.Context, i *instance, r *run) (string, error) {
	rec, err := e.handoffs.Prepare(ctx, handoffCommand(i, r))
	if err != nil {
		return "", err
	}
	return rec.ID, nil
}

// restoreHandoff records again, under its old id, a hand-off the store's
// outbox holds from before a restart.
func (e *Engine) restoreHandoff(ctx context.Context, i *instance, r *run) error {
	_, err := e.handoffs.Restore(ctx, r.handoffID, handoffCommand(i, r))
	return err
}

// handoffCommand is the hand-off of run r.
func handoffCommand(i *instance, r *run) handoff.Command {
	reason := r.handoffReason
	if reason == "" {
		reason = handoff.ReasonRule
	}
	return handoff.Command{
		From: r.from, To: r.agent, Reason: reason, Explanation: r.reason, Payload: r.payload,
		ReturnControl: r.returnControl, RequiresAck: true,
		Task: r.description, Context: i.context, PreviousResult: orEmpty(r.previous),
		Constraints: orEmpty(r.constraints), Priority: r.priority, WorkflowID: i.e.wf.Name,
		InstanceID: i.id, Step: r.step, IdempotencyKey: r.key,
		Timeout: settleWithin(r),
	}
}

// goRunDeadline is how long the hand-off to a Go handler in a state without
// a timeout may stay unsettled: a day, the bus's longest message TTL.
const goRunDeadline = 24 * time.Hour

// settleWithin is the acceptance time-out of a run's hand-off; 0 keeps the
// manager's. A Go handler settles its hand-off when it answers (accepted, or
// rejected with its reason), so its deadline covers the run, which the
// state's timeout bounds; otherwise a handler working longer than the
// manager's default would have its hand-off marked timed out and its sender
// told so while it is still working.
func settleWithin(r *run) time.Duration {
	if r.handler == nil {
		return 0
	}
	if r.state.Timeout > 0 {
		return r.state.Timeout + handoff.DefaultTimeout
	}
	return goRunDeadline
}

// sendDispatch sends the engine's own dispatch of a run (the initial run, a
// retry, a re-entry, or a state owned by the agent that just finished).
func (e *Engine) sendDispatch(ctx context.Context, i *instance, r *run) error {
	m := &bus.Message{
		Type:     bus.MessageHandoff,
		From:     dispatcherID,
		To:       r.agent,
		Priority: bus.PriorityFromRank(r.priority),
		Content: map[string]any{
			"action":           "handoff",
			"task_description": r.description,
			"context":          i.context,
			"previous_result":  orEmpty(r.previous),
			"constraints":      orEmpty(r.constraints),
			"workflow_id":      e.wf.Name,
			"instance_id":      i.id,
			"step":             r.step,
			"reason":           r.reason,
		},
		Metadata: map[string]any{
			metaInstance:      i.id,
			metaStep:          r.step,
			"idempotency_key": r.key,
		},
		RequiresAck: true,
	}
	return e.bus.Send(ctx, m)
}

// taskRef is what identifies a piece of work in a message.
type taskRef struct {
	instanceID string
	step       int
	handoffID  string
}

// readTask finds the instance, step and hand-off id in a message sent by the
// engine or the hand-off manager (metadata first, then content).
func readTask(m *bus.Message) (taskRef, error) {
	if m == nil {
		return taskRef{}, errors.New("engine: nil message")
	}
	var ref taskRef
	ref.instanceID = lookupString(m, metaInstance)
	ref.handoffID = lookupString(m, metaHandoff)
	step, ok := lookupInt(m, metaStep)
	if ref.instanceID == "" || !ok {
		return taskRef{}, fmt.Errorf("engine: message %s carries no instance_id and step", m.MessageID)
	}
	ref.step = step
	return ref, nil
}

func lookupString(m *bus.Message, key string) string {
	for _, src := range []map[string]any{m.Metadata, m.Content} {
		if s, ok := src[key].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func lookupInt(m *bus.Message, key string) (int, bool) {
	for _, src := range []map[string]any{m.Metadata, m.Content} {
		switch v := src[key].(type) {
		case int:
			return v, true
		case int64:
			return int(v), true
		case float64:
			return int(v), true
		case string:
			if n, err := strconv.Atoi(v); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// deliver takes the next message from a Go agent's mailbox and runs the
// agent's handler on it. One deliver is submitted per message sent to such
// an agent, so deliveries and messages balance without a goroutine per
// message; the mailbox decides which message comes first (by priority).
func (e *Engine) deliver(agent string) {
	var m *bus.Message
	for m == nil {
		msgs, err := e.bus.Receive(agent, 1)
		if err != nil || len(msgs) == 0 {
			return
		}
		if msgs[0].RequiresAck {
			// The worker owns the message from here on: the engine's run
			// token, timeout and retry policy guard the work, so a
			// redelivery could only run a step twice.
			_ = e.bus.Ack(e.ctx, msgs[0])
		}
		if msgs[0].Type == bus.MessageHandoff {
			m = msgs[0]
			continue
		}
		// Replies, errors and notifications addressed to a Go agent (the
		// ERROR that tells a sender its hand-off was rejected, say) are
		// recorded in the log; only hand-offs start work.
		e.log.Debug("engine: message for a Go agent", zap.String("to", agent), zap.String("type", string(msgs[0].Type)))
	}
	ref, err := readTask(m)
	if err != nil {
		e.log.Warn("engine: unroutable message", zap.String("to", agent), zap.Error(err))
		return
	}
	v, ok := e.instances.Load(ref.instanceID)
	if !ok {
		return
	}
	i := v.(*instance)
	if i.takeNotice(ref.handoffID) {
		_ = e.handoffs.Accept(e.ctx, ref.handoffID)
		return
	}
	task, h, ctx, timeout, ok := i.takeRun(ref.step)
	if !ok {
		return
	}
	// The hand-off is settled by finishRun once the handler has answered:
	// accepted, or rejected with the handler's reason (which the sender is
	// told), exactly as for an external agent's report.
	start := e.clock.Now()
	out, runErr := safeHandle(ctx, h, task)
	if e.closed.Load() {
		return // Close cancelled the handler: the instance stays as it was, to be resumed
	}
	elapsed := e.clock.Now().Sub(start)
	timedOut := timeout > 0 && elapsed > timeout
	_ = i.finishRun(e.ctx, ref.step, out, runErr, timedOut)
}

// safeHandle runs a handler and turns a panic into a failed run.
func safeHandle(ctx context.Context, h registry.Handler, t *registry.Task) (out registry.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine: agent handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h.Handle(ctx, t)
}

func (i *instance) takeNotice(id string) bool {
	if id == "" {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.notices[id] {
		return false
	}
	delete(i.notices, id)
	// The notice's outbox item is settled: a commit of its own, since the
	// instance has no step left to carry it.
	i.settle = true
	i.commit(i.e.ctx)
	return true
}

// markAccepted records that the agent of step's run took its hand-off; it
// reports false when that run is no longer current.
func (i *instance) markAccepted(step int) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.active(step) // a single run, or a parallel branch
	if r == nil {
		return false
	}
	r.accepted = true
	return true
}
