package handoff

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/registry"
)

// Transport is what the manager needs from the message layer: a way to send
// one message. *bus.Bus implements it.
type Transport interface {
	Send(ctx context.Context, m *bus.Message, opts ...bus.SendOption) error
}

var _ Transport = (*bus.Bus)(nil)

// Manager turns accepted hand-off commands into HANDOFF messages, tracks
// each one until its target accepts or rejects it or its time runs out,
// keeps the history of every instance and counts what happened. It is safe
// for concurrent use. Close stops every time-out timer.
type Manager struct {
	reg        *registry.Registry
	tr         Transport
	val        *Validator
	log        *zap.Logger
	clock      clock.Clock
	escalation string
	timeout    time.Duration
	newID      func() string

	ctx    context.Context // for the sends of time-out callbacks
	cancel context.CancelFunc
	wg     sync.WaitGroup // running time-out callbacks

	mu      sync.Mutex
	closed  bool
	byID    map[string]*entry   // every known hand-off
	pending map[string]*entry   // hand-offs waiting for their target
	history map[string][]*entry // per instance, oldest first
	stats   Stats
}

// entry is one hand-off the manager knows about.
type entry struct {
	rec   Record
	cmd   Command     // kept while pending, for sending and escalation
	timer clock.Timer // the acceptance time-out, while pending
	sent  bool        // handed to the transport (a prepared hand-off is not yet)
}

// NewManager returns a manager that validates commands against reg and
// sends hand-offs through t. Every Option applies.
func NewManager(reg *registry.Registry, t Transport, opts ...Option) (*Manager, error) {
	if reg == nil {
		return nil, &OptionError{Option: "NewManager", Reason: "registry is nil"}
	}
	if t == nil {
		return nil, &OptionError{Option: "NewManager", Reason: "transport is nil"}
	}
	c := newConfig(opts)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		reg:        reg,
		tr:         t,
		val:        newValidator(reg, c),
		log:        c.logger,
		clock:      c.clock,
		escalation: c.escalation,
		timeout:    c.timeout,
		newID:      c.newID,
		ctx:        ctx,
		cancel:     cancel,
		byID:       make(map[string]*entry),
		pending:    make(map[string]*entry),
		history:    make(map[string][]*entry),
		stats:      Stats{SentBy: make(map[string]int), ReceivedBy: make(map[string]int)},
	}, nil
}

// Validator returns the validator the manager applies.
func (m *Manager) Validator() *Validator { return m.val }

// Handoff validates cmd against the registry and the instance's recent
// hand-offs, sends it to its target as a HANDOFF message, records it as
// pending and starts its acceptance time-out. It returns the record, or a
// *RefusalError when the validator refuses (nothing is sent or recorded),
// or a *bus.HandoffError when the bus refuses the message (the record is
// kept with status failed).
func (m *Manager) Handoff(ctx context.Context, cmd Command) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	return m.dispatch(ctx, cmd, "")
}

// SelectAgent hands the current work to the agent a user selected
// (PRD-040's processUserAgentSelection): cmd.To is the selected agent and
// cmd.From the agent currently working. The reason is forced to
// user_request; an empty explanation or task gets a default. Only
// selectable agents may be chosen: any other is refused with a
// *RefusalError matching ErrNotSelectable.
func (m *Manager) SelectAgent(ctx context.Context, cmd Command) (Record, error) {
	cmd.Reason = ReasonUserRequest
	selectionDefaults(&cmd)
	return m.Handoff(ctx, cmd)
}

// selectionDefaults fills a user selection's empty explanation and task.
func selectionDefaults(cmd *Command) {
	if cmd.Explanation == "" {
		cmd.Explanation = "user selected agent " + cmd.To
	}
	if cmd.Task == "" {
		cmd.Task = cmd.Explanation
	}
}

// Prepare validates cmd and records it as pending without sending it: the
// first half of a hand-off whose sender must commit it before it goes out
// (a transactional outbox). Send sends it. A prepared hand-off has no
// acceptance time-out until it is sent. A user_request gets SelectAgent's
// defaults. Errors are Handoff's, less the bus's.
func (m *Manager) Prepare(ctx context.Context, cmd Command) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	if cmd.Reason == ReasonUserRequest {
		selectionDefaults(&cmd)
	}
	e, err := m.prepare(cmd, "", "", false)
	if err != nil {
		return Record{}, err
	}
	return e.rec, nil
}

