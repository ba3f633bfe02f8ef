package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// KindResumed marks the re-dispatch of a run after the engine restarted.
const KindResumed record.Kind = "resumed"

// ErrCannotResume means an unfinished instance cannot be continued by this
// engine (its history or outbox is incomplete).
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
// continues from its last committed step: the work that step sent and that
// is still in the store's outbox — a run's dispatch or hand-off, the
// branches of a parallel state still owed a reply — is sent again with the
// same step number, idempotency key (instance:step) and hand-off id, so the
// state machine applies each transition once while an agent that runs the
// step again sees the key it saw before (agent side effects are
// at-least-once and deduplicable by that key). A failed run that was waiting
// for its retry is retried after its backoff; a parallel join keeps the
// replies committed before the crash and the deadline it had. Final notices
// of finished instances that no agent took are sent again too.
func (e *Engine) Resume(ctx context.Context) (ResumeReport, error) {
	return e.resumeWhere(ctx, nil)
}

func (e *Engine) resumeWhere(ctx context.Context, keep func(id string) bool) (ResumeReport, error) {
	if ctx == nil {
		return ResumeReport{}, errors.New("engine: nil context")
	}
	snaps, err := e.store.Instances(ctx)
	if err != nil {
		return ResumeReport{Failed: map[string]error{}}, fmt.Errorf("engine: resume: %w", err)
	}
	return e.resumeFrom(ctx, snaps, keep)
}

// resumeFrom resumes the instances of snaps (the store's list) that keep
// accepts, the family's children first.
func (e *Engine) resumeFrom(ctx context.Context, snaps []record.Snapshot, keep func(id string) bool) (ResumeReport, error) {
	rep := ResumeReport{Failed: map[string]error{}}
	if e.fam.root == e {
		// Children first: a parent resumed in a workflow state waits for a
		// child that runs again. keep applies to them too: a store that
		// splits instances into partitions keeps a child in its parent's.
		for _, m := range e.fam.members()[1:] {
			sub, err := m.resumeFrom(ctx, snaps, keep)
			if err != nil {
				return rep, err
			}
			rep.Resumed = append(rep.Resumed, sub.Resumed...)
			rep.OtherVersion = append(rep.OtherVersion, sub.OtherVersion...)
			maps.Copy(rep.Failed, sub.Failed)
		}
	}
	for _, snap := range snaps {
		if snap.Workflow != e.wf.Name || (keep != nil && !keep(snap.ID)) {
			continue
		}
		if snap.Hash != e.wf.Hash {
			if !snap.Status.Finished() {
				rep.OtherVersion = append(rep.OtherVersion, snap.ID)
			}
			continue
		}
		if _, running := e.instances.Load(snap.ID); running {
			continue
		}
		if keep != nil {
			// The list may come from a replica that lags (a store on a
			// cluster): an engine taking instances over reads each one
			// where its last step is written.
			fresh, err := e.store.Instance(ctx, snap.ID)
			if err != nil {
				rep.Failed[snap.ID] = err
				continue
			}
			snap = fresh
		}
		outbox, err := e.store.Outbox(ctx, snap.ID)
		if err == nil && snap.Status.Finished() {
			if len(outbox) == 0 {
				continue
			}
			err = e.resumeNotices(context.WithoutCancel(ctx), snap, outbox)
		} else if err == nil {
			var history []record.Entry
			if history, err = e.store.History(ctx, snap.ID); err == nil {
				err = e.resume(context.WithoutCancel(ctx), snap, history, outbox)
			}
		}
		if err != nil {
			rep.Failed[snap.ID] = err
			continue
		}
		rep.Resumed = append(rep.Resumed, snap.ID)
	}
	return rep, nil
}

// restored builds the in-memory instance of a committed snapshot.
func (e *Engine) restored(snap record.Snapshot, st *rules.State, seq int) *instance {
	i := &instance{
		e: e, id: snap.ID, status: snap.Status, state: st, step: snap.Step,
		visits: ownVisits(maps.Clone(snap.Visits)), input: orEmpty(snap.Input), context: orEmpty(snap.Context),
		outcome: snap.Outcome, created: snap.Created, commits: snap.Commits, seq: seq,
		child: parentOf(snap.ID) != "",
	}
	if i.visits.m == nil {
		i.visits.m = map[string]int{st.Name: 1}
	}
	if snap.Error != "" {
		i.err = errors.New(snap.Error)
	}
	if snap.Status == record.StatusCanceled {
		if snap.CancelReason != "" {
			i.more().cancelReason = snap.CancelReason
		}
		i.err = &FailedError{InstanceID: snap.ID, State: st.Name, Err: ErrCanceled}
	}
	if u := snap.Usage; u.Totals != (registry.Totals{}) || u.Visit != (registry.Totals{}) || len(u.Agents) > 0 {
		i.meter().ledger = snap.Usage
	}
	return i
}

