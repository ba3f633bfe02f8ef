package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/registry"
)

// Progress is what a run says while it works: the agent that received the
// work for step of instance instanceID sends p (a message, the next piece
// of a streamed answer, data). It counts as a heartbeat for the run, is
// told to the observers at once as an agent_progress event, and is kept as
// the run's latest progress (Instance.Progress) until the run ends; it is
// never written to the history, so it changes no decision and no replay.
//
// Progress for a run that is over returns ErrStaleReport, for an instance
// the engine does not know ErrUnknownInstance; progress from another agent
// than the run's, or with data no JSON can hold, is an *InputError.
func (e *Engine) Progress(ctx context.Context, instanceID string, step int, agent string, p registry.Progress) error {
	if ctx == nil {
		return errors.New("engine: nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case instanceID == "":
		return &InputError{Field: "instance_id", Reason: "is required"}
	case step < 1:
		return &InputError{Field: "step", Reason: "must be 1 or more"}
	case agent == "":
		return &InputError{Field: "agent", Reason: "is required"}
	}
	if err := checkData("progress.data", p.Data); err != nil {
		return err
	}
	return e.with(ctx, instanceID, func(i *instance) error { return i.progress(step, agent, p) })
}

// RunProgress is the latest progress of one run under way.
type RunProgress struct {
	Step     int
	Agent    string
	Progress registry.Progress
	At       time.Time // when the engine received it
}

// Progress returns the latest progress of each run under way that sent
// any, by step.
func (h *Instance) Progress() []RunProgress {
	i := h.inst
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.status.Finished() {
		return nil
	}
	var out []RunProgress
	if i.run != nil {
		out = appendProgress(out, i.run)
	}
	if i.work != nil {
		out = i.work.progress(out)
	}
	slices.SortFunc(out, func(a, b RunProgress) int { return a.Step - b.Step })
	return out
}

// appendProgress appends the progress of r, if it is under way and has
// sent some.
func appendProgress(out []RunProgress, r *run) []RunProgress {
	if !r.ended && r.progress != nil {
		out = append(out, RunProgress{Step: r.step, Agent: r.agent, Progress: r.progress.p, At: r.progress.at})
	}
	return out
}

// progress applies progress p of agent's run of step.
func (i *instance) progress(step int, agent string, p registry.Progress) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.active(step)
	if r == nil || r.notice {
		return fmt.Errorf("%w: step %d of %s is not under way", ErrStaleReport, step, i.id)
	}
	if r.agent != agent {
		return &InputError{Field: "agent", Reason: fmt.Sprintf("step %d of %s is run by %s, not %s", step, i.id, r.agent, agent)}
	}
	if r.beat != nil {
		i.armBeat(r)
	}
	r.progress = &runProgress{p: p, at: i.e.clock.Now()}
	if i.e.observed() && len(i.events) == 0 {
		// Told at once: progress commits nothing, so no step carries it.
		i.event(Event{Type: EventAgentProgress, Step: r.step, State: r.state.Name, Agent: r.agent, Attempt: r.attempt, Progress: &p})
		for _, ev := range i.events {
			i.e.emit(ev)
		}
		i.events = i.events[:0]
	}
	return nil
}
