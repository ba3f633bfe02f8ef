package engine

import (
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"

	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// instance is the engine's record of one workflow instance. Every field is
// guarded by mu; a step (an outcome processed, a retry, a timeout) holds mu
// from start to commit, so the steps of one instance are serial while
// different instances never share a lock.
type instance struct {
	e  *Engine
	id string

	mu         sync.Mutex
	status     record.Status
	state      *rules.State
	step       int
	visits     *visits // never changed in place: committed snapshots share its map
	input      map[string]any
	context    map[string]any // copy-on-write
	used       *instanceUsage // what the runs used (see usage); nil while they used nothing
	run        *run           // the current run of an agent's state (agentKind)
	work       visit          // the work under way of any other kind of state
	outcome    string
	err        error
	created    time.Time
	commits    int
	seq        int
	pending    *[]record.Entry // the step's entries, in a pooled buffer; nil between steps
	stepTime   time.Time       // the time of the step being built (see now); zero between steps
	events     []Event
	spareTimer *runTimer                     // a stopped run timeout, for the next run (see runTimer)
	firstTimer runTimer                      // the first run timeout, held in the instance (one allocation less)
	rare       *instanceRare                 // what few instances have; nil until one is needed
	notices    map[string]bool               // hand-off ids of final notices not yet taken
	recent     []string                      // targets of the last hand-offs, oldest first (the loop window)
	out        outbox                        // the step's outbox and the items the store holds unsettled
	commitErr  error                         // the store refused a step: nothing more is committed
	reserved   *lane                         // the lane room Start reserved for the first run
	traced     *instanceTrace                // the instance's span and span context; nil when it has neither
	done       atomic.Pointer[chan struct{}] // see doneChan
	// The flags sit together: an instance is 512 bytes, one size class
	// less than with each padded on its own.
	closing   bool // finished: done closes once the final step is committed
	forgotten bool // finished and out of the engine's map
	// roomChecked is set while Start builds the first step of an instance
	// whose room it checked (RoomTeller): the first work is patient.
	roomChecked bool
	counted     bool // counted in the engine's running instances
	// child is set for a child instance (its id has a parent): read at
	// every decision, where reading the id's bytes was a cache miss.
	child bool
	// sparePending is set while the spare timer, taken from a run that
	// ended in this step, is still pending (see stopLater).
	sparePending bool
	settleOut    bool // an outbox item was settled outside a step: the next commit writes it
}

// instanceRare is what few instances have, kept apart so that an instance
// is 448 bytes, not 512: a retry's backoff, the max_duration timer, the
// words of a cancel.
type instanceRare struct {
	retry        clock.Timer
	deadline     clock.Timer // the max_duration timer
	cancelReason string      // the words given with a cancel
}

// more returns the instance's rare part, made if it has none.
func (i *instance) more() *instanceRare {
	if i.rare == nil {
		i.rare = new(instanceRare)
	}
	return i.rare
}

// stopRetry stops a retry's backoff, if one is under way.
func (i *instance) stopRetry() {
	if x := i.rare; x != nil && x.retry != nil {
		x.retry.Stop()
		x.retry = nil
	}
}

// run is one run of an agent: a step.
type run struct {
	step, attempt int
	state         *rules.State
	agent         string
	from          string // the agent that handed off; "" for the engine's own dispatches
	handoffID     string
	description   string
	reason        string
	priority      int
	previous      map[string]any
	constraints   map[string]any
	handler       registry.Handler
	timer         *runTimer    // its timeout, in a state with a timeout
	beat          clock.Timer  // the heartbeat an external run owes, in a state with a heartbeat
	ctx           *runContext  // a Go handler's context (in its take), once a runner took the run
	sent          time.Time    // when its work was sent, when the engine has observers
	span          trace.Span   // the run's span; nil when the engine does not trace
	progress      *runProgress // the latest progress its agent sent; never in the history
	rare          *runRare     // what few runs have (see runRare); nil until needed
	since         time.Time    // when its timeout was last armed: its work sent (or sent again after a restart)

	key           string         // the idempotency key, instance:step
	handoffReason handoff.Reason // the hand-off's reason; "" = rule
	payload       map[string]any
	index         int // for an item run: the item's index
	item          any // for an item run: the item

	// The flags and the kind sit together, in one word (a run is
	// allocated at every step that cannot reuse one).
	kind          runKind
	taken         bool
	ended         bool
	running       bool // a Go handler has the run
	notice        bool // a final notice: a hand-off into a terminal state, not a run
	returned      bool // dispatched by return_control: the delegate's result going back
	byRule        bool // sent by a rule with no agent handing over (after a wait, a foreach, a child)
	returnControl bool // for a delegate: its result goes back to the delegator
}

// runRare is what few runs have, kept apart so that a run is 352 bytes,
// not 384 (a run is allocated at most steps an instance does not reuse
// its run for, see reusableRun).
type runRare struct {
	delegator string      // for a delegate: the agent that delegated
	resend    clock.Timer // the next send of work the transport could not take (sendLater)
}

// more returns the run's rare part, made if it has none.
func (r *run) more() *runRare {
	if r.rare == nil {
		r.rare = new(runRare)
	}
	return r.rare
}

// delegator is the agent that delegated a delegate's run; "" for others.
func (r *run) delegator() string {
	if r.rare == nil {
		return ""
	}
	return r.rare.delegator
}

// stopTimers stops the run's timeout and heartbeat timers.
func (r *run) stopTimers() {
	if rt := r.timer; rt != nil {
		r.timer = nil
		rt.stop()
	}
	if r.beat != nil {
		r.beat.Stop()
	}
	if x := r.rare; x != nil && x.resend != nil {
		x.resend.Stop()
	}
}

// stop cancels the context of the Go handler running r, if one is.
func (r *run) stop() {
	if r.running {
		r.ctx.cancel()
	}
}

// take is what a Go handler is given for a run, its task and its context,
// in one allocation of its own: the handler may keep either, so neither
// lives in the run, which the instance's next step may reuse (see
// agentKind.enter).
type take struct {
	task registry.Task
	ctx  runContext
}

// runProgress is the latest progress a run's agent sent, and when.
type runProgress struct {
	p  registry.Progress
	at time.Time
}

// runKind tells the state's own runs from the runs of delegates and of
// parallel branches.
type runKind uint8

const (
	runState    runKind = iota // the state's agent working in its state
	runDelegate                // an agent working for the state's agent (dynamic hand-off, user selection)
	runBranch                  // one branch of a parallel state
	runItem                    // one item of a foreach state
)

var emptyMap = map[string]any{}

func newInstance(e *Engine, id string, input map[string]any) *instance {
	st, _ := e.wf.State(e.wf.Initial)
	return &instance{
		e: e, id: id, status: record.StatusRunning, state: st,
		visits: e.visits.first, input: input, context: emptyMap, // never changed in place
		created: e.clock.Now(), child: parentOf(id) != "",
	}
}

// doneClosed stands for the done channel of an instance that ended before
// anyone asked for it.
var doneClosed = &closedChan

// doneChan returns the channel closed when the instance is done. It is made
// when first asked for: most instances end before anyone waits on them
// (one allocation per instance, for nothing), and those then share one
// closed channel. No lock is taken, as none was to read the channel before.
func (i *instance) doneChan() <-chan struct{} {
	if p := i.done.Load(); p != nil {
		return *p
	}
	c := make(chan struct{})
	if i.done.CompareAndSwap(nil, &c) {
		return c
	}
	return *i.done.Load() // made, or closed, meanwhile
}

// closeDone closes the done channel, or marks it closed if none was made;
// it reports whether this call did (it happens once). The caller holds
// i.mu, or has the instance to itself.
func (i *instance) closeDone() bool {
	p := i.done.Swap(doneClosed)
	if p == doneClosed {
		return false
	}
	if p != nil {
		close(*p)
	}
	return true
}

// note appends a history entry to the step being built.
func (i *instance) note(en record.Entry) {
	i.seq++
	en.Seq = i.seq
	en.Time = i.now()
	if en.Step == 0 {
		en.Step = i.step
	}
	if i.pending == nil {
		i.pending = entryBuffers.Get().(*[]record.Entry)
	}
	*i.pending = append(*i.pending, en)
}

// now is the time of the step being built: the clock is read once per
// step, and the step's entries, timers and snapshot share that time. commit
// and discard forget it, so the next step reads the clock again.
func (i *instance) now() time.Time {
	if i.stepTime.IsZero() {
		i.stepTime = i.e.clock.Now()
	}
	return i.stepTime
}

// envs recycles the rules.Env a decision reads: Decide keeps nothing of it.
var envs = sync.Pool{New: func() any { return new(rules.Env) }}

// rejectOf returns err's *registry.RejectError, if it is a rejection,
// without a heap allocation for a run that did not fail.
func rejectOf(err error) *registry.RejectError {
	if err == nil {
		return nil
	}
	var rej *registry.RejectError
	if errors.As(err, &rej) {
		return rej
	}
	return nil
}

// entryBuffers recycles the buffers a step's entries are built in: stores
// copy the entries they keep, so a buffer is free again once committed.
var entryBuffers = sync.Pool{New: func() any { b := make([]record.Entry, 0, 16); return &b }}

// commit writes the step being built through the store — its snapshot,
// entries and outbox in one record.Step — then sends the outbox, in the
// order it was queued, and tells the observers. It is called once at the
// end of every step. Work the transport cannot take for now is sent again
// later; work it refuses fails its run (or, for a notice, is noted), which
// is a step of its own, committed in turn.
func (i *instance) commit(ctx context.Context) {
	if i.commitErr != nil {
		i.discard() // the store refused this instance: nothing more is written or sent
		return
	}
	defer i.forgetNow()
	for i.pending != nil || len(i.events) > 0 || len(i.out.items()) > 0 || i.settleOut {
		i.settleOut = false
		if err := i.commitStep(ctx); err != nil {
			i.commitFailed(err)
			break
		}
		buf, failed := i.out.takeItems(), false
		var out []sending
		if buf != nil {
			out = *buf
		}
		for k := range out {
			s := &out[k]
			if err := i.send(ctx, s); err != nil {
				if s.later(err) {
					i.sendLater(*s, err, sendAgainFirst)
					continue
				}
				failed = true
				i.sendFailed(ctx, s, err)
			}
		}
		putItems(buf)
		for _, ev := range i.events {
			i.e.emit(ev)
		}
		i.events = i.events[:0]
		if !failed {
			break
		}
	}
	i.release()
}

// commitAttempts is how many times a step's commit is tried before the
// instance gives up on it.
const commitAttempts = 3

// commitStep writes the step being built through the store; a refusal is
// tried again, commitAttempts times in all.
func (i *instance) commitStep(ctx context.Context) (err error) {
	i.commits++
	snap := record.Snapshot{
		ID: i.id, Workflow: i.e.wf.Name, Version: i.e.wf.Version, Hash: i.e.wf.Hash,
		Status: i.status, State: i.state.Name, Outcome: i.outcome, Step: i.step,
		Visits: i.visits.m, Input: i.input, Context: i.context,
		Created: i.created, Updated: i.now(), Commits: i.commits, Usage: i.usage(),
	}
	if i.run != nil {
		snap.Attempt = i.run.attempt
	}
	if i.err != nil && i.status != record.StatusCanceled {
		// A cancelled instance did not fail: its record holds the
		// reason it was given, not an error.
		snap.Error = i.err.Error()
	}
	if i.rare != nil {
		snap.CancelReason = i.rare.cancelReason
	}
	i.dropOver()
	rec := record.Step{Snapshot: snap, Settled: i.settled()}
	if i.pending != nil {
		rec.Entries = *i.pending
	}
	var outBuf *[]record.Outgoing
	if items := i.out.items(); len(items) > 0 {
		outBuf = outgoingBufs.Get().(*[]record.Outgoing)
		outs := (*outBuf)[:0]
		for k := range items {
			o := &items[k].out
			if o.Created.IsZero() {
				o.Created = snap.Updated // the step's time; a resent item keeps its own
			}
			outs = append(outs, *o)
		}
		rec.Outbox = outs
	}
	for range commitAttempts {
		if err = i.e.store.Commit(ctx, rec); err == nil || errors.Is(err, ErrNotOwner) {
			break
		}
		i.e.log.Warn("engine: commit refused by the store", zap.String("instance", i.id), zap.Int("step", i.step), zap.Error(err))
	}
	if outBuf != nil {
		clear(rec.Outbox)
		*outBuf = rec.Outbox[:0]
		outgoingBufs.Put(outBuf)
	}
	if i.pending != nil {
		// Not cleared: clearing entries of nineteen pointers each was 2% of
		// a step. What they point to (strings, results) stays reachable
		// until later steps overwrite those places or the pool drops the
		// buffer (after two collections unused): at most a buffer's sixteen
		// entries' worth for each buffer the pool holds.
		*i.pending = rec.Entries[:0]
		entryBuffers.Put(i.pending)
		i.pending = nil
	}
	return err
}

// commitFailed gives up on an instance whose step the store refused every
// time: none of the step's work is sent and none of its events told; the
// instance fails in memory with a *CommitError and leaves the engine, while
// the store keeps it at its last committed step. The engine resumes it from
// there by itself (recoverLater), trying again with a growing pause while
// the store refuses; Resume continues it too. An instance whose very first
// step was refused was never accepted: Start returns the error, unless the
// store holds that step after all (startRefused).
func (i *instance) commitFailed(err error) {
	if i.notOwned(err) {
		return
	}
	cerr := &CommitError{InstanceID: i.id, Step: i.step, Err: err}
	i.e.log.Error("engine: step not committed; the instance stops here and resumes from its last committed step",
		zap.String("instance", i.id), zap.Int("step", i.step), zap.Error(err))
	i.out.dropItems()
	i.events = i.events[:0]
	i.commitErr = cerr
	i.status = record.StatusFailed
	i.err = &FailedError{InstanceID: i.id, State: i.state.Name, Err: cerr}
	i.notices = nil
	if v := i.work; v != nil {
		// Stopped, not ended: a child runs on, and the instance resumes
		// from its last committed step and finds it again (its id is the
		// state's and the visit's), as after a restart. Cancelling it
		// would end the step the store never wrote.
		i.work = nil
		v.stop()
	}
	i.finish()
	if i.commits > 1 && !i.e.closed.Load() {
		i.e.recoverAfter(i.id) // not a start the store refused: that one was never accepted
	}
	if i.e.observed() {
		i.e.emit(Event{
			Type: EventFailed, InstanceID: i.id, Workflow: i.e.wf.Name, Version: i.e.wf.Version, Step: i.step,
			State: i.state.Name, Agent: i.state.Agent, Time: i.e.clock.Now(), Kind: "commit", Err: i.err,
			Duration: i.e.clock.Now().Sub(i.created),
		})
	}
}

// forgetNow ends the step's time (see now).
func (i *instance) forgetNow() { i.stepTime = time.Time{} }

// release closes done once the step that finished the instance has been
// committed and its events delivered, so that Wait never returns before
// History and the observers show how the instance ended.
//
// A finished instance leaves the engine's map once no final notice of it
// waits to be taken: what is left of it is in the store, and in the handles
// that still point at it.
func (i *instance) release() {
	if i.closing {
		i.closing = false
		// Closed once: a second finish of an instance (seen with a slower
		// store, a cancelled handler's late reply) must not panic.
		if i.closeDone() {
			i.e.notifyParent(i.id)
		}
	}
	if i.status.Finished() && len(i.notices) == 0 && !i.forgotten {
		i.forgotten = true
		i.e.instances.Delete(i.id)
	}
}

// begin enters the initial state and dispatches its first run.
func (i *instance) begin(ctx context.Context) {
	i.note(record.Entry{Kind: record.KindStarted, State: i.state.Name, Detail: i.e.wf.Name, Result: i.input})
	i.countRunning()
	i.armDeadline()
	i.event(Event{Type: EventInstanceStarted})
	i.event(Event{Type: EventStateChanged, To: i.state.Name})
	kindOf(i.state).enter(ctx, i, dispatch{attempt: 1, description: i.e.startDescription, reason: "start", priority: 5})
	i.commit(ctx)
}

// dispatch says how a new run comes about.
type dispatch struct {
	rule        *rules.Rule // the rule that entered the state; nil for engine dispatches
	from        string      // the agent handing off; "" for engine dispatches
	attempt     int
	description string
	reason      string
	priority    int
	previous    map[string]any
	constraints map[string]any
	// items are the items of the foreach state entered, as Decide
	// evaluated them (itemsSet), or why they could not be.
	items    []any
	itemsErr error
	itemsSet bool
}

// launch prepares a run's work — a hand-off the validator checks when
// another agent hands over, the engine's own dispatch otherwise — and puts
// it in the step's outbox, to be sent once the step has committed; it arms
// the state's timeout. Only a refused hand-off is an error here: the bus's
// refusals come after the commit (see commit).
func (i *instance) launch(ctx context.Context, r *run, rule *rules.Rule) error {
	st := r.state
	r.handler = i.e.handler(r.agent)
	r.key = registry.StepKey(i.id, r.step)
	r.byRule = rule != nil && r.from == ""
	if r.from != "" {
		if err := i.checkHandoff(r); err != nil {
			return err
		}
		r.handoffID = r.key
		i.noteHandoff(r.agent)
		i.logHandoff(r)
		i.note(record.Entry{Kind: record.KindHandoff, Step: r.step, State: st.Name, Agent: r.agent, From: r.from, To: r.agent, Rule: ruleID(rule), HandoffID: r.handoffID, Priority: r.priority, Detail: r.description, Reason: handoffReason(r), Result: r.payload})
		i.event(Event{Type: EventAgentHandoff, Step: r.step, From: r.from, To: r.agent, Rule: ruleID(rule)})
	} else {
		i.note(record.Entry{Kind: record.KindDispatch, Step: r.step, State: st.Name, Agent: r.agent, Attempt: r.attempt, Priority: r.priority, Detail: r.description, Index: r.index})
	}
	i.queue(sending{out: i.outgoing(r, rule), r: r})
	i.arm(r)
	i.started(r, ruleID(rule), r.reason)
	return nil
}

// arm starts the timeout of a run's state, and for an external agent's
// run the heartbeat the state asks for.
func (i *instance) arm(r *run) {
	r.since = i.now()
	if d := r.state.Timeout; d > 0 {
		i.armTimeout(r, d)
	}
	i.armBeat(r)
}

// armBeat (re)starts the heartbeat timer of an external agent's run in a
// state with a heartbeat: when it fires, the run has failed with kind
// heartbeat.
func (i *instance) armBeat(r *run) {
	hb := r.state.Heartbeat
	if hb <= 0 || r.handler != nil || r.notice {
		return
	}
	if r.beat != nil {
		r.beat.Stop()
	}
	r.beat = i.e.clock.AfterFunc(hb, func() {
		i.e.exec.Submit(func() { i.heartbeatMissed(i.e.ctx, r) })
	})
}

// heartbeatMissed fails the run r, if it is still under way, for want of a
// heartbeat.
func (i *instance) heartbeatMissed(ctx context.Context, r *run) {
	if i.e.closed.Load() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.active(r.step) != r {
		return
	}
	err := registry.Kind(fmt.Errorf("%w: %s sent no heartbeat within %s", ErrTimeout, r.agent, r.state.Heartbeat), "heartbeat")
	_ = i.finishLocked(ctx, r, r.step, registry.Outcome{}, err, false)
}

// active returns the run of step if it is still under way.
func (i *instance) active(step int) *run {
	if i.status.Finished() {
		return nil
	}
	if r := i.run; r != nil && r.step == step && !r.ended {
		return r
	}
	if i.work != nil {
		if r := i.work.run(step); r != nil && !r.ended {
			return r
		}
	}
	return nil
}

// futureStep is an ErrFutureStep error when step is one the instance has
// not reached, nil otherwise; i.mu is held. A finished instance's final
// notice goes out under the step after its last (see finalNotice): a
// second report of it is stale, not invalid.
func (i *instance) futureStep(step int) error {
	reached := i.step
	if i.status.Finished() {
		reached++
	}
	if step <= reached {
		return nil
	}
	return fmt.Errorf("%w: step %d of instance %s, which is at step %d", ErrFutureStep, step, i.id, i.step)
}

// pastThisCopy answers a report for a step past the one this copy of the
// instance holds (future, an ErrFutureStep error). Work for a step goes out
// only once an engine has committed it, so such a report means either a
// report that fits no work, or a copy that fell behind the store: another
// engine sharing the store took the instance over and moved it on, while
// this one has not yet learnt it lost the instance (a commit whose answer
// was lost, a lease not yet seen gone). Answered invalid, the agent would
// drop the outcome for good. So the store is asked: when it holds step (or
// a later commit than this copy), the copy is stale — it is released, the
// engine resumes the instance from the store if it still owns it, and the
// report is answered unknown_instance, so that the agent keeps its outcome
// and reports it again to the engine that holds the instance now. When the
// store cannot tell, the answer is unknown_instance too. Only a step the
// store has not reached either is invalid. i.mu is held.
func (i *instance) pastThisCopy(ctx context.Context, step int, future error) error {
	if i.forgotten {
		return future // read back from the store just now: it is the store's answer
	}
	snap, err := i.e.store.Instance(ctx, i.id)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: step %d is past this engine's step %d, and the store cannot tell which is current: %w",
			ErrUnknownInstance, i.id, step, i.step, err)
	case snap.Step < step && snap.Commits <= i.commits:
		return future
	}
	stale := fmt.Errorf("%w: %s: the store holds step %d (commit %d), this engine's copy step %d (commit %d): another engine moved it on",
		ErrNotOwner, i.id, snap.Step, snap.Commits, i.step, i.commits)
	i.e.log.Warn("engine: a report for a step past this engine's copy of the instance, which the store holds; the copy is released and the instance resumed from the store",
		zap.String("instance", i.id), zap.Int("report_step", step), zap.Int("step", i.step), zap.Int("store_step", snap.Step))
	i.releaseLocked(&CommitError{InstanceID: i.id, Step: i.step, Err: stale})
	if !i.e.closed.Load() {
		i.e.recoverLater(i.id, recoverFirst) // resumed here only if this engine still owns it
	}
	return fmt.Errorf("%w: %w", ErrUnknownInstance, stale)
}

