package engine

import (
	"cmp"
	"slices"
	"time"

	"github.com/batonhq/baton/registry"
)

// PendingKind names what an instance waits on.
type PendingKind string

// The kinds of pending work.
const (
	// PendingRun is an agent's run: of a state's agent, a delegate or a
	// parallel branch.
	PendingRun PendingKind = "run"
	// PendingWait is a wait state waiting for one of its signals.
	PendingWait PendingKind = "wait"
	// PendingChild is a workflow state waiting for its child instance.
	PendingChild PendingKind = "child"
	// PendingForeach is the run of one item of a foreach state.
	PendingForeach PendingKind = "foreach"
)

// Pending is one thing an unfinished instance waits on.
type Pending struct {
	Kind PendingKind
	// State is the state it belongs to.
	State string
	// Agent is the agent of a run or item run; the child workflow's name
	// for a child.
	Agent string
	// Step and Attempt are a run's; zero for a wait and a child.
	Step, Attempt int
	// Since is when the run's work was sent (again, after a restart), the
	// wait began or the child started.
	Since time.Time
	// Deadline is when the state's timeout fires; zero when it has none.
	Deadline time.Time
	// Signals are the signals a wait accepts, as the workflow lists them
	// (shared: do not modify).
	Signals []string
	// Child is a child's instance id.
	Child string
	// Go reports that a Go handler of this process runs the run; it is
	// external (its work on the transport) otherwise.
	Go bool
	// Progress is the latest progress the run's agent sent, nil when none
	// (shared: do not modify); ProgressAt is when the engine received it.
	Progress   *registry.Progress
	ProgressAt time.Time
}

// Pending appends to buf what instance id waits on, ordered by step (a
// wait or a child first), and reports whether an engine of this process
// (this one or one of its sub-workflows') holds the instance. A finished
// instance, or one this process does not run, waits on nothing here.
//
// It reads the instance under its lock and allocates nothing beyond
// buf's growth, so that it can be called on every read of an instance.
func (e *Engine) Pending(id string, buf []Pending) ([]Pending, bool) {
	var i *instance
	if v, ok := e.instances.Load(id); ok {
		i = v
	} else if _, i = e.fam.running(id); i == nil {
		return buf, false
	}
	return i.pendingWork(buf), true
}

func (i *instance) pendingWork(buf []Pending) []Pending {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.status.Finished() {
		return buf
	}
	start := len(buf)
	if v := i.work; v != nil {
		buf = v.pending(buf)
	}
	if r := i.run; r != nil {
		buf = appendRun(buf, PendingRun, r)
	}
	slices.SortFunc(buf[start:], func(a, b Pending) int { return cmp.Compare(a.Step, b.Step) })
	return buf
}

// appendRun appends r if it is under way: a final notice is no run.
func appendRun(buf []Pending, kind PendingKind, r *run) []Pending {
	if r.ended || r.notice {
		return buf
	}
	p := Pending{Kind: kind, State: r.state.Name, Agent: r.agent, Step: r.step, Attempt: r.attempt, Since: r.since, Deadline: deadline(r.since, r.state.Timeout), Go: r.handler != nil}
	if r.progress != nil {
		// The engine replaces a run's progress, never changes it: sharing
		// it is safe.
		p.Progress, p.ProgressAt = &r.progress.p, r.progress.at
	}
	return append(buf, p)
}

func deadline(since time.Time, timeout time.Duration) time.Time {
	if timeout <= 0 || since.IsZero() {
		return time.Time{}
	}
	return since.Add(timeout)
}
