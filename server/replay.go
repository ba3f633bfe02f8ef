package server

import (
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// pastEvents turns an instance's history into the events the engine told
// while it wrote that history, entry by entry: a stream of one instance
// sends its past and its live events alike from the history, so that the
// two never overlap nor leave a gap between them. Events that are never
// recorded (agent_progress, agent_changed, dead_lettered) are not in it.
type pastEvents struct {
	snap    record.Snapshot
	wf      *rules.Workflow      // the instance's version, when the server has it
	agents  map[string]string    // each state's agent, as the history named it
	sent    map[runKey]time.Time // when each run's work was sent, for its duration
	rule    string               // the last rule fired: the rule of the run it starts
	created time.Time
}

// runKey names a run in the history: its step and agent (a parallel
// state's branches share a step), and its item for a foreach state.
type runKey struct {
	step  int
	agent string
	index int
}

func newPastEvents(snap record.Snapshot, wf *rules.Workflow) *pastEvents {
	return &pastEvents{snap: snap, wf: wf, agents: map[string]string{}, sent: map[runKey]time.Time{}, created: snap.Created}
}

// agentOf is the agent owning state, which the engine's events name when
// they are about no agent of their own.
func (p *pastEvents) agentOf(state string) string {
	if p.wf == nil {
		return p.agents[state]
	}
	for _, st := range p.wf.States {
		if st.Name == state {
			return st.Agent
		}
	}
	return ""
}

// add appends to out the events en stands for.
func (p *pastEvents) add(out []Event, en record.Entry) []Event {
	if en.Agent != "" && en.State != "" && en.Kind != record.KindWaiting && en.Kind != record.KindSignal && en.Kind != record.KindChild {
		if _, ok := p.agents[en.State]; !ok {
			p.agents[en.State] = en.Agent
		}
	}
	ev := Event{
		Instance: p.snap.ID, Workflow: p.snap.Workflow, Version: p.snap.Version, Step: en.Step,
		State: en.State, Agent: en.Agent, Time: en.Time.UTC(), Error: en.Error,
	}
	if ev.Agent == "" {
		ev.Agent = p.agentOf(en.State)
	}
	switch en.Kind {
	case record.KindStarted:
		if p.created.IsZero() {
			p.created = en.Time
		}
		ev.Type = "instance_started"
		changed := ev
		changed.Type, changed.To = "state_changed", en.State
		return append(out, ev, changed)
	case record.KindDispatch, engine.KindResumed:
		p.sent[runKey{en.Step, en.Agent, en.Index}] = en.Time
		ev.Type, ev.Attempt, ev.Rule, ev.From = "run_started", en.Attempt, p.rule, en.From
		ev.Reason = dispatchReason(en)
		return append(out, ev)
	case record.KindHandoff:
		p.sent[runKey{en.Step, en.Agent, en.Index}] = en.Time
		ev.Agent = p.agentOf(en.State)
		ev.Type, ev.From, ev.To, ev.Rule = "agent_handoff", en.From, en.To, en.Rule
		run := ev
		run.Type, run.Agent, run.From, run.To, run.Attempt, run.Reason = "run_started", en.Agent, en.From, "", max(en.Attempt, 1), en.Reason
		return append(out, ev, run)
	case record.KindFinalNotice:
		if en.Detail == "not delivered" {
			return out
		}
		ev.Agent = p.agentOf(en.State)
		ev.Type, ev.From, ev.To, ev.Rule = "agent_handoff", en.From, en.To, en.Rule
		return append(out, ev)
	case record.KindAgentRun:
		ev.Type, ev.Attempt, ev.Trigger, ev.To = "agent_reported", en.Attempt, en.Trigger, en.To
		if en.Error != "" {
			ev.Kind = en.ErrorKind
			if ev.Kind == "" {
				ev.Kind = "error"
			}
		}
		if at, ok := p.sent[runKey{en.Step, en.Agent, en.Index}]; ok {
			ev.DurationSeconds = en.Time.Sub(at).Seconds()
		}
		if !en.Usage.IsZero() {
			u := en.Usage
			ev.Usage = &u
		}
		return append(out, ev)
	case record.KindRetry:
		ev.Type, ev.Attempt, ev.DelaySeconds, ev.Kind = "retry_scheduled", en.Attempt, en.Delay.Seconds(), en.ErrorKind
		return append(out, ev)
	case record.KindCondition:
		ev.Type, ev.Rule, ev.Condition = "condition_error", en.Rule, en.Condition
		return append(out, ev)
	case record.KindRuleFired:
		p.rule = en.Rule
		ev.Type, ev.Rule, ev.Trigger, ev.Condition, ev.To = "rule_fired", en.Rule, en.Trigger, en.Condition, en.Next
		return append(out, ev)
	case record.KindLimitHit:
		ev.Type, ev.Limit, ev.To = "limit_hit", en.Limit, en.Next
		return append(out, ev)
	case record.KindTransition:
		p.rule = ""
		ev.Type, ev.From, ev.To, ev.Rule, ev.State = "state_changed", en.State, en.Next, en.Rule, en.Next
		ev.Agent = p.agentOf(en.Next)
		return append(out, ev)
	case record.KindSignal:
		ev.Type, ev.Signal, ev.Agent = "signal_received", en.Trigger, ""
		return append(out, ev)
	case record.KindCompleted:
		ev.Type, ev.Outcome = "completed", en.State
		ev.DurationSeconds = en.Time.Sub(p.created).Seconds()
		return append(out, ev)
	case record.KindFailed:
		ev.Type, ev.Kind = "failed", en.ErrorKind
		ev.DurationSeconds = en.Time.Sub(p.created).Seconds()
		return append(out, ev)
	case record.KindCanceled:
		ev.Type = "cancelled"
		// The live event's error, built the way the engine builds it.
		ev.Error = (&engine.FailedError{InstanceID: p.snap.ID, State: en.State, Err: engine.ErrCanceled}).Error()
		ev.DurationSeconds = en.Time.Sub(p.created).Seconds()
		return append(out, ev)
	}
	return out
}

// dispatchReason is why the engine sent a run's work, as far as its
// dispatch entry tells.
func dispatchReason(en record.Entry) string {
	switch {
	case en.Kind == engine.KindResumed:
		return "resume"
	case en.Attempt > 1:
		return "retry"
	case strings.HasPrefix(en.Detail, "start "):
		return "start"
	case strings.HasPrefix(en.Detail, "limit hit: "):
		return "on_limit"
	}
	return ""
}

// ended reports whether en ends its instance.
func ended(en record.Entry) bool {
	return en.Kind == record.KindCompleted || en.Kind == record.KindFailed || en.Kind == record.KindCanceled
}