// takeRun marks the run of step as taken by a worker and returns what the
// handler needs, or ok=false if that run is no longer current. In a state
// with a timeout, start is when the run began, read once for the task's
// deadline and for the timeout's check (see finishRunAt).
func (i *instance) takeRun(step int) (task *registry.Task, h registry.Handler, ctx context.Context, start time.Time, timeout time.Duration, ok bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.active(step)
	if r == nil || r.taken || r.handler == nil {
		return nil, nil, nil, time.Time{}, 0, false
	}
	r.taken = true
	tk := new(take)
	tk.ctx.Context = i.handlerContext(r)
	r.ctx, r.running = &tk.ctx, true
	timeout = r.state.Timeout
	if timeout > 0 {
		start = i.e.clock.Now()
	}
	task = &tk.task
	i.fillTask(task, r, start)
	if r.span != nil || i.spanContext().IsValid() {
		task.Traceparent = i.traceparent(r)
	}
	return task, r.handler, &tk.ctx, start, timeout, true
}

// finishRun ends the run of step with the agent's outcome or error.
func (i *instance) finishRun(ctx context.Context, step int, out registry.Outcome, runErr error, timedOut bool) error {
	if i.e.closed.Load() {
		return ErrClosed // the instance stays as it was
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.finishLocked(ctx, i.active(step), step, out, runErr, timedOut)
}

// finishRunAt is finishRun for a Go handler's run that began at start, in
// a state with the given timeout (0 for none): the clock is read once,
// under the lock, both for whether the run overran its timeout and as the
// time of the step that follows (see now), so that no step committed
// meanwhile can carry a later time. A path that commits nothing (a late
// reply) leaves no step time behind.
func (i *instance) finishRunAt(ctx context.Context, step int, out registry.Outcome, runErr error, start time.Time, timeout time.Duration) error {
	if i.e.closed.Load() {
		return ErrClosed
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	defer i.forgetNow()
	end := i.now()
	timedOut := timeout > 0 && end.Sub(start) > timeout
	return i.finishLocked(ctx, i.active(step), step, out, runErr, timedOut)
}

// finishLocked is finishRun with i.mu held and r, the run of step under
// way (i.active(step)), already looked up: it ends r with the agent's
// outcome or error (ran), hands the outcome on, and commits the step. A
// branch or an item goes to the state's visit; the run of an agent's state
// (the state's agent, a delegate, or the delegator given control back) is
// a hand-off the agent asked for, a delegate's answer, a failure the retry
// policy decides on, or the trigger the rules match. No run under way: a
// late reply (late).
func (i *instance) finishLocked(ctx context.Context, r *run, step int, out registry.Outcome, runErr error, timedOut bool) error {
	if i.commitErr != nil {
		// Released (another engine owns it now) or refused by the store:
		// the outcome is for the engine that resumes the instance to take.
		return notCommitted(i.id, step, i.commitErr)
	}
	if r == nil {
		return i.late(ctx, step, out, runErr, timedOut)
	}
	reject := rejectOf(runErr)
	out, runErr = i.ran(r, out, runErr, timedOut)
	switch v := i.work; {
	case v != nil:
		// Its visit takes the outcome, unless the run took the usage over
		// a budget.
		if !i.fanOutOverBudget(ctx) {
			v.runDone(ctx, i, r, out, runErr, reject != nil, timedOut)
		}
	case runErr == nil && out.Handoff != nil:
		i.delegate(ctx, r, out)
	case r.kind == runDelegate:
		i.delegateDone(ctx, r, out, runErr, reject != nil, timedOut)
	case reject != nil:
		i.decide(ctx, "rejected", nil, rules.ErrorInfo{Message: reject.Reason, Kind: "rejected"})
	case timedOut || errors.Is(runErr, ErrTimeout):
		i.runFailed(ctx, r, runErr, true, true)
	case runErr != nil:
		i.runFailed(ctx, r, runErr, false, registry.IsRetryable(runErr))
	case reserved(out.Trigger):
		i.runFailed(ctx, r, fmt.Errorf("%w: agent %s reported %q", ErrReservedTrigger, r.agent, out.Trigger), false, false)
	case out.Trigger == "":
		i.runFailed(ctx, r, fmt.Errorf("engine: agent %s reported no trigger", r.agent), false, false)
	default:
		i.decide(ctx, out.Trigger, out.Result, rules.ErrorInfo{})
	}
	i.commit(ctx)
	i.stopSpare()
	if i.commitErr != nil {
		return notCommitted(i.id, step, i.commitErr)
	}
	return nil
}

// late answers the outcome of step, whose run is no longer under way: a
// step the instance has not reached (see pastThisCopy), or a late reply,
// recorded and ErrStaleReport.
func (i *instance) late(ctx context.Context, step int, out registry.Outcome, runErr error, timedOut bool) error {
	if err := i.futureStep(step); err != nil {
		return i.pastThisCopy(ctx, step, err)
	}
	if !errors.Is(runErr, ErrTimeout) || !timedOut {
		// A timer that fires after its run ended is not a reply; anything else is.
		i.note(record.Entry{Kind: record.KindLateReply, Step: step, Trigger: out.Trigger, Result: out.Result, Error: errText(runErr)})
		i.commit(ctx)
	}
	return ErrStaleReport
}

// notCommitted is the error of a run's outcome that this engine did not
// commit: the store refused the step, or another engine owns the instance
// now. It matches ErrUnknownInstance, which an agent's report is answered
// with, so that the agent gives its work back and reports again to the
// engine that resumes the instance from its last committed step: were the
// report answered ok, the agent would drop its work and the outcome would
// be lost.
func notCommitted(id string, step int, err error) error {
	return fmt.Errorf("%w: %s: the outcome of step %d was not committed: %w", ErrUnknownInstance, id, step, err)
}

// ran marks r, still under way, ended with the agent's outcome or error:
// its timers and Go handler stop, its agent_run entry is noted, its usage
// counted and its span ended. It returns the outcome as it counts: a run
// that timed out has failed with ErrTimeout, and a result that breaks its
// agent's declaration has failed with kind invalid_result.
func (i *instance) ran(r *run, out registry.Outcome, runErr error, timedOut bool) (registry.Outcome, error) {
	r.ended = true
	if rt := r.timer; rt != nil {
		r.timer = nil
		rt.stopLater() // the step's next run resets it, or finishLocked stops it
	}
	r.stopTimers()
	r.stop()
	if timedOut {
		runErr = fmt.Errorf("%w: %s did not finish within %s", ErrTimeout, r.agent, r.state.Timeout)
	}
	if bad := i.e.declaredResult(r.agent, out, runErr, timedOut); bad != nil {
		out, runErr = registry.Outcome{Usage: out.Usage}, bad
	}
	ran := record.Entry{Kind: record.KindAgentRun, Step: r.step, State: r.state.Name, Agent: r.agent, Attempt: r.attempt, Trigger: out.Trigger, Result: out.Result, Error: errText(runErr), ErrorKind: registry.KindOf(runErr), Index: r.index, Usage: out.Usage}
	i.spend(r.agent, out.Usage)
	if timedOut {
		ran.ErrorKind = "timeout"
	}
	if out.Handoff != nil && runErr == nil {
		ran.To, ran.Detail = out.Handoff.To, "hand-off ("+out.Handoff.Reason+")"
	}
	i.note(ran)
	i.runEnded(r, &ran, runErr)
	r.spanUsage(out.Usage)
	r.endSpan(out.Trigger, ran.ErrorKind, runErr)
	return out, runErr
}

// runFailed applies the state's retry policy to a failed run, or produces
// the outcome error (timeout) when no retry is left.
//
// The failure's kind (registry.KindOf; timeout for a run that timed out)
// is what the policy's on and except lists read, and what rules see as
// error.kind.
func (i *instance) runFailed(ctx context.Context, r *run, err error, timedOut, retryable bool) {
	st := r.state
	kind := registry.KindOf(err)
	if timedOut && kind == "error" {
		kind = "timeout"
	}
	if retryable && r.attempt-1 < st.Retry.Max && st.Retry.Retries(kind) {
		if hit := i.overBudget(); hit != nil {
			i.limitHit(ctx, hit) // the failed run spent the budget: no retry spends more
			return
		}
		delay := st.Retry.Jittered(r.attempt, i.e.jitter(i.id, r.step))
		retry := record.Entry{Kind: record.KindRetry, State: st.Name, Agent: r.agent, Attempt: r.attempt + 1, Delay: delay, Error: err.Error(), ErrorKind: kind}
		i.note(retry)
		i.retryScheduled(r, &retry, err)
		if i.rootSpan() != nil { // the attributes are built only for a span
			i.traceEvent("retry_scheduled", attrStep.Int(r.step), attrAgentName.String(r.agent), attrAttempt.Int(retry.Attempt), attrDelay.String(delay.String()), attrErrorKind.String(kind))
		}
		step := r.step
		i.more().retry = i.e.clock.AfterFunc(delay, func() {
			i.e.exec.Submit(func() { i.retryRun(i.e.ctx, step) })
		})
		return
	}
	trigger := "error"
	if timedOut {
		trigger = "timeout"
	}
	i.decide(ctx, trigger, nil, rules.ErrorInfo{Message: err.Error(), Retryable: retryable, Kind: kind})
}

// retryRun dispatches the retry of the run of step once its backoff is over.
func (i *instance) retryRun(ctx context.Context, step int) {
	if i.e.closed.Load() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.run
	if i.status.Finished() || r == nil || r.step != step {
		return
	}
	if i.rare != nil {
		i.rare.retry = nil
	}
	if hit := i.overBudget(); hit != nil {
		i.limitHit(ctx, hit) // a retry would spend more
	} else if i.step+1 > i.e.wf.Limits.MaxSteps {
		i.limitHit(ctx, &LimitError{Limit: "max_steps", State: i.state.Name, Count: i.step + 1, Max: i.e.wf.Limits.MaxSteps})
	} else {
		agentKind{}.enter(ctx, i, dispatch{
			attempt: r.attempt + 1, description: r.description, reason: "retry",
			priority: r.priority, previous: r.previous, constraints: r.constraints,
		})
	}
	i.commit(ctx)
}

// decide matches the outcome against the rules and takes the transition
// the workflow's decision names (rules.Workflow.Decide, which replay reads
// too).
func (i *instance) decide(ctx context.Context, trigger string, result map[string]any, errInfo rules.ErrorInfo) {
	st := i.state
	owner := i.e.wf.Owner(st.Name)
	attempt := 0
	if i.run != nil {
		attempt = i.run.attempt
	}
	env := envs.Get().(*rules.Env)
	*env = rules.Env{
		Result: orEmpty(result), Input: i.input, Context: i.context, Error: errInfo,
		State: st.Name, Agent: owner, Trigger: trigger, Step: i.step, Visits: i.visits.m, Attempt: attempt,
		Usage: i.usage().Totals, VisitUsage: i.usage().Visit,
	}
	i.note(record.Entry{Kind: record.KindOutcome, State: st.Name, Agent: owner, Trigger: trigger, Result: result, Error: errInfo.Message, Retryable: errInfo.Retryable, ErrorKind: errInfo.Kind, Attempt: attempt, Usage: i.takeChildUsage()})
	d := i.e.wf.Decide(env)
	*env = rules.Env{} // nothing of the decision points into it
	envs.Put(env)
	for _, ev := range d.Match.Tried {
		if ev.Err != nil {
			// Counted false, and never silent: recorded, counted, told.
			cond := record.Entry{Kind: record.KindCondition, State: st.Name, Rule: ev.Rule.ID, Condition: ev.Rule.Condition.Source, Error: ev.Err.Error()}
			i.note(cond)
			i.e.metrics.conditionErrors.Add(1)
			i.conditionFailed(&cond, trigger, ev.Err)
		}
	}
	rule := d.Rule
	if rule == nil {
		var nm *rules.NoMatchError
		if errors.As(d.Err, &nm) {
			nm.AgentError = errInfo.Message
		}
		i.fail(d.Err)
		return
	}
	fired := record.Entry{Kind: record.KindRuleFired, State: st.Name, Agent: owner, Trigger: trigger, Rule: rule.ID, Priority: rule.Priority, Next: rule.Next, To: rule.To}
	if rule.Condition != nil {
		fired.Condition = rule.Condition.Source
	}
	i.note(fired)
	i.event(Event{Type: EventRuleFired, Agent: owner, Rule: rule.ID, Trigger: trigger, Condition: fired.Condition, To: rule.Next})
	if i.rootSpan() != nil { // the attributes are built only for a span
		i.traceEvent("rule_fired", attrRule.String(rule.ID), attrTrigger.String(trigger), attrState.String(st.Name))
	}
	if d.Limit != nil {
		i.limitHit(ctx, limitError(d.Limit))
		return
	}
	if d.Err != nil {
		i.fail(fmt.Errorf("engine: %w", d.Err))
		return
	}
	if !d.Next.Terminal && i.outOfRoom() {
		return
	}
	if d.Context != nil {
		i.context = d.Context // a new map: the one committed before is not changed
	}
	next := d.Next
	i.enter(rule.ID, next)
	if next.Terminal {
		if rule.To != "" {
			i.finalNotice(ctx, rule, owner, d.Task, result)
		}
		i.complete(next.Name)
		return
	}
	from := owner
	if st.Waits() {
		from = "" // no agent hands over after a wait: the engine dispatches, with the signal's data as the previous result
	}
	kindOf(i.state).enter(ctx, i, dispatch{
		rule: rule, from: from, attempt: 1, description: d.Task, reason: rule.Reason,
		priority: rule.Priority, previous: result, constraints: rule.Constraints,
		items: d.Items, itemsErr: d.ItemsErr, itemsSet: next.Iterates(),
	})
}

// checkLimits reports the limit that entering next would break, if any.
func (i *instance) checkLimits(next *rules.State) *LimitError {
	return limitError(i.e.wf.LimitOf(next, i.step, i.visits.m))
}

// limitError is the engine's error for a limit hit.
func limitError(h *rules.LimitHit) *LimitError {
	if h == nil {
		return nil
	}
	return &LimitError{Limit: h.Limit, State: h.State, Count: h.Count, Max: h.Max, Total: h.Total, Budget: h.Budget, Visit: h.Visit}
}

// limitHit records a limit hit and enters on_limit, or fails the instance.
func (i *instance) limitHit(ctx context.Context, lim *LimitError) {
	i.note(record.Entry{Kind: record.KindLimitHit, State: i.state.Name, Next: lim.State, Error: lim.Error(), Limit: lim.Limit})
	i.limitReached(lim)
	if i.rootSpan() != nil { // the attributes are built only for a span
		i.traceEvent("limit_hit", attrLimit.String(lim.Limit), attrState.String(lim.State))
	}
	onLimit := i.e.wf.Limits.OnLimit
	if onLimit == "" || i.state.Name == onLimit {
		i.fail(lim)
		return
	}
	target, _ := i.e.wf.State(onLimit)
	if second := i.checkLimits(target); second != nil {
		i.fail(lim)
		return
	}
	i.enter(fsm.LimitEvent, target)
	if target.Terminal {
		i.complete(target.Name)
		return
	}
	kindOf(i.state).enter(ctx, i, dispatch{attempt: 1, description: "limit hit: " + lim.Error(), reason: "on_limit", priority: 1})
}

// enter takes the transition event into next and records the new visit.
// The transition is one the state machine (package fsm) allows, which is
// why it is not asked: Decide picks, in a state, only a rule whose `from`
// owns the state, and fsm makes each rule an edge from every state its
// `from` owns; the on_limit event leaves any state but on_limit itself,
// which limitHit checks. TestDecide_PicksOnlyTransitionsOfTheMachine holds
// the engine to that on every workflow it is tested with. The instance's
// state has one home, i.state.
func (i *instance) enter(event string, next *rules.State) {
	from := i.state.Name
	i.visits = i.e.visits.enter(i.visits, next)
	i.state = next
	if i.used != nil {
		i.used.ledger.Visit = registry.Totals{} // a new visit: the state's own budgets start again
	}
	i.note(record.Entry{Kind: record.KindTransition, State: from, Next: next.Name, Rule: event})
	i.event(Event{Type: EventStateChanged, From: from, To: next.Name, Rule: event})
	if !next.Terminal && next.Agent != "" {
		if prev := i.e.wf.Owner(from); prev != next.Agent {
			i.event(Event{Type: EventAgentChanged, From: prev, To: next.Agent})
		}
	}
}

func (i *instance) finalNotice(_ context.Context, rule *rules.Rule, from, desc string, result map[string]any) {
	r := &run{step: i.step + 1, state: i.state, agent: rule.To, from: from, description: desc, reason: rule.Reason, priority: rule.Priority, previous: result, constraints: rule.Constraints, notice: true}
	r.key = registry.StepKey(i.id, r.step)
	r.handoffID = r.key
	if i.notices == nil {
		i.notices = map[string]bool{}
	}
	i.notices[r.handoffID] = true
	i.noteHandoff(r.agent)
	i.logHandoff(r)
	o := i.outgoing(r, rule)
	o.Kind, o.Run = record.OutgoingNotice, ""
	i.queue(sending{out: o})
	i.note(record.Entry{Kind: record.KindFinalNotice, Step: r.step, State: i.state.Name, From: from, To: rule.To, Rule: rule.ID, HandoffID: r.handoffID, Priority: rule.Priority, Detail: desc})
	i.event(Event{Type: EventAgentHandoff, From: from, To: rule.To, Rule: rule.ID})
}

func (i *instance) complete(outcome string) {
	i.status = record.StatusCompleted
	i.outcome = outcome
	i.note(record.Entry{Kind: record.KindCompleted, State: outcome})
	i.ended()
	i.finish()
}

func (i *instance) fail(err error) {
	i.status = record.StatusFailed
	i.err = &FailedError{InstanceID: i.id, State: i.state.Name, Err: err}
	i.note(record.Entry{Kind: record.KindFailed, State: i.state.Name, Error: err.Error(), ErrorKind: failureKind(err)})
	i.ended()
	i.finish()
}

// countRunning counts the instance in the engine's running instances,
// until it finishes.
func (i *instance) countRunning() {
	i.counted = true
	i.e.metrics.running.Add(1)
}

func (i *instance) finish() {
	if i.counted {
		i.counted = false
		i.e.metrics.running.Add(-1)
	}
	if i.run != nil {
		i.run.stop()
	}
	if i.work != nil {
		i.endWork(context.WithoutCancel(i.e.ctx))
	}
	i.stopTimersLocked()
	i.endTrace()
	i.closing = true // commit closes done
}

// halt is what Close does to a running instance: its timers stop and its
// Go handlers' contexts are cancelled; its state stays as it was, to be
// resumed.
func (i *instance) halt() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stopTimersLocked()
	if i.run != nil {
		i.run.stop()
	}
	i.endTrace()
}

func (i *instance) stopTimersLocked() {
	i.stopRetry()
	if i.run != nil {
		i.run.stopTimers()
		i.run.endSpan("", "", nil) // abandoned, if its report never came
	}
	if i.work != nil {
		i.work.stop()
	}
	i.stopDeadline()
}

// cancel stops the instance where it is, for the reason given (may be "").
func (i *instance) cancel(ctx context.Context, reason string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.status.Finished() {
		return ErrInstanceFinished
	}
	i.canceled(reason)
	i.commit(ctx)
	return nil
}

// canceled ends the instance as cancelled, for reason; the caller holds
// its lock and commits.
func (i *instance) canceled(reason string) {
	i.status = record.StatusCanceled
	if reason != "" {
		i.more().cancelReason = reason
	}
	i.err = &FailedError{InstanceID: i.id, State: i.state.Name, Err: ErrCanceled}
	i.note(record.Entry{Kind: record.KindCanceled, State: i.state.Name, Detail: reason})
	i.ended()
	i.finish()
}

// failureKind classifies why an instance failed, for the history: a
// replay or a reader tells the kinds apart without parsing the text.
func failureKind(err error) string {
	var (
		nm  *rules.NoMatchError
		de  *rules.DecideError
		lim *LimitError
	)
	switch {
	case errors.As(err, &nm):
		return "no_rule_matched"
	case errors.As(err, &de):
		return de.Part
	case errors.As(err, &lim):
		return lim.Limit
	case errors.Is(err, ErrCanceled):
		return "canceled"
	}
	return "error"
}

func reserved(trigger string) bool {
	switch trigger {
	case "error", "timeout", "rejected", "joined", "partial", "conflict":
		return true
	}
	return false
}

func ruleID(r *rules.Rule) string {
	if r == nil {
		return ""
	}
	return r.ID
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return emptyMap
	}
	return m
}
