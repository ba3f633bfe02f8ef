package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/internal/shardmap"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// Engine runs instances of one compiled workflow.
type Engine struct {
	wf    *rules.Workflow
	reg   *registry.Registry
	val   *handoff.Validator
	tr    transport.Transport
	ownTr io.Closer        // the transport the engine made, closed with it
	lanes map[string]*lane // Go agents' in-process paths; read-only after New
	// startDescription is a first run's description, made once.
	startDescription string
	// visits holds the visit maps instances share (see visits).
	visits   *visitTree
	store    record.Store
	clock    clock.Clock
	exec     Executor
	pool     *pool
	runners  sync.WaitGroup // lane runners started as goroutines
	log      *zap.Logger
	ids      func() string
	givenIDs bool // ids come from WithIDs and may repeat
	observe  []Observer
	tracer   trace.Tracer // nil: no spans
	seed     uint64       // of the retry policies' jitter

	// rec holds the instances to resume after a refused commit.
	rec recovery
	// ctx is cancelled by Close; every handler run derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	instances *shardmap.Map[*instance] // until they have finished
	runs      runs                     // Go handler runs under way, for Drain
	lateMu    sync.Mutex               // one late report of a finished instance at a time
	metrics   metrics
	closed    atomic.Bool
	starting  atomic.Int64 // starts under way whose first agent is external
	closeOnce sync.Once
	unsubDead func()  // stops keeping the transport's dead letters
	fam       *family // this engine and those of the workflows it calls
}