// Restore records a hand-off prepared before a restart under the id it had,
// ready for Send. It is not validated again (it was when prepared, against
// a history this manager no longer has); only its target must exist. An id
// the manager already knows is refused with a *StatusError unless it is
// still prepared and unsent, which Restore leaves as it is.
func (m *Manager) Restore(ctx context.Context, id string, cmd Command) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	if id == "" {
		return Record{}, &UnknownHandoffError{ID: id}
	}
	m.mu.Lock()
	if e, ok := m.byID[id]; ok {
		defer m.mu.Unlock()
		if e.rec.Status == StatusPending && !e.sent {
			return e.rec, nil
		}
		return Record{}, &StatusError{ID: id, Status: e.rec.Status}
	}
	m.mu.Unlock()
	e, err := m.prepare(cmd, id, "", true)
	if err != nil {
		return Record{}, err
	}
	return e.rec, nil
}

// Send sends a prepared hand-off to its target as a HANDOFF message and
// starts its acceptance time-out. It returns the record, or a
// *bus.HandoffError when the bus refuses the message (the record is kept
// with status failed). A hand-off already sent or settled is a
// *StatusError; an unknown id an *UnknownHandoffError.
func (m *Manager) Send(ctx context.Context, id string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	e, ok := m.byID[id]
	switch {
	case !ok:
		m.mu.Unlock()
		return Record{}, &UnknownHandoffError{ID: id}
	case e.sent || e.rec.Status != StatusPending:
		m.mu.Unlock()
		return Record{}, &StatusError{ID: id, Status: e.rec.Status}
	}
	e.sent = true
	m.mu.Unlock()
	return m.send(ctx, e)
}

// dispatch validates (fully, or for an escalation only the target), records
// and sends one hand-off. parent is the timed-out hand-off an escalation
// replaces, "" otherwise.
func (m *Manager) dispatch(ctx context.Context, cmd Command, parent string) (Record, error) {
	e, err := m.prepare(cmd, "", parent, parent != "")
	if err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	e.sent = true
	m.mu.Unlock()
	return m.send(ctx, e)
}

// prepare validates (fully, or with targetOnly just the target) and records
// one hand-off as pending and unsent. id "" gets a new id.
func (m *Manager) prepare(cmd Command, id, parent string, targetOnly bool) (*entry, error) {
	msgID := uuid.NewString()
	if id == "" {
		id = msgID
		if m.newID != nil {
			id = m.newID()
		}
	}
	now := m.clock.Now()
	e := &entry{rec: cmd.ToRecord(id, now), cmd: cmd}
	e.rec.MessageID = msgID
	e.rec.Status = StatusPending
	e.rec.Parent = parent

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if err := m.validate(&cmd, targetOnly); err != nil {
		m.stats.Refused++
		m.mu.Unlock()
		m.logRefusal(&cmd, err)
		return nil, err
	}
	m.byID[id] = e
	m.pending[id] = e
	m.history[cmd.InstanceID] = append(m.history[cmd.InstanceID], e)
	m.mu.Unlock()
	return e, nil
}

// send puts a recorded hand-off on the bus and starts its time-out.
func (m *Manager) send(ctx context.Context, e *entry) (Record, error) {
	m.mu.Lock()
	sent, cmd := e.rec, e.cmd
	m.mu.Unlock()

	err := m.tr.Send(ctx, handoffMessage(&sent, &cmd))

	m.mu.Lock()
	if err != nil {
		if e.rec.Status == StatusPending {
			m.settleLocked(e, StatusFailed, err.Error())
		}
		m.stats.Failed++
		rec := e.rec
		m.mu.Unlock()
		return rec, &bus.HandoffError{From: cmd.From, To: cmd.To, Reason: "send failed", Err: err}
	}
	m.stats.Total++
	m.stats.SentBy[cmd.From]++
	m.stats.ReceivedBy[cmd.To]++
	if sent.Parent != "" {
		m.stats.Escalated++
	}
	if e.rec.Status == StatusPending && !m.closed {
		d := cmd.Timeout
		if d == 0 {
			d = m.timeout
		}
		id := e.rec.ID
		e.timer = m.clock.AfterFunc(d, func() { m.expire(id, d) })
	}
	rec := e.rec
	m.mu.Unlock()
	m.logHandoff(&rec, &cmd)
	return rec, nil
}