// resumeNotices sends again the final notices of a finished instance that
// no agent took before the restart.
func (e *Engine) resumeNotices(ctx context.Context, snap record.Snapshot, outbox []record.Outgoing) error {
	st, ok := e.wf.State(snap.State)
	if !ok {
		return fmt.Errorf("%w %s: state %s is not in the workflow", ErrCannotResume, snap.ID, snap.State)
	}
	i := e.restored(snap, st, 0)
	i.closeDone()
	if _, loaded := e.instances.LoadOrStore(i.id, i); loaded {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, o := range outbox {
		if o.Kind != record.OutgoingNotice {
			i.settleLater(o.Key) // the work of a run the instance no longer has
			continue
		}
		if err := i.resend(ctx, o, nil); err != nil {
			return err
		}
	}
	i.settleOut = true
	i.commit(ctx)
	return nil
}

// resend puts an outbox item from before the restart back in the step's
// outbox, under its old key and hand-off id; r is the run it starts, nil
// for a notice.
func (i *instance) resend(ctx context.Context, o record.Outgoing, r *run) error {
	if o.Kind == record.OutgoingNotice {
		if i.notices == nil {
			i.notices = map[string]bool{}
		}
		i.notices[o.HandoffID] = true
		i.queue(sending{out: o, resent: true})
		return nil
	}
	r.handler = i.e.handler(r.agent)
	i.note(record.Entry{Kind: KindResumed, Step: r.step, State: r.state.Name, Agent: r.agent, From: r.from, Attempt: r.attempt, Priority: r.priority, Detail: r.description, Index: r.index})
	i.queue(sending{out: o, r: r, resent: true})
	i.arm(r)
	i.started(r, o.Rule, "resume")
	return nil
}

func (e *Engine) resume(ctx context.Context, snap record.Snapshot, history []record.Entry, outbox []record.Outgoing) error {
	st, ok := e.wf.State(snap.State)
	if !ok {
		return fmt.Errorf("%w %s: state %s is not in the workflow", ErrCannotResume, snap.ID, snap.State)
	}
	i := e.restored(snap, st, len(history))
	i.recentFrom(history)
	if _, loaded := e.instances.LoadOrStore(i.id, i); loaded {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.countRunning()
	i.startTrace(context.Background(), true)
	i.armDeadline()
	err := kindOf(st).resume(ctx, i, snap, history, outbox)
	if err != nil {
		e.instances.Delete(i.id)
		i.discard()
		i.finish()
		return err
	}
	i.commit(ctx)
	return nil
}

// discard drops the step being built of an instance that could not be
// resumed: nothing of it is committed or sent.
func (i *instance) discard() {
	if i.pending != nil {
		clear(*i.pending)
		*i.pending = (*i.pending)[:0]
		entryBuffers.Put(i.pending)
		i.pending = nil
	}
	i.out.dropItems()
	i.events = nil
	i.forgetNow()
}

// stepBefore is the last step recorded before history[begin].
func stepBefore(history []record.Entry, begin int) int {
	if begin == 0 {
		return 0
	}
	return history[begin-1].Step
}

// isOpen reports whether an outbox item with key is open.
func (i *instance) isOpen(key string) bool {
	for _, it := range i.out.open {
		if it.key == key {
			return true
		}
	}
	return false
}

// StoredWorkflow rebuilds the workflow an instance started on from the
// source the store keeps under its hash (Snapshot.Hash): with it, an engine
// of that version can be built to Resume the instances a newer version left
// alone (ResumeReport.OtherVersion), so that they finish on their own rules.
func StoredWorkflow(ctx context.Context, s record.Store, hash string) (*rules.Workflow, error) {
	if ctx == nil || s == nil {
		return nil, errors.New("engine: StoredWorkflow needs a context and a store")
	}
	src, err := s.Workflow(ctx, hash)
	if err != nil {
		return nil, err
	}
	w, err := rules.Parse(src.File, src.Source)
	if err != nil {
		return nil, fmt.Errorf("engine: stored workflow %s: %w", hash, err)
	}
	if w.Hash != hash {
		return nil, fmt.Errorf("engine: stored workflow %s: its source hashes to %s", hash, w.Hash)
	}
	return w, nil
}