// New builds an engine for w. Agents that the registry lacks are added from
// the workflow's agents section without a handler (external agents); agents
// the registry has keep their handlers. Go handlers run in process, up to
// their agent's concurrency at once; external agents take their work from
// the transport.
func New(w *rules.Workflow, reg *registry.Registry, opts ...Option) (*Engine, error) {
	if w == nil {
		return nil, errors.New("engine: nil workflow")
	}
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if reg == nil {
		reg = registry.New()
	}
	for _, a := range w.Agents {
		if reg.Has(a.ID) {
			continue
		}
		if err := reg.Add(AgentOf(a, nil)); err != nil {
			return nil, fmt.Errorf("engine: agent %s: %w", a.ID, err)
		}
	}
	val, err := handoff.NewValidator(reg, handoff.WithLoopWindow(w.Limits.HandoffWindow, w.Limits.HandoffRepeats))
	if err != nil {
		return nil, err
	}
	e := &Engine{
		wf: w, reg: reg, val: val, store: cfg.store, clock: cfg.clock, exec: cfg.executor,
		log: cfg.logger, ids: cfg.ids, observe: cfg.observers, tr: cfg.transport,
		lanes: map[string]*lane{}, visits: newVisitTree(w.Initial), startDescription: "start " + w.Name,
		instances: shardmap.New[*instance](),
	}
	if e.store == nil {
		e.store = record.NewMemStore()
	}
	if cfg.tracing != nil {
		e.tracer = cfg.tracing.Tracer("github.com/batonhq/baton/engine")
	}
	e.seed = cfg.jitterSeed
	if !cfg.seeded {
		e.seed = uint64(e.clock.Now().UnixNano())
	}
	if e.ids == nil {
		e.ids = timeOrderedID
	} else {
		e.givenIDs = true
	}
	var external []string
	for _, a := range reg.All() {
		if a.Handler != nil {
			l := newLane(a.ID, a.Queue, a.Concurrency)
			l.handler = a.Handler
			l.drain = func() { e.runLane(l) }
			e.lanes[a.ID] = l
			continue
		}
		external = append(external, a.ID)
		if e.tr == nil && cfg.newTransport != nil {
			e.tr = cfg.newTransport(e.clock, e.ids)
			e.ownTr, _ = e.tr.(io.Closer)
		}
		if e.tr == nil {
			return nil, &NoTransportError{Workflow: w.Name, Agent: a.ID}
		}
		if err := e.tr.OpenMailbox(a.ID, a.Queue); err != nil {
			e.closeTransport()
			return nil, fmt.Errorf("engine: mailbox for %s: %w", a.ID, err)
		}
	}
	if e.ownTr != nil {
		// With a transport of the engine's own, an agent without a Go
		// handler is served only by code that takes from Transport(): a
		// forgotten handler would otherwise leave its instances waiting
		// with nothing said.
		e.log.Warn("engine: agents without a Go handler are external: their work waits in Engine.Transport() for a taker",
			zap.String("workflow", w.Name), zap.Strings("agents", external))
	}
	if e.exec == nil {
		e.pool = newPool(cfg.workers)
		e.exec = e.pool
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	// The store keeps the source of every workflow version an instance
	// started on, so that an old version's engine can be built again.
	if err := e.store.SaveWorkflow(e.ctx, record.WorkflowSource{
		Hash: w.Hash, Name: w.Name, Version: w.Version, File: w.File, Source: w.Source, Saved: e.clock.Now(),
	}); err != nil {
		e.cancel()
		if e.pool != nil {
			e.pool.close()
		}
		e.closeTransport()
		return nil, fmt.Errorf("engine: save the workflow source: %w", err)
	}
	if e.tr != nil {
		e.unsubDead = e.tr.OnDeadLetter(e.keepDeadLetter)
	}
	e.fam = cfg.family
	if e.fam == nil {
		e.fam = &family{}
	}
	e.fam.join(e)
	if err := e.linkChildren(reg, opts); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

// keepDeadLetter writes a message the transport gave up on to the store.
func (e *Engine) keepDeadLetter(d transport.DeadLetter) {
	m := d.Message
	dl := record.DeadLetter{
		MessageID: m.MessageID, Type: string(m.Type), From: m.From, To: m.To, Reason: string(d.Reason),
		Key: m.Key(), At: d.At, Attempts: d.Attempts, LastError: d.LastError, Content: m.Content,
	}
	t, err := wire.Decode(m)
	if err == nil {
		dl.Instance, dl.Step = t.InstanceID, t.Step
	}
	if err := e.store.AddDeadLetter(context.Background(), dl); err != nil {
		e.log.Error("engine: dead letter not stored", zap.String("message_id", m.MessageID), zap.Error(err))
	}
	// The engine that keeps a dead letter tells it; on a shared transport
	// the work may be another workflow's, which the event names.
	if ev, ok := e.deadLettered(&dl, ""); ok {
		if err == nil {
			ev.Workflow, ev.Version, ev.State = t.WorkflowID, t.Version, t.State
		} else {
			ev.Workflow, ev.Version = "", 0
		}
		e.emit(ev)
	}
}

// Workflow returns the workflow the engine runs.
func (e *Engine) Workflow() *rules.Workflow { return e.wf }

// Transport returns the transport external agents take their work from.
func (e *Engine) Transport() transport.Transport { return e.tr }

// Store returns the store the engine commits to.
func (e *Engine) Store() record.Store { return e.store }

// Start creates an instance with input and dispatches its initial state's
// agent. The returned Instance can be waited for, inspected and cancelled.
//
// Start refuses, and nothing starts: input that is not JSON data every store
// can keep or that breaks the workflow's `input` declaration (a *InputError
// naming the field), an id already taken
// (ErrDuplicateInstance, with ids from WithIDs), and a first step the store
// refuses (a *CommitError). When the first agent is a Go handler whose
// mailbox is full, Start waits for room until ctx ends (then a
// *OverloadedError): a burst of starts is held at the door, never accepted
// and then failed. When the first agent is external and the transport tells
// its mailbox's room (RoomTeller), a start that would find it full is
// refused at once with a *OverloadedError; a start that found room whose
// first work then finds the mailbox full (other work took the room since
// the check) is not failed: its work is sent again until the mailbox takes
// it, and the run waits meanwhile.
func (e *Engine) Start(ctx context.Context, input map[string]any) (*Instance, error) {
	return e.start(ctx, "", input, true)
}

// StartID is Start under an id the caller chose (a client retrying a start
// safely, say): an id any instance of the store already has is refused
// with ErrDuplicateInstance, and nothing starts. An id record.CheckID
// refuses (empty, not UTF-8, longer than record.MaxIDLen bytes, with
// control characters, "." or "..") is an *IDError (errors.Is
// ErrInvalidID), and nothing starts.
func (e *Engine) StartID(ctx context.Context, id string, input map[string]any) (*Instance, error) {
	if err := record.CheckID(id); err != nil {
		return nil, err
	}
	return e.start(ctx, id, input, true)
}

// start starts an instance; with wait set, a first Go agent's full mailbox
// is waited for (a child started inside its parent's step never waits: it
// is refused, and the parent's state reports it).
func (e *Engine) start(ctx context.Context, id string, input map[string]any, wait bool) (*Instance, error) {
	if ctx == nil {
		return nil, errors.New("engine: nil context")
	}
	if e.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if input == nil {
		input = map[string]any{}
	}
	if err := checkData("input", input); err != nil {
		return nil, err
	}
	if err := e.checkInput(input); err != nil {
		return nil, err
	}
	l := e.firstLane()
	checked := false
	if l != nil {
		if err := l.reserve(ctx, wait && e.pool != nil); err != nil {
			return nil, err
		}
	} else if agent, ok := e.firstExternal(); ok {
		checked = true
		// Starts under way count against the room the transport tells:
		// their first work is not in the mailbox yet.
		defer e.starting.Add(-1)
		if err := e.checkRoom(ctx, agent, int(e.starting.Add(1))); err != nil {
			return nil, err
		}
	}
	inst, err := e.create(ctx, id, input)
	if err != nil {
		if l != nil {
			l.unreserve()
		}
		return nil, err
	}
	inst.reserved, inst.roomChecked = l, checked
	// ctx bounds the call, not the state change: once begun, the step is
	// carried out whole.
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.seq == 0 {
		// Nothing has happened to it yet: its first step is at its
		// creation, and the clock is not read again for it.
		inst.stepTime = inst.created
	}
	inst.startTrace(ctx, false) // from ctx itself: a value lookup through WithoutCancel allocates
	inst.begin(uncancelled(ctx))
	inst.roomChecked = false
	if inst.reserved != nil {
		inst.reserved = nil // the first run never reached the lane
		l.unreserve()
	}
	if inst.commitErr != nil {
		return e.startRefused(ctx, inst)
	}
	return &Instance{inst: inst}, nil
}

// startRefused answers a start whose first step the store refused (every
// attempt failed). A store that got no answer may have written the step
// all the same (the write went through, its acknowledgement did not), and
// a start must not fail while its instance exists: so the store is asked.
// An instance it holds is resumed
// from that step and the start succeeds; one it does not hold was never
// accepted, and the start fails with the commit error. When the store
// cannot tell (it does not answer reads either), or fails again as the
// instance is read back, the start fails, and the engine asks again later
// as it does after any refused commit, so that a step written after all
// does not stay where it is. The caller holds inst.mu.
func (e *Engine) startRefused(ctx context.Context, inst *instance) (*Instance, error) {
	err := inst.commitErr
	if errors.Is(err, ErrNotOwner) {
		return nil, err // refused before anything was written
	}
	snap, rerr := e.store.Instance(context.WithoutCancel(ctx), inst.id)
	switch {
	case errors.Is(rerr, ErrUnknownInstance):
		return nil, err // the store has nothing of it
	case rerr != nil:
		e.log.Warn("engine: a start's first step refused, and the store cannot tell whether it holds it; asking again later",
			zap.String("instance", inst.id), zap.Error(rerr))
		e.recoverLater(inst.id, recoverFirst)
		return nil, err
	}
	e.log.Info("engine: a start's first step was refused but written; the instance goes on", zap.String("instance", inst.id))
	e.instances.CompareAndDelete(inst.id, inst) // make room for the instance resumed from the store
	rep, rerr := e.resumeFrom(context.WithoutCancel(ctx), []record.Snapshot{snap}, nil)
	if rerr == nil {
		rerr = rep.Failed[inst.id]
	}
	v, ok := e.instances.Load(inst.id)
	if rerr == nil && !ok && slices.Contains(rep.Resumed, inst.id) {
		// Resumed, and already run to its end and gone from the engine:
		// the instance is the finished one the store keeps.
		if fin, ferr := e.Instance(inst.id); ferr == nil {
			return fin, nil
		}
	}
	if rerr != nil || !ok {
		// Written, but the store failed again as it was read back: the
		// engine continues the instance later, as after a refused commit.
		e.log.Warn("engine: a started instance not resumed; trying again", zap.String("instance", inst.id), zap.Error(rerr))
		e.recoverLater(inst.id, recoverFirst)
		return nil, err
	}
	return &Instance{inst: v}, nil
}

// create makes a new instance under id, or a fresh id when id is "".
func (e *Engine) create(ctx context.Context, id string, input map[string]any) (*instance, error) {
	chosen := id != ""
	if !chosen {
		id = e.ids()
	}
	inst := newInstance(e, id, input)
	if _, taken := e.instances.LoadOrStore(id, inst); taken {
		return nil, fmt.Errorf("%w: %s", ErrDuplicateInstance, id)
	}
	if chosen || e.givenIDs {
		// Ids from WithIDs may repeat one an instance finished with.
		if _, err := e.store.Instance(ctx, id); err == nil {
			e.instances.Delete(id)
			return nil, fmt.Errorf("%w: %s", ErrDuplicateInstance, id)
		}
	}
	return inst, nil
}

// firstExternal is the initial state's agent when it is an external one and
// the transport can tell its room.
func (e *Engine) firstExternal() (string, bool) {
	if _, ok := e.tr.(transport.RoomTeller); !ok {
		return "", false
	}
	st, ok := e.wf.State(e.wf.Initial)
	if !ok || st.Agent == "" || e.lanes[st.Agent] != nil {
		return "", false
	}
	return st.Agent, true
}

// checkRoom refuses a start, the n-th under way, when agent's mailbox has
// room for fewer than n items. A transport that cannot answer does not
// refuse: the first run then meets the same error and fails visibly.
func (e *Engine) checkRoom(ctx context.Context, agent string, n int) error {
	free, capacity, err := e.tr.(transport.RoomTeller).Room(ctx, agent)
	if err != nil || free >= n {
		return nil
	}
	return &OverloadedError{Agent: agent, Capacity: capacity}
}

// firstLane is the lane of the initial state's agent, when a Go handler
// runs it.
func (e *Engine) firstLane() *lane {
	st, ok := e.wf.State(e.wf.Initial)
	if !ok || st.Agent == "" {
		return nil
	}
	return e.lanes[st.Agent]
}

// Instance returns the handle of an instance: a running one, or one the
// store keeps as finished (the engine forgets finished instances; their
// handle then reads what the store committed).
func (e *Engine) Instance(id string) (*Instance, error) {
	if _, i := e.fam.running(id); i != nil {
		return &Instance{inst: i}, nil
	}
	snap, err := e.store.Instance(e.ctx, id)
	if err == nil && snap.Workflow != e.wf.Name {
		if m := e.fam.of(snap); m != nil && m != e {
			return m.Instance(id) // a child's instance
		}
	}
	if err != nil || snap.Workflow != e.wf.Name || !snap.Status.Finished() {
		return nil, fmt.Errorf("%w: %s", ErrUnknownInstance, id)
	}
	st, ok := e.wf.State(snap.State)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownInstance, id)
	}
	i := e.restored(snap, st, 0)
	i.forgotten = true
	i.closeDone()
	return &Instance{inst: i}, nil
}

