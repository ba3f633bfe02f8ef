package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/batonhq/baton/rules"
)

// KindResumed marks the re-dispatch of a run after the engine restarted.
const KindResumed Kind = "resumed"

// ErrCannotResume means an unfinished instance cannot be continued by this
// engine (it waits on a parallel join, or its history is incomplete).
var ErrCannotResume = errors.New("engine: cannot resume instance")

// ResumeReport says what Resume did.
type ResumeReport struct {
	// Resumed lists the instances continued from their last committed step.
	Resumed []string
	// OtherVersion lists unfinished instances of this workflow's name that
	// started on another version (source hash): they finish on their own
	// rules, so an engine built from that version must resume them.
	OtherVersion []string
	// Failed lists instances that could not be resumed, with why.
	Failed map[string]error
}

// Resume continues every unfinished instance of this workflow found in the
// store (an engine restarted on a durable store after a crash, say). Each
// continues from its last committed step: the run that step started is
// dispatched again, with the same step number and idempotency key
// (instance:step), so the state machine applies each transition once while an
// agent that runs the step again sees the key it saw before (agent side
// effects are at-least-once and deduplicable by that key). A failed run that
// was waiting for its retry is retried after its backoff.
func (e *Engine) Resume(ctx context.Context) (ResumeReport, error) {
	rep := ResumeReport{Failed: map[string]error{}}
	snaps, err := e.store.Instances(ctx)
	if err != nil {
		return rep, fmt.Errorf("engine: resume: %w", err)
	}
	for _, snap := range snaps {
		if snap.Status.Finished() || snap.Workflow != e.wf.Name {
			continue
		}
		if snap.Hash != e.wf.Hash {
			rep.OtherVersion = append(rep.OtherVersion, snap.ID)
			continue
		}
		if _, running := e.instances.Load(snap.ID); running {
			continue
		}
		history, err := e.store.History(ctx, snap.ID)
		if err == nil {
			err = e.resume(context.WithoutCancel(ctx), snap, history)
		}
		if err != nil {
			rep.Failed[snap.ID] = err
			continue
		}
		rep.Resumed = append(rep.Resumed, snap.ID)
	}
	return rep, nil
}

func (e *Engine) resume(ctx context.Context, snap Snapshot, history []Entry) error {
	st, ok := e.wf.State(snap.State)
	if !ok {
		return fmt.Errorf("%w %s: state %s is not in the workflow", ErrCannotResume, snap.ID, snap.State)
	}
	if st.Parallel() {
		return fmt.Errorf("%w %s: it waits on the parallel join of %s", ErrCannotResume, snap.ID, st.Name)
	}
	m, err := e.def.Restore(st.Name)
	if err != nil {
		return err
	}
	r, retry, err := lastRun(e.wf, st, snap, history)
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrCannotResume, snap.ID, err)
	}
	i := &instance{
		e: e, id: snap.ID, machine: m, status: StatusRunning, state: st, step: snap.Step,
		visits: maps.Clone(snap.Visits), input: orEmpty(snap.Input), context: orEmpty(snap.Context),
		created: snap.Created, commits: snap.Commits, seq: len(history), done: make(chan struct{}),
	}
	if i.visits == nil {
		i.visits = map[string]int{st.Name: 1}
	}
	e.instances.Store(i.id, i)
	i.mu.Lock()
	defer i.mu.Unlock()
	i.run = r
	i.note(Entry{Kind: KindResumed, Step: r.step, State: st.Name, Agent: r.agent, From: r.from, Attempt: r.attempt, Priority: r.priority, Detail: r.description})
	if retry != nil {
		// The run had failed and its retry was pending.
		r.ended = true
		i.runFailed(ctx, r, errors.New(retry.Error), false, true)
	} else if err := i.launch(ctx, r, nil); err != nil {
		r.ended = true
		i.note(Entry{Kind: KindAgentRun, Step: r.step, State: st.Name, Agent: r.agent, Attempt: r.attempt, Error: err.Error()})
		i.runFailed(ctx, r, err, false, true)
	}
	i.commit(ctx)
	return nil
}

// lastRun rebuilds the run the instance's last committed step started, from
// its history: who handed it over, with which task, previous result and
// constraints. It also returns the retry entry when the run had failed and
// was waiting for its retry.
func lastRun(w *rules.Workflow, st *rules.State, snap Snapshot, history []Entry) (*run, *Entry, error) {
	// (A resumed entry repeats the run's sender, task and priority, so that a
	// second crash resumes the same run again.)
	r := &run{step: snap.Step, attempt: max(snap.Attempt, 1), state: st, agent: st.Agent, priority: rules.PriorityNormal}
	var retry *Entry
	found := false
	for k := len(history) - 1; k >= 0; k-- {
		e := history[k]
		if e.Step != snap.Step {
			continue
		}
		switch e.Kind {
		case KindRetry:
			if !found && retry == nil {
				retry = &history[k]
			}
		case KindHandoff, KindDispatch, KindResumed:
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
		if e := history[k]; e.Kind == KindOutcome && e.Step < snap.Step {
			r.previous = e.Result
			break
		}
	}
	if r.description == "" {
		r.description = "resume " + w.Name
	}
	return r, retry, nil
}
