package engine

import (
	"context"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// A kind is how the engine runs one kind of state: entering it, and
// taking it up again after a restart. Each kind lives in its own file
// (agentKind in instance.go, parallelKind in parallel.go, waitKind in
// wait.go, foreachKind in foreach.go, workflowKind in child.go); a new kind
// of state is a new file and one line in kindOf.
type kind interface {
	// enter starts the work of the state just entered (i.state), as d
	// says it came about. The caller holds i.mu and commits.
	enter(ctx context.Context, i *instance, d dispatch)
	// resume rebuilds the work of the current state from the instance's
	// history and the outbox the store holds unsettled, after a restart.
	// The caller holds i.mu and commits.
	resume(ctx context.Context, i *instance, snap record.Snapshot, history []record.Entry, outbox []record.Outgoing) error
}

// kindOf returns the kind of st.
func kindOf(st *rules.State) kind {
	switch {
	case st.Waits():
		return waitKind{}
	case st.Parallel():
		return parallelKind{}
	case st.Iterates():
		return foreachKind{}
	case st.Calls():
		return workflowKind{}
	}
	return agentKind{}
}

// A visit is the work under way of a state whose kind does more than one
// agent's run (a join, a wait, a foreach, a child): the instance holds it
// (instance.work) from the state's entry until its outcome. An agent's
// state holds no visit: its run is instance.run.
type visit interface {
	// run returns the visit's run of step, ended or not; nil when step is
	// not one of its runs.
	run(step int) *run
	// runDone takes the outcome of r, one of the visit's runs under way,
	// which finishLocked has just ended and noted (ran).
	runDone(ctx context.Context, i *instance, r *run, out registry.Outcome, runErr error, isReject, timedOut bool)
	// sendFailed takes the failure of r, one of the visit's runs, whose
	// work the transport refused after its step was committed.
	sendFailed(ctx context.Context, i *instance, r *run, err error)
	// pending appends what the visit waits on (see Engine.Pending).
	pending(buf []Pending) []Pending
	// progress appends the progress of its runs under way.
	progress(out []RunProgress) []RunProgress
	// stop stops the visit's timers and Go handlers and ends its runs
	// still under way; the visit stays the instance's (Close keeps it to
	// be resumed; a released instance is done with it).
	stop()
	// end ends the visit without its outcome: stop, and a child instance
	// is cancelled. The instance drops it.
	end(ctx context.Context)
}

// endWork ends the visit under way, if any, without its outcome.
func (i *instance) endWork(ctx context.Context) {
	if v := i.work; v != nil {
		i.work = nil
		v.end(ctx)
	}
}

// abandon ends r, if it is still under way, without an outcome: its
// timers and Go handler stop and its span ends, and its report will be
// stale.
func abandon(r *run) {
	if r.ended {
		return
	}
	r.ended = true
	r.stopTimers()
	r.stop()
	r.endSpan("", "", nil)
}