// with calls f with the instance id: a running one, or, for an instance the
// store keeps as finished, one read back from the store (so that a late
// report is still recorded in its history). Late reports of finished
// instances are applied one at a time. Any other id is ErrUnknownInstance.
func (e *Engine) with(ctx context.Context, id string, f func(i *instance) error) error {
	if v, ok := e.instances.Load(id); ok {
		return f(v)
	}
	if m, i := e.fam.running(id); i != nil {
		if m != e {
			return m.with(ctx, id, f)
		}
		return f(i)
	}
	if snap, err := e.store.Instance(ctx, id); err == nil && snap.Workflow != e.wf.Name {
		if m := e.fam.of(snap); m != nil && m != e {
			return m.with(ctx, id, f) // a finished child's late report
		}
	}
	e.lateMu.Lock()
	defer e.lateMu.Unlock()
	if v, ok := e.instances.Load(id); ok {
		return f(v)
	}
	snap, err := e.store.Instance(ctx, id)
	if err != nil || snap.Workflow != e.wf.Name || !snap.Status.Finished() {
		return fmt.Errorf("%w: %s", ErrUnknownInstance, id)
	}
	st, ok := e.wf.State(snap.State)
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownInstance, id)
	}
	hist, err := e.store.History(ctx, id)
	if err != nil {
		return err
	}
	i := e.restored(snap, st, len(hist))
	i.forgotten = true
	i.closeDone()
	// Its final notices still outstanding can be taken: a notice's report
	// may come before this engine has resumed the instance (its partition
	// just taken over), and answered stale it would be acked and never
	// settled.
	outbox, err := e.store.Outbox(ctx, id)
	if err != nil {
		return err
	}
	for _, o := range outbox {
		if o.Kind == record.OutgoingNotice {
			if i.notices == nil {
				i.notices = map[string]bool{}
			}
			i.notices[o.HandoffID] = true
			i.out.open = append(i.out.open, openItem{key: o.Key, notice: o.HandoffID})
		}
	}
	return f(i)
}

