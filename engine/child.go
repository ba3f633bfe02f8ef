package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// MaxNesting is how deep child workflows may nest: a workflow state whose
// child would be nested deeper fails its instance.
const MaxNesting = 8

// family is the engines of a workflow and of every workflow its workflow
// states call, transitively: one engine per workflow name, sharing the
// store, the clock and the transport. The root engine owns it; the others
// are closed with the root. A shared family (a Family) has no root: its
// engines are built, resumed and closed by whoever built them, and a
// workflow state starts its child on the engine current names.
type family struct {
	mu      sync.Mutex
	root    *Engine
	engines map[string]*Engine // by workflow source hash, the root's included
	order   []*Engine          // the root first, then in the order built
	shared  bool
	current func(name string) *Engine // a shared family's engine for new children
	rooms   map[string]room           // by child instance id: what its ancestors' budgets leave it (see room)
}

// linkChildren builds the engines of the workflows e's workflow states call,
// with the options e was built with, on e's store and transport. The
// engines of a shared family are built by its owner.
func (e *Engine) linkChildren(reg *registry.Registry, opts []Option) error {
	if e.fam.shared {
		return nil
	}
	for _, st := range e.wf.States {
		if !st.Calls() {
			continue
		}
		target := st.Child.Target
		if target == nil {
			return fmt.Errorf("engine: state %s calls workflow %q, which was not loaded with it: load the workflows together with rules.LoadSet", st.Name, st.Child.Workflow)
		}
		if e.fam.engine(target.Name) != nil {
			continue
		}
		child := append(append([]Option{}, opts...), WithStore(e.store), WithTransport(e.tr), withFamily(e.fam))
		if _, err := New(target, reg, child...); err != nil {
			return fmt.Errorf("engine: child workflow %s: %w", target.Name, err)
		}
	}
	return nil
}

// join adds e to the family, under its workflow's source hash.
func (f *family) join(e *Engine) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.engines == nil {
		f.engines = map[string]*Engine{}
		if !f.shared {
			f.root = e
		}
	}
	if _, ok := f.engines[e.wf.Hash]; !ok {
		f.engines[e.wf.Hash] = e
	}
	f.order = append(f.order, e)
}

// leave takes a closed engine out of a shared family.
func (f *family) leave(e *Engine) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.order = slices.DeleteFunc(f.order, func(m *Engine) bool { return m == e })
	if f.engines[e.wf.Hash] == e {
		delete(f.engines, e.wf.Hash)
		for _, m := range f.order {
			if m.wf.Hash == e.wf.Hash {
				f.engines[m.wf.Hash] = m
				break
			}
		}
	}
}

