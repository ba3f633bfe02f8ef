package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// Engine runs instances of one compiled workflow.
type Engine struct {
	wf       *rules.Workflow
	def      *fsm.Definition
	reg      *registry.Registry
	bus      *bus.Bus
	ownBus   bool
	handoffs *handoff.Manager
	store    Store
	clock    clock.Clock
	exec     Executor
	pool     *pool
	log      *zap.Logger
	ids      func() string
	observe  []Observer

	// ctx is cancelled by Close; every handler run derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	instances sync.Map // id -> *instance
	metrics   metrics
	closed    atomic.Bool
	closeOnce sync.Once
	unsubDead func() // stops keeping the bus's dead letters
}

// New builds an engine for w. Agents that the registry lacks are added from
// the workflow's agents section without a handler (external agents); agents
// the registry has keep their handlers.
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
	def, err := fsm.Compile(w)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		wf: w, def: def, reg: reg, store: cfg.store, clock: cfg.clock, exec: cfg.executor,
		log: cfg.logger, ids: cfg.ids, observe: cfg.observers, bus: cfg.bus,
	}
	if e.store == nil {
		e.store = NewMemStore()
	}
	if e.ids == nil {
		e.ids = uuid.NewString
	}
	if e.bus == nil {
		// The engine tracks every hand-off itself; ACK messages back to
		// the sending agents would only fill their mailboxes.
		e.bus = bus.New(bus.WithLogger(cfg.logger), bus.WithClock(cfg.clock), bus.WithIDs(e.ids), bus.WithAckMessages(false))
		e.ownBus = true
	}
	for _, a := range reg.All() {
		var mopts []bus.MailboxOption
		mopts = append(mopts, bus.WithAgentType(a.Type))
		if a.Queue > 0 {
			mopts = append(mopts, bus.WithMailboxCapacity(a.Queue))
		}
		if err := e.bus.Register(a.ID, mopts...); err != nil && !errors.Is(err, bus.ErrDuplicateAgent) {
			return nil, fmt.Errorf("engine: mailbox for %s: %w", a.ID, err)
		}
	}
	e.handoffs, err = handoff.NewManager(reg, e.bus,
		handoff.WithLogger(cfg.logger), handoff.WithClock(cfg.clock), handoff.WithIDs(e.ids),
		handoff.WithLoopWindow(w.Limits.HandoffWindow, w.Limits.HandoffRepeats))
	if err != nil {
		return nil, err
	}
	if e.exec == nil {
		e.pool = newPool(cfg.workers)
		e.exec = e.pool
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	// The store keeps the source of every workflow version an instance
	// started on, so that an old version's engine can be rebuilt.
	if err := e.store.SaveWorkflow(e.ctx, WorkflowSource{
		Hash: w.Hash, Name: w.Name, Version: w.Version, File: w.File, Source: w.Source, Saved: e.clock.Now(),
	}); err != nil {
		e.cancel()
		return nil, fmt.Errorf("engine: save the workflow source: %w", err)
	}
	e.unsubDead = e.bus.OnDeadLetter(e.keepDeadLetter)
	return e, nil
}

// keepDeadLetter writes a message the bus gave up on to the store.
func (e *Engine) keepDeadLetter(d bus.DeadLetter) {
	m := d.Message
	dl := DeadLetter{
		MessageID: m.MessageID, Type: string(m.Type), From: m.From, To: m.To, Reason: string(d.Reason),
		Instance: lookupString(m, metaInstance), Key: m.Key(), At: d.At, Attempts: d.Attempts,
		LastError: d.LastError, Content: m.Content,
	}
	dl.Step, _ = lookupInt(m, metaStep)
	if err := e.store.AddDeadLetter(context.Background(), dl); err != nil {
		e.log.Error("engine: dead letter not stored", zap.String("message_id", m.MessageID), zap.Error(err))
	}
}

// Workflow returns the workflow the engine runs.
func (e *Engine) Workflow() *rules.Workflow { return e.wf }

// Bus returns the bus the engine delivers hand-offs on; external agents
// receive their work from it.
func (e *Engine) Bus() *bus.Bus { return e.bus }

// Handoffs returns the hand-off manager (history and statistics).
func (e *Engine) Handoffs() *handoff.Manager { return e.handoffs }

// Store returns the store the engine commits to.
func (e *Engine) Store() Store { return e.store }

// Start creates an instance with input and dispatches its initial state's
// agent. The returned Instance can be waited for, inspected and cancelled.
func (e *Engine) Start(ctx context.Context, input map[string]any) (*Instance, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// ctx bounds the call, not the state change: once begun, the step is
	// carried out whole.
	ctx = context.WithoutCancel(ctx)
	if input == nil {
		input = map[string]any{}
	}
	inst := newInstance(e, e.ids(), input)
	e.instances.Store(inst.id, inst)
	inst.mu.Lock()
	defer inst.mu.Unlock()
	inst.begin(ctx)
	return &Instance{inst: inst}, nil
}

