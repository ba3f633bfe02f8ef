package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// agentKind is the kind of an agent's state: one run of its agent at a
// time (instance.run), which may delegate the step to another agent, hand
// control back, or be retried; its outcome, which finishLocked takes (the
// state holds no visit), is matched against the rules.
type agentKind struct{}

// enter starts the next step in the current state: it sends the work to
// the state's agent and arms the state's timeout. A retry starts here too.
func (agentKind) enter(ctx context.Context, i *instance, d dispatch) {
	st := i.state
	i.step++
	r := i.reusableRun()
	if r == nil {
		r = new(run)
	}
	*r = run{
		step: i.step, attempt: d.attempt, state: st, agent: st.Agent, from: d.from,
		description: d.description, reason: d.reason, priority: d.priority,
		previous: d.previous, constraints: d.constraints,
	}
	if r.from == st.Agent {
		r.from = "" // the same agent continues: the engine dispatches, no hand-off
	}
	i.run = r
	if err := i.launch(ctx, r, d.rule); err != nil {
		// The bus refused the work (a full mailbox, say) and dead-lettered
		// it: the run has failed before it began, and the retry policy
		// decides what happens next.
		r.ended = true
		ran := record.Entry{Kind: record.KindAgentRun, State: st.Name, Agent: st.Agent, Attempt: r.attempt, Error: err.Error()}
		i.note(ran)
		i.runEnded(r, &ran, err)
		i.runFailed(ctx, r, err, false, true)
	}
}

// reusableRun returns the instance's run when its next run may be made in
// it: a run allocated at every step, with its handler's task, was 736 of
// the 1,500 bytes a step of BenchmarkEngineRefund allocated. It may when
// nothing can still reach the run as its own: it ended, and it was a Go
// agent's run of the state's own agent, with no timer or heartbeat still
// under way, no resend waiting (rare), no span, whose handler was given its
// task and context in a take of their own. What may still hold it goes by
// its step, which a reused run changes: a timeout that fired remembers the
// step it timed (runTimer.step), an open outbox item its run's key
// (openItem.key), a lane's item and a report name the step. nil when it
// may not.
func (i *instance) reusableRun() *run {
	r := i.run
	if r == nil || !r.ended || r.kind != runState || r.returned || r.notice || r.handler == nil ||
		r.rare != nil || r.timer != nil || r.beat != nil || r.span != nil || i.work != nil {
		return nil
	}
	return r
}

// resume continues an agent's state: the run in the outbox is sent
// again, a pending retry is retried, and a store written before the outbox
// existed has the run rebuilt from the history.
func (agentKind) resume(ctx context.Context, i *instance, snap record.Snapshot, history []record.Entry, outbox []record.Outgoing) error {
	for _, o := range outbox {
		switch {
		case o.Kind == record.OutgoingNotice:
			if err := i.resend(ctx, o, nil); err != nil {
				return err
			}
		case i.run == nil && o.Step == snap.Step:
			r := i.runOf(o, i.state)
			i.run = r
			if err := i.resend(ctx, o, r); err != nil {
				return err
			}
		default:
			i.settleLater(o.Key) // the work of a run that is no longer current
		}
	}
	if i.run != nil {
		return nil
	}
	r, retry, err := lastRun(i.e.wf, i.state, snap, history)
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrCannotResume, snap.ID, err)
	}
	r.key = registry.StepKey(i.id, r.step)
	i.run = r
	i.note(record.Entry{Kind: KindResumed, Step: r.step, State: i.state.Name, Agent: r.agent, From: r.from, Attempt: r.attempt, Priority: r.priority, Detail: r.description})
	if retry != nil {
		// The run had failed and its retry was pending.
		r.ended = true
		kind := retry.ErrorKind
		i.runFailed(ctx, r, registry.Kind(errors.New(retry.Error), cmp.Or(kind, "error")), kind == "timeout" || kind == "heartbeat", true)
		return nil
	}
	if err := i.launch(ctx, r, nil); err != nil {
		r.ended = true
		ran := record.Entry{Kind: record.KindAgentRun, Step: r.step, State: i.state.Name, Agent: r.agent, Attempt: r.attempt, Error: err.Error()}
		i.note(ran)
		i.runEnded(r, &ran, err)
		i.runFailed(ctx, r, err, false, true)
	}
	return nil
}

// lastRun rebuilds the run the instance's last committed step started, from
// its history: who handed it over, with which task, previous result and
// constraints. It also returns the retry entry when the run had failed and
// was waiting for its retry.
func lastRun(w *rules.Workflow, st *rules.State, snap record.Snapshot, history []record.Entry) (*run, *record.Entry, error) {
	// (A resumed entry repeats the run's sender, task and priority, so that a
	// second crash resumes the same run again.)
	r := &run{step: snap.Step, attempt: max(snap.Attempt, 1), state: st, agent: st.Agent, priority: rules.PriorityNormal}
	var retry *record.Entry
	found := false
	for k := len(history) - 1; k >= 0; k-- {
		e := history[k]
		if e.Step != snap.Step {
			continue
		}
		switch e.Kind {
		case record.KindRetry:
			if !found && retry == nil {
				retry = &history[k]
			}
		case record.KindHandoff, record.KindDispatch, KindResumed:
			if found {
				continue
			}
			found = true
			r.description, r.priority, r.from, r.reason = e.Detail, max(e.Priority, 1), e.From, "resume"
			if rule, ok := w.Rule(e.Rule); ok {
				r.reason, r.constraints = rule.Reason, rule.Constraints
			}
		}
	}
	if !found {
		return nil, nil, fmt.Errorf("no dispatch of step %d in its history", snap.Step)
	}
	// The previous result is the outcome that led into this state.
	for k := len(history) - 1; k >= 0; k-- {
		if e := history[k]; e.Kind == record.KindOutcome && e.Step < snap.Step {
			r.previous = e.Result
			break
		}
	}
	if r.description == "" {
		r.description = "resume " + w.Name
	}
	return r, retry, nil
}
