package ops

import (
	"context"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// Pending is one thing an unfinished instance waits on: a run of an agent,
// a wait for a signal, a child instance, or the run of a foreach item.
type Pending struct {
	// Kind is run, wait, child or foreach.
	Kind string `json:"kind"`
	// State is the state it belongs to.
	State string `json:"state"`
	// Agent is the agent of a run (the child workflow of a child; "" for
	// a wait).
	Agent string `json:"agent"`
	// Step and Attempt are a run's (0 for a wait and a child).
	Step    int `json:"step"`
	Attempt int `json:"attempt"`
	// Since is when the run's work was sent (again, after a restart), the
	// wait began or the child started.
	Since time.Time `json:"since"`
	// Deadline is when the state's timeout fires: null when it has none.
	Deadline *time.Time `json:"deadline"`
	// Signals are the signals a wait accepts.
	Signals []string `json:"signals,omitempty"`
	// Child is a child's instance id.
	Child string `json:"child,omitempty"`
	// Progress is the latest progress the run's agent sent (known only on
	// the process that runs the instance).
	Progress *Progress `json:"progress,omitempty"`
	// Transport says how the run's work travels: go (a Go handler), nats
	// (an external agent), or the agent's declared kind: http, a2a, mcp,
	// llm.
	Transport string `json:"transport,omitempty"`
}

// Progress is a run's latest progress and when it came.
type Progress struct {
	registry.Progress
	At time.Time `json:"at"`
}

// The transports of pending work and the kinds of agents: go and nats,
// and the kinds a workflow declares (rules.KindHTTP, KindA2A, KindMCP,
// KindLLM).
const (
	TransportGo   = "go"
	TransportNATS = "nats"
)

// agentKind is the kind of agent id of w: the kind its declaration gives
// (http, a2a, mcp, llm), otherwise go when this process has its handler
// (goHandler), nats when its work goes to an external agent.
func agentKind(w *rules.Workflow, id string, goHandler bool) string {
	if a, ok := w.Agent(id); ok && a.Kind() != "" {
		return a.Kind()
	}
	if goHandler {
		return TransportGo
	}
	return TransportNATS
}

// heldPending fills in.Pending from the engine of f when it holds the instance,
// and reports whether it does.
func heldPending(in *Instance, f Flow, buf []engine.Pending) ([]engine.Pending, bool) {
	if f.Engine == nil {
		return buf, false
	}
	work, ok := f.Engine.Pending(in.ID, buf[:0])
	if !ok {
		return work, false
	}
	in.Pending = make([]Pending, 0, len(work))
	for _, p := range work {
		in.Pending = append(in.Pending, pendingOf(f.Workflow, p))
	}
	return work, true
}

// snapshotPending is what an instance no engine of this process holds
// waits on as far as its snapshot tells, for a list (which reads no
// history): a wait state's signals, a workflow state's child workflow, or
// a run of the state's agent at the snapshot's step and attempt, since its
// last update.
func snapshotPending(in *Instance, snap record.Snapshot, w *rules.Workflow) {
	st, ok := w.State(snap.State)
	if !ok {
		return
	}
	since := snap.Updated.UTC()
	switch {
	case st.Waits():
		in.Pending = []Pending{{Kind: string(engine.PendingWait), State: st.Name, Since: since, Signals: st.Wait.Signals}}
	case st.Child != nil && st.Child.Target != nil:
		in.Pending = []Pending{{Kind: string(engine.PendingChild), State: st.Name, Agent: st.Child.Target.Name, Since: since}}
	case st.Agent != "" && snap.Step > 0:
		kind := engine.PendingRun
		if st.Foreach != nil {
			kind = engine.PendingForeach
		}
		in.Pending = []Pending{{Kind: string(kind), State: st.Name, Agent: st.Agent, Step: snap.Step, Attempt: max(snap.Attempt, 1), Since: since, Transport: agentKind(w, st.Agent, false)}}
	}
}

func pendingOf(w *rules.Workflow, p engine.Pending) Pending {
	out := Pending{Kind: string(p.Kind), State: p.State, Agent: p.Agent, Step: p.Step, Attempt: p.Attempt, Since: p.Since.UTC(), Signals: p.Signals, Child: p.Child}
	if !p.Deadline.IsZero() {
		d := p.Deadline.UTC()
		out.Deadline = &d
	}
	if p.Kind == engine.PendingRun || p.Kind == engine.PendingForeach {
		out.Transport = agentKind(w, p.Agent, p.Go)
	}
	if p.Progress != nil {
		out.Progress = &Progress{Progress: *p.Progress, At: p.ProgressAt.UTC()}
	}
	return out
}

// storedPending derives what an instance no engine of this process holds
// waits on from its history: the runs whose work was sent (dispatch,
// hand-off, resumed) with no agent_run yet, since the state was last
// entered; the wait or the child the state began. The transport of a run
// is told from the workflow only (http for an agent with a url, nats
// otherwise: another process may hold its Go handler); progress is never
// in the history.
func (o *Ops) storedPending(ctx context.Context, id string, w *rules.Workflow) []Pending {
	entries, err := o.store.History(ctx, id)
	if err != nil {
		return nil
	}
	// Only what follows the last transition belongs to the current state.
	start := 0
	for k := len(entries) - 1; k >= 0; k-- {
		if entries[k].Kind == record.KindTransition {
			start = k + 1
			break
		}
	}
	out := []Pending{}
	runs := map[int]int{} // step -> index in out
	for _, en := range entries[start:] {
		st, _ := w.State(en.State)
		switch en.Kind {
		case record.KindWaiting:
			out = append(out, Pending{Kind: string(engine.PendingWait), State: en.State, Since: en.Time.UTC(), Deadline: deadlineOf(en.Time, en.Delay), Signals: splitSignals(en.Detail)})
		case record.KindChild:
			out = append(out, Pending{Kind: string(engine.PendingChild), State: en.State, Agent: en.Agent, Child: en.Detail, Since: en.Time.UTC(), Deadline: deadlineOf(en.Time, en.Delay)})
		case record.KindSignal:
			for k := range out {
				if out[k].Kind == string(engine.PendingWait) {
					out[k].Kind = "" // answered
				}
			}
		case record.KindDispatch, record.KindHandoff, engine.KindResumed:
			kind := engine.PendingRun
			if st != nil && st.Foreach != nil {
				kind = engine.PendingForeach
			}
			var timeout time.Duration
			if st != nil {
				timeout = st.Timeout
			}
			p := Pending{Kind: string(kind), State: en.State, Agent: en.Agent, Step: en.Step, Attempt: max(en.Attempt, 1), Since: en.Time.UTC(), Deadline: deadlineOf(en.Time, timeout), Transport: agentKind(w, en.Agent, false)}
			if k, ok := runs[en.Step]; ok {
				out[k] = p
			} else {
				runs[en.Step] = len(out)
				out = append(out, p)
			}
		case record.KindAgentRun:
			if k, ok := runs[en.Step]; ok {
				out[k].Kind = "" // ended
			}
		}
	}
	kept := out[:0]
	for _, p := range out {
		if p.Kind != "" {
			kept = append(kept, p)
		}
	}
	return kept
}

func splitSignals(detail string) []string {
	if detail == "" {
		return nil
	}
	return strings.Split(detail, ", ")
}

func deadlineOf(since time.Time, timeout time.Duration) *time.Time {
	if timeout <= 0 {
		return nil
	}
	d := since.Add(timeout).UTC()
	return &d
}

// markOnLimit sets in.OnLimit for an instance completed through the
// workflow's on_limit state: the limit of the last limit_hit of its
// history that led there. Only completed instances of a workflow with an
// on_limit state have their history read.
func (o *Ops) markOnLimit(ctx context.Context, in *Instance, w *rules.Workflow) {
	if in.Status != StatusCompleted || w.Limits.OnLimit == "" {
		return
	}
	entries, err := o.store.History(ctx, in.ID)
	if err != nil {
		return
	}
	for k := len(entries) - 1; k >= 0; k-- {
		if en := entries[k]; en.Kind == record.KindLimitHit && en.Limit != "" {
			in.OnLimit = en.Limit
			return
		}
	}
}