// Instance returns the handle of a running or finished instance.
func (e *Engine) Instance(id string) (*Instance, error) {
	v, ok := e.instances.Load(id)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownInstance, id)
	}
	return &Instance{inst: v.(*instance)}, nil
}

// Report delivers the outcome of an external agent's run: the agent that
// received the hand-off for step of instance id reports how it ended. A
// non-nil runErr fails the run (registry.Reject rejects the hand-off;
// registry.Permanent skips retries). A report for any other run is recorded
// and returns ErrStaleReport.
func (e *Engine) Report(ctx context.Context, instanceID string, step int, out registry.Outcome, runErr error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v, ok := e.instances.Load(instanceID)
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownInstance, instanceID)
	}
	return v.(*instance).finishRun(context.WithoutCancel(ctx), step, out, runErr, false)
}

// ReportMessage is Report for the hand-off message an external agent
// received from the bus.
//
// A final notice (a hand-off into a terminal state) asks for no outcome:
// reporting it, or calling Accept, settles it.
func (e *Engine) ReportMessage(ctx context.Context, m *bus.Message, out registry.Outcome, runErr error) error {
	meta, ctx, err := e.take(ctx, m)
	if err != nil {
		return err
	}
	if e.acceptNotice(ctx, meta) {
		return nil
	}
	return e.Report(ctx, meta.instanceID, meta.step, out, runErr)
}

// Accept tells the engine that an external agent has taken the hand-off in
// m: its acceptance timeout stops (for a final notice, it is settled). An
// agent that works longer than the hand-off manager's timeout should accept
// as soon as it takes the message.
func (e *Engine) Accept(ctx context.Context, m *bus.Message) error {
	meta, ctx, err := e.take(ctx, m)
	if err != nil {
		return err
	}
	if meta.handoffID == "" || e.acceptNotice(ctx, meta) {
		return nil
	}
	v, ok := e.instances.Load(meta.instanceID)
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownInstance, meta.instanceID)
	}
	if !v.(*instance).markAccepted(meta.step) {
		return ErrStaleReport
	}
	return e.handoffs.Accept(ctx, meta.handoffID)
}

// take is what ReportMessage and Accept do first: refuse a done ctx, read
// the work the message names, and ack the message on the bus (the agent has
// it). The context returned carries ctx's values without its cancellation:
// the step it starts is carried out whole.
func (e *Engine) take(ctx context.Context, m *bus.Message) (taskRef, context.Context, error) {
	if err := ctx.Err(); err != nil {
		return taskRef{}, ctx, err
	}
	meta, err := readTask(m)
	if err != nil {
		return taskRef{}, ctx, err
	}
	ctx = context.WithoutCancel(ctx)
	e.ack(ctx, m)
	return meta, ctx, nil
}

// ack acknowledges a hand-off message on the bus once its agent has taken
// it (a message already acked, or never needing one, is left alone).
func (e *Engine) ack(ctx context.Context, m *bus.Message) {
	if m.RequiresAck {
		_ = e.bus.Ack(ctx, m)
	}
}

// IsFinalNotice reports whether m is a final notice still waiting for its
// agent: a hand-off into a terminal state, which asks for no outcome.
func (e *Engine) IsFinalNotice(m *bus.Message) bool {
	ref, err := readTask(m)
	if err != nil || ref.handoffID == "" {
		return false
	}
	v, ok := e.instances.Load(ref.instanceID)
	if !ok {
		return false
	}
	i := v.(*instance)
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.notices[ref.handoffID]
}

// acceptNotice settles the final notice named by ref, if it is one.
func (e *Engine) acceptNotice(ctx context.Context, ref taskRef) bool {
	v, ok := e.instances.Load(ref.instanceID)
	if !ok || !v.(*instance).takeNotice(ref.handoffID) {
		return false
	}
	_ = e.handoffs.Accept(ctx, ref.handoffID)
	return true
}

// Close cancels every handler run, stops the engine's workers and waits for
// them; instances still running stay in the store as they were. Safe to call
// twice.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		e.unsubDead()
		e.cancel()
		e.instances.Range(func(_, v any) bool {
			v.(*instance).stopTimers()
			return true
		})
		if e.pool != nil {
			e.pool.close()
		}
		_ = e.handoffs.Close()
		if e.ownBus {
			_ = e.bus.Close()
		}
	})
	return nil
}

func (e *Engine) emit(ev Event) {
	for _, o := range e.observe {
		o(ev)
	}
}