// engine returns the engine that starts new children of the workflow named
// name: the family's engine of that name, or what a shared family's owner
// names.
func (f *family) engine(name string) *Engine {
	if f.shared {
		if f.current == nil {
			return nil
		}
		return f.current(name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.order {
		if e.wf.Name == name {
			return e
		}
	}
	return nil
}

// version returns the engine of the workflow version with source hash.
func (f *family) version(hash string) *Engine {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.engines[hash]
}

// of returns the engine of the instance snap, among the family.
func (f *family) of(snap record.Snapshot) *Engine {
	if m := f.version(snap.Hash); m != nil {
		return m
	}
	if f.shared {
		return nil
	}
	return f.engine(snap.Workflow)
}

// members returns the engines of the family, the root first.
func (f *family) members() []*Engine {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Engine(nil), f.order...)
}

// running finds the engine that runs instance id, among the family.
func (f *family) running(id string) (*Engine, *instance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.order {
		if v, ok := e.instances.Load(id); ok {
			return e, v
		}
	}
	return nil, nil
}

// Workflows returns the workflows the engine runs: its own first, then
// those its workflow states call, transitively.
func (e *Engine) Workflows() []*rules.Workflow {
	var out []*rules.Workflow
	for _, m := range e.fam.members() {
		out = append(out, m.wf)
	}
	return out
}

// childRun is the child instance a workflow state waits for.
type childRun struct {
	id    string
	state *rules.State
	eng   *Engine
	since time.Time
	timer clock.Timer
}

// childID is the id of the child a workflow state starts: the parent's id,
// the state and the visit. Under a parent id near record.MaxIDLen it is
// longer than a caller may choose: that limit is for chosen ids, and the
// stores take longer ones (natsstore hashes them in its subjects).
func childID(parent, state string, visit int) string {
	return fmt.Sprintf("%s/%s/%d", parent, state, visit)
}

// parentOf returns the id of the parent of a child instance id, "" for an
// instance that is no child.
func parentOf(id string) string {
	k := strings.LastIndexByte(id, '/')
	if k < 0 {
		return ""
	}
	k = strings.LastIndexByte(id[:k], '/')
	if k < 0 {
		return ""
	}
	return id[:k]
}

// nesting counts the parents of an instance id.
func nesting(id string) int { return strings.Count(id, "/") / 2 }

// workflowKind is the kind of a workflow state: a child instance of
// another workflow, waited for (see childRun).
type workflowKind struct{}

// enter enters a workflow state: it starts the child instance with the
// state's input (the parent's context without one) and arms the state's
// timeout. Entering is not a step: the child's runs count in the child.
func (workflowKind) enter(ctx context.Context, i *instance, d dispatch) {
	st := i.state
	i.run = nil
	target := i.e.fam.engine(st.Child.Workflow)
	id := childID(i.id, st.Name, i.visits.m[st.Name])
	if target == nil {
		i.decide(ctx, "error", nil, rules.ErrorInfo{Message: fmt.Sprintf("child workflow %s is not run here", st.Child.Workflow), Kind: "child_failed"})
		return
	}
	if nesting(id) > MaxNesting {
		i.fail(fmt.Errorf("engine: state %s would nest workflow %s deeper than %d levels", st.Name, target.wf.Name, MaxNesting))
		return
	}
	env := rules.Env{
		Result: orEmpty(d.previous), Input: i.input, Context: i.context,
		State: st.Name, Agent: st.Name, Step: i.step, Visits: i.visits.m, Usage: i.usage().Totals,
	}
	input, err := st.Child.EvalInput(st.Name, &env)
	if err != nil {
		i.fail(fmt.Errorf("engine: %w", err))
		return
	}
	c := &childRun{id: id, state: st, eng: target, since: i.e.clock.Now()}
	i.work = c
	i.note(record.Entry{Kind: record.KindChild, State: st.Name, Agent: target.wf.Name, Detail: id, Result: input, Delay: st.Timeout})
	i.armChild(c, st.Timeout)
	i.e.fam.leaveRoom(id, i.childRoom())
	i.launchChild(ctx, c, input)
}

// launchChild starts the child instance of c; a child that exists already
// (started before a crash) is taken up, and one that has finished reports
// at once.
func (i *instance) launchChild(ctx context.Context, c *childRun, input map[string]any) {
	_, err := c.eng.start(ctx, c.id, input, false)
	switch {
	case err == nil:
	case errors.Is(err, ErrDuplicateInstance):
		c.eng.notifyIfFinished(ctx, c.id)
	default:
		i.work = nil
		c.stop()
		i.decide(ctx, "error", nil, rules.ErrorInfo{Message: fmt.Sprintf("child %s did not start: %v", c.id, err), Kind: "child_failed"})
	}
}

// notifyIfFinished tells the parent of child id that it has finished, when
// the store says so.
func (e *Engine) notifyIfFinished(ctx context.Context, id string) {
	if snap, err := e.store.Instance(ctx, id); err == nil && snap.Status.Finished() {
		e.notifyParent(id)
	}
}

// notifyParent tells the parent of child instance id, later and in another
// step, that the child has finished: the child's lock is never held while
// the parent's is taken (a parent takes its child's lock to cancel it).
func (e *Engine) notifyParent(id string) {
	parent := parentOf(id)
	if parent == "" || e.fam == nil {
		return
	}
	e.exec.Submit(func() {
		pe, p := e.fam.running(parent)
		if p == nil || pe.closed.Load() {
			return
		}
		p.childDone(pe.ctx, id)
	})
}

// stop stops the timeout of the child the parent no longer waits for, and
// forgets the room it left it.
func (c *childRun) stop() {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.eng.fam.dropRoom(c.id)
}

// armChild arms the workflow state's timeout to fire after left.
func (i *instance) armChild(c *childRun, left time.Duration) {
	if c.state.Timeout <= 0 {
		return
	}
	c.timer = i.e.clock.AfterFunc(max(left, 0), func() {
		i.e.exec.Submit(func() { i.childTimedOut(i.e.ctx, c) })
	})
}

// childTimedOut cancels the child c, if the instance still waits for it,
// and produces the outcome timeout.
func (i *instance) childTimedOut(ctx context.Context, c *childRun) {
	if i.e.closed.Load() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.status.Finished() || i.work != c {
		return
	}
	i.work = nil
	c.eng.fam.dropRoom(c.id)
	c.eng.cancelChild(ctx, c.id)
	if snap, err := c.eng.store.Instance(ctx, c.id); err == nil {
		i.childSpent(snap.Usage)
	}
	msg := fmt.Sprintf("child %s did not finish within %s", c.id, c.state.Timeout)
	i.decide(ctx, "timeout", nil, rules.ErrorInfo{Message: msg, Kind: "timeout"})
	i.commit(ctx)
}

// cancelChild cancels child instance id, if it runs.
func (e *Engine) cancelChild(ctx context.Context, id string) {
	if v, ok := e.instances.Load(id); ok {
		_ = v.cancel(ctx, "its parent stopped waiting for it")
	}
}

// childDone takes the end of the child id: its terminal state is the
// outcome (its final context the result); a child that failed or was
// cancelled is the outcome error with kind child_failed.
func (i *instance) childDone(ctx context.Context, id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	c, _ := i.work.(*childRun)
	if i.status.Finished() || c == nil || c.id != id {
		return
	}
	snap, err := c.eng.store.Instance(ctx, id)
	if err != nil || !snap.Status.Finished() {
		return
	}
	i.work = nil
	c.stop()
	i.childSpent(snap.Usage)
	if snap.Status == record.StatusCanceled && i.childOverBudget(ctx, c) {
		i.commit(ctx)
		return
	}
	if snap.Status == record.StatusCompleted {
		i.decide(ctx, snap.Outcome, maps.Clone(orEmpty(snap.Context)), rules.ErrorInfo{})
	} else {
		msg := fmt.Sprintf("child %s %s: %s", id, snap.Status, snap.Error)
		i.decide(ctx, "error", nil, rules.ErrorInfo{Message: msg, Kind: "child_failed"})
	}
	i.commit(ctx)
}

// end cancels the child the instance waits for: the parent has left the
// state (cancelled, failed, over a budget) without it.
func (c *childRun) end(ctx context.Context) {
	c.stop()
	c.eng.cancelChild(ctx, c.id)
}

// A child's runs are its own instance's.
func (c *childRun) run(int) *run { return nil }
func (c *childRun) runDone(context.Context, *instance, *run, registry.Outcome, error, bool, bool) {
}
func (c *childRun) sendFailed(context.Context, *instance, *run, error) {}
func (c *childRun) progress(out []RunProgress) []RunProgress           { return out }

func (c *childRun) pending(buf []Pending) []Pending {
	name := ""
	if c.eng != nil {
		name = c.eng.wf.Name
	}
	return append(buf, Pending{Kind: PendingChild, State: c.state.Name, Agent: name, Child: c.id, Since: c.since, Deadline: deadline(c.since, c.state.Timeout)})
}

// resume continues a workflow state after a restart: the child started
// before the crash is waited for again (the child's engine resumes it), one
// that finished meanwhile reports now, and one the crash kept from starting
// starts now with the input the history recorded. The state's deadline
// stays where it was.
func (workflowKind) resume(ctx context.Context, i *instance, _ record.Snapshot, history []record.Entry, outbox []record.Outgoing) error {
	st := i.state
	var started *record.Entry
	for k := len(history) - 1; k >= 0; k-- {
		e := &history[k]
		if e.Kind == record.KindChild && e.State == st.Name {
			started = e
			break
		}
		if e.Kind == record.KindTransition && e.Next == st.Name {
			break
		}
	}
	if started == nil {
		return fmt.Errorf("%w %s: no child of state %s in its history", ErrCannotResume, i.id, st.Name)
	}
	for _, o := range outbox {
		if o.Kind == record.OutgoingNotice {
			if err := i.resend(ctx, o, nil); err != nil {
				return err
			}
			continue
		}
		i.settleLater(o.Key)
	}
	// The child started before the crash runs on its own version; one the
	// crash kept from starting starts on the version new children take.
	target := i.e.fam.engine(st.Child.Workflow)
	if snap, err := i.e.store.Instance(ctx, started.Detail); err == nil {
		if m := i.e.fam.of(snap); m != nil {
			target = m
		}
	}
	if target == nil {
		return fmt.Errorf("%w %s: no engine runs its child workflow %s", ErrCannotResume, i.id, st.Child.Workflow)
	}
	c := &childRun{id: started.Detail, state: st, eng: target, since: started.Time}
	i.run = nil
	i.work = c
	left := c.since.Add(st.Timeout).Sub(i.e.clock.Now())
	if st.Timeout > 0 && left <= 0 {
		i.work = nil
		target.cancelChild(ctx, c.id)
		i.decide(ctx, "timeout", nil, rules.ErrorInfo{Message: fmt.Sprintf("child %s did not finish within %s", c.id, st.Timeout), Kind: "timeout"})
		return nil
	}
	i.armChild(c, left)
	i.e.fam.leaveRoom(c.id, i.childRoom())
	if _, err := target.store.Instance(ctx, c.id); err != nil {
		i.launchChild(ctx, c, started.Result)
		return nil
	}
	target.notifyIfFinished(ctx, c.id)
	return nil
}
