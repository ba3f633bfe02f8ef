package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// task is the work of run r as its agent sees it: what a Go handler is
// given, and what the wire codec writes for an external agent.
func (i *instance) task(r *run) *registry.Task {
	t := new(registry.Task)
	i.fillTask(t, r, time.Time{})
	return t
}

// fillTask sets t, which is zero, to the task of r, with now, when not
// zero, as the time its deadline counts from (a Go handler's run reads the
// clock once for its deadline and its start).
func (i *instance) fillTask(t *registry.Task, r *run, now time.Time) {
	t.Agent, t.WorkflowID, t.Version, t.InstanceID = r.agent, i.e.wf.Name, i.e.wf.Version, i.id
	t.State, t.From, t.Reason, t.Description = r.state.Name, r.from, r.reason, r.description
	t.HandoffID, t.IdempotencyKey, t.Step, t.Attempt = r.handoffID, r.key, r.step, r.attempt
	t.Priority, t.Input, t.Context = r.priority, i.input, i.context
	t.PreviousResult, t.Constraints, t.Payload = orEmpty(r.previous), orEmpty(r.constraints), r.payload
	t.ReturnControl, t.Notice = r.returnControl, r.notice
	if r.kind == runItem {
		t.Item, t.Index, t.HasItem = r.item, r.index, true
	}
	if r.handoffID != "" {
		t.Kind = string(r.handoffReason)
		if t.Kind == "" {
			t.Kind = string(handoff.ReasonRule)
		}
	} else if r.byRule {
		t.Kind = string(handoff.ReasonRule)
	}
	if to := r.state.Timeout; to > 0 && !r.notice {
		if now.IsZero() {
			now = i.e.clock.Now()
		}
		t.Deadline = now.Add(to)
	}
	if hb := r.state.Heartbeat; hb > 0 && !r.notice {
		t.Heartbeat = hb // the agent's cue: report a heartbeat more often than this
	}
}

// resentKey is the transport's key for work an engine sends again as it
// resumes an instance, at the instance's commit commits: a transport drops
// a second send under the same key, and the first send may have been
// taken and acknowledged without its outcome being committed (an agent
// whose report no engine kept, an engine that lost the instance before
// committing it). The agent sees the work's own idempotency key, and may
// get the work twice; the engine applies the step once.
func resentKey(key string, commits int) string {
	return key + "#resent." + strconv.Itoa(commits)
}

// sendLocal queues the work of r in its Go agent's lane. A full lane
// refuses it; unless patient (sent again later), the refused work is kept
// as a dead letter.
func (i *instance) sendLocal(l *lane, r *run, patient bool) error {
	it := laneItem{i: i, step: r.step, level: transport.PriorityFromRank(r.priority)}
	if r.notice {
		it.notice, it.key = true, r.handoffID
	}
	reserved := i.reserved == l && !r.notice
	if reserved {
		i.reserved = nil
	}
	start, err := l.push(it, reserved, patient)
	if err != nil {
		if !patient {
			i.e.keepRefused(i, r, err)
		}
		return err
	}
	if start {
		i.e.startRunner(l)
	}
	return nil
}

// runLocal runs a Go handler on the work of it, then ends its run.
func (e *Engine) runLocal(l *lane, it laneItem) {
	task, h, ctx, start, timeout, ok := it.i.takeRun(it.step)
	if !ok {
		return
	}
	out, runErr := safeHandle(ctx, h, task)
	if e.closed.Load() {
		return // Close cancelled the handler: the instance stays as it was, to be resumed
	}
	if errors.Is(runErr, registry.ErrDeferred) {
		return // the outcome comes later, as a report; the state's timeout guards it
	}
	if bad := checkUsage(out.Usage); bad != nil {
		// Usage no total can hold: a failed run, like a bad result.
		out, runErr = registry.Outcome{}, registry.Kind(bad, "invalid_result")
	} else if runErr == nil {
		if bad := checkOutcome(out); bad != nil {
			// The handler answered with data no store could keep: a failed
			// run, retried like any other (a model may answer better). What
			// it used still counts.
			out, runErr = registry.Outcome{Usage: out.Usage}, registry.Kind(bad, "invalid_result")
		}
	}
	_ = it.i.finishRunAt(e.ctx, it.step, out, runErr, start, timeout)
}