// Report delivers the outcome of an external agent's run: the agent that
// received the work for step of instance id reports how it ended. A
// non-nil runErr fails the run (registry.Reject rejects the hand-off;
// registry.Permanent skips retries). A report for any other run is recorded
// and returns ErrStaleReport; one for a step the instance has not reached
// records nothing and returns an error matching ErrFutureStep.
func (e *Engine) Report(ctx context.Context, instanceID string, step int, out registry.Outcome, runErr error) error {
	if ctx == nil {
		return errors.New("engine: nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkUsage(out.Usage); err != nil {
		return err // refused at the door: the run is still under way
	}
	if runErr == nil {
		if err := checkOutcome(out); err != nil {
			return err // refused at the door: the run is still under way
		}
	}
	return e.with(ctx, instanceID, func(i *instance) error {
		return i.finishRun(uncancelled(ctx), step, out, runErr, false)
	})
}

// HandleReport applies a report in the agent protocol's form (package wire)
// and answers it: ok, or why not (the step is over: stale; the report does
// not fit the run, or names a step the instance has not reached: invalid;
// the instance is unknown). A final notice's report settles it.
func (e *Engine) HandleReport(ctx context.Context, r *wire.Report) wire.Answer {
	if ctx == nil || r == nil {
		return wire.Answer{Code: wire.CodeInvalid, Message: "engine: nil context or report"}
	}
	// One call checks the report, and the data it carries, and reads its
	// outcome: what is refused here changes nothing.
	out, runErr, err := r.Ending()
	if err != nil {
		return wire.Answer{Code: wire.CodeInvalid, Message: err.Error()}
	}
	if !r.Heartbeat && r.Progress == nil {
		if v, ok := e.instances.Load(r.InstanceID); ok {
			// The hot path: an instance this engine runs, its lock taken
			// once from the report to the next step committed and sent.
			ans, err := v.report(uncancelled(ctx), r, out, runErr)
			if ans != nil {
				return *ans
			}
			return answerOf(err)
		}
	}
	var ans *wire.Answer
	err = e.with(ctx, r.InstanceID, func(i *instance) error {
		if r.Heartbeat {
			return i.markAccepted(uncancelled(ctx), r.Step)
		}
		if r.Progress != nil {
			if err := checkData("progress.data", r.Progress.Data); err != nil {
				return err
			}
			return i.progress(r.Step, r.Agent, *r.Progress)
		}
		var err error
		ans, err = i.report(uncancelled(ctx), r, out, runErr)
		return err
	})
	if ans != nil {
		return *ans
	}
	return answerOf(err)
}

// answerOf is the answer to a report that ended with err.
func answerOf(err error) wire.Answer {
	switch {
	case err == nil:
		return wire.Answer{OK: true}
	case errors.Is(err, ErrStaleReport):
		return wire.Answer{Code: wire.CodeStale, Message: err.Error()}
	case errors.Is(err, ErrUnknownInstance):
		return wire.Answer{Code: wire.CodeUnknownInstance, Message: err.Error()}
	}
	return wire.Answer{Code: wire.CodeInvalid, Message: err.Error()}
}

// Close cancels every handler run, stops the engine's workers and waits for
// them; instances still running stay in the store as they were. Safe to call
// twice.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		e.stopRecovery()
		if e.unsubDead != nil {
			e.unsubDead()
		}
		e.cancel()
		e.instances.Range(func(_ string, i *instance) bool {
			i.halt()
			return true
		})
		e.waitRecovery()
		e.runners.Wait()
		if e.pool != nil {
			e.pool.close()
		}
		if e.fam != nil && e.fam.root == e {
			for _, m := range e.fam.members()[1:] {
				_ = m.Close()
			}
		}
		if e.fam != nil && e.fam.shared {
			e.fam.leave(e)
		}
		e.closeTransport()
	})
	return nil
}

func (e *Engine) closeTransport() {
	if e.ownTr != nil {
		_ = e.ownTr.Close()
	}
}

func (e *Engine) emit(ev Event) {
	for _, o := range e.observe {
		o(ev)
	}
}

// timeOrderedID returns a new instance id: a UUID version 7, whose first
// bits are the time it was made. Ids of instances started one after another
// sort together, so a store keyed by id appends to the end of its index
// instead of writing all over it.
func timeOrderedID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// uncancelled is context.WithoutCancel(ctx) without its allocation when ctx
// can never be cancelled (its Done is nil, as context.Background's is),
// which is most starts and reports: that ctx already is one.
func uncancelled(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