// validate runs the validator with the instance's history; an escalation is
// a system action and only needs an existing target. The caller holds m.mu.
func (m *Manager) validate(cmd *Command, escalation bool) error {
	if escalation {
		rule := *cmd
		rule.Reason = ReasonRule
		return m.val.check(&rule, nil)
	}
	hist := m.history[cmd.InstanceID]
	return m.val.check(cmd, func(to string) int {
		n, seen := 0, 0
		for i := len(hist) - 1; i >= 0 && seen < m.val.window; i-- {
			if hist[i].rec.Status == StatusFailed {
				continue
			}
			seen++
			if hist[i].rec.To == to {
				n++
			}
		}
		return n
	})
}

// settleLocked ends a pending hand-off. The caller holds m.mu.
func (m *Manager) settleLocked(e *entry, s Status, detail string) {
	e.rec.Status = s
	e.rec.Detail = detail
	e.rec.Settled = m.clock.Now().UTC()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.cmd = Command{}
	delete(m.pending, e.rec.ID)
}

// settle finds a pending hand-off and ends it with status s.
func (m *Manager) settle(ctx context.Context, id string, s Status, detail string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byID[id]
	if !ok {
		return Record{}, &UnknownHandoffError{ID: id}
	}
	if e.rec.Status != StatusPending {
		return Record{}, &StatusError{ID: id, Status: e.rec.Status}
	}
	m.settleLocked(e, s, detail)
	switch s {
	case StatusAccepted:
		m.stats.Accepted++
	case StatusRejected:
		m.stats.Rejected++
	}
	return e.rec, nil
}

// Accept records that the target took the hand-off and stops its time-out.
func (m *Manager) Accept(ctx context.Context, id string) error {
	rec, err := m.settle(ctx, id, StatusAccepted, "")
	if err == nil {
		if ce := m.log.Check(zap.DebugLevel, "handoff accepted"); ce != nil {
			ce.Write(zap.String("category", "handoff"), zap.String("handoff_id", rec.ID),
				zap.String("from_agent", rec.From), zap.String("to_agent", rec.To))
		}
	}
	return err
}

// Reject records that the target refused the hand-off, stops its time-out,
// and tells the sender with an ERROR message (action "handoff_rejected")
// that carries the reason. The rejection is recorded even when that message
// cannot be delivered; the delivery error is then returned.
func (m *Manager) Reject(ctx context.Context, id, reason string) error {
	rec, err := m.settle(ctx, id, StatusRejected, reason)
	if err != nil {
		return err
	}
	if ce := m.log.Check(zap.WarnLevel, "handoff rejected"); ce != nil {
		ce.Write(zap.String("category", "handoff"), zap.String("handoff_id", rec.ID),
			zap.String("from_agent", rec.From), zap.String("to_agent", rec.To),
			zap.String("workflow_id", rec.WorkflowID), zap.Int("step_number", rec.Step),
			zap.String("reason", reason))
	}
	msg := errorMessage(&rec, actionRejected, "hand-off rejected by "+rec.To+": "+reason)
	msg.Content["reason"] = reason
	if err := m.tr.Send(ctx, msg); err != nil {
		return &bus.HandoffError{From: rec.To, To: rec.From, Reason: "rejection notice not delivered", Err: err}
	}
	return nil
}

// Lookup returns the record of a hand-off by id.
func (m *Manager) Lookup(id string) (Record, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byID[id]
	if !ok {
		return Record{}, false
	}
	return e.rec, true
}

// History returns the hand-offs of an instance, oldest first.
func (m *Manager) History(instanceID string) []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	hist := m.history[instanceID]
	out := make([]Record, len(hist))
	for i, e := range hist {
		out[i] = e.rec
	}
	return out
}

// Pending returns the hand-offs waiting for their target, oldest first.
func (m *Manager) Pending() []Record {
	m.mu.Lock()
	out := make([]Record, 0, len(m.pending))
	for _, e := range m.pending {
		out = append(out, e.rec)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(a.Timestamp.Compare(b.Timestamp), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Forget drops the history of a finished instance. Hand-offs of it that are
// still pending stay tracked until they settle.
func (m *Manager) Forget(instanceID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.history[instanceID] {
		if e.rec.Status != StatusPending {
			delete(m.byID, e.rec.ID)
		}
	}
	delete(m.history, instanceID)
}

// Stats returns the counts since the manager started.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Pending = len(m.pending)
	s.SentBy = maps.Clone(m.stats.SentBy)
	s.ReceivedBy = maps.Clone(m.stats.ReceivedBy)
	return s
}

// Close stops every time-out timer and waits for time-out handling already
// under way. Pending hand-offs stay pending. Later calls to Handoff return
// ErrClosed. Close is safe to call more than once.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for _, e := range m.pending {
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	return nil
}