// keepRefused writes to the store, as a dead letter, the work a Go agent's
// full lane refused: nothing the engine sends is dropped in silence.
func (e *Engine) keepRefused(i *instance, r *run, err error) {
	dl := record.DeadLetter{
		MessageID: r.key, Type: string(transport.MessageHandoff), From: r.from, To: r.agent,
		Reason: string(transport.ReasonQueueOverflow), Instance: i.id, Step: r.step, Key: r.key,
		At: e.clock.Now(), Attempts: 1, LastError: err.Error(),
	}
	if dl.From == "" {
		dl.From = wire.Engine
	}
	if serr := e.store.AddDeadLetter(context.Background(), dl); serr != nil {
		e.log.Error("engine: dead letter not stored", zap.String("message_id", dl.MessageID), zap.Error(serr))
	}
	if ev, ok := e.deadLettered(&dl, r.state.Name); ok {
		i.events = append(i.events, ev) // told after the step's own events, in order
	}
}

// safeHandle runs a handler and turns a panic into a failed run.
func safeHandle(ctx context.Context, h registry.Handler, t *registry.Task) (out registry.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = registry.Kind(fmt.Errorf("engine: agent handler panicked: %v\n%s", p, debug.Stack()), "panic")
		}
	}()
	return h.Handle(ctx, t)
}

// takeNotice settles the final notice with hand-off id, if the instance
// still waits for it to be taken; it reports whether it did.
func (i *instance) takeNotice(id string) bool {
	if id == "" {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.takeNoticeLocked(id)
}

// takeNoticeLocked is takeNotice with i.mu held.
func (i *instance) takeNoticeLocked(id string) bool {
	if !i.notices[id] {
		return false
	}
	delete(i.notices, id)
	// The notice's outbox item is settled: a commit of its own, since the
	// instance has no step left to carry it.
	i.note(record.Entry{Kind: record.KindNoticeTaken, HandoffID: id, Step: noticeStep(id)})
	i.commit(i.e.ctx)
	return true
}

// noticeErr is the error of a notice's report that takeNotice took: nil
// once its settling was committed, a notCommitted error (answered
// unknown_instance) when the store refused it, so that the agent gives the
// notice back and reports it again to the engine that resumes the
// instance, instead of acking a notice whose outbox item nobody settled.
// i.mu is held.
func (i *instance) noticeErr(id string) error {
	if i.commitErr != nil {
		return notCommitted(i.id, noticeStep(id), i.commitErr)
	}
	return nil
}

// report applies an external agent's report of its run's outcome under one
// hold of the instance's lock, from the report's arrival to the next step
// committed and its work sent: a final notice's report settles the notice;
// a report from an agent that does not run the step is answered invalid;
// anything else ends the run (see finishRun) with out, or runErr, which
// rep.Ending read from the report and its data passed.
func (i *instance) report(ctx context.Context, rep *wire.Report, out registry.Outcome, runErr error) (*wire.Answer, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if len(i.notices) > 0 {
		if key := registry.StepKey(rep.InstanceID, rep.Step); i.takeNoticeLocked(key) {
			return nil, i.noticeErr(key)
		}
	}
	r := i.active(rep.Step)
	if r != nil && r.agent != rep.Agent {
		return &wire.Answer{Code: wire.CodeInvalid, Message: fmt.Sprintf("engine: step %d of %s is run by %s, not %s", rep.Step, rep.InstanceID, r.agent, rep.Agent)}, nil
	}
	if i.e.closed.Load() {
		return nil, ErrClosed // the instance stays as it was
	}
	return nil, i.finishLocked(ctx, r, rep.Step, out, runErr, false)
}

// markAccepted tells whether the run of step, whose agent says it took the
// work (or is still on it), is still current: nil, or ErrStaleReport when
// the run is over, or an ErrFutureStep error when the instance has not
// reached step. Taking the work, or a heartbeat, restarts the run's
// heartbeat timer; nothing is recorded.
func (i *instance) markAccepted(ctx context.Context, step int) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.active(step) // a single run, or a parallel branch
	if r == nil {
		if err := i.futureStep(step); err != nil {
			return i.pastThisCopy(ctx, step, err)
		}
		return ErrStaleReport
	}
	if r.beat != nil {
		i.armBeat(r)
	}
	return nil
}
