package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// The transactional outbox. A step does not send the work it starts: it
// records each piece as an Outgoing in the step's record.Step, and the bus is
// fed only once the store has committed the step. A crash before the commit
// loses the step and its work together; a crash after it leaves the work in
// the store's outbox, and Resume sends it again under the same idempotency
// key and hand-off id. An item stays in the outbox until a later step
// settles it: its run ended (or was abandoned), or its notice was taken.

// outbox is an instance's side of the transactional outbox: the work of
// the step being built, sent once the step has committed, and the items
// the store holds unsettled until their work is over.
type outbox struct {
	// buf holds the step's outbox (items), sent once the step has
	// committed: a buffer of sendingBufs while the step has work, nil
	// between steps, so that an instance waiting on an agent holds no
	// outbox buffer.
	buf        *[]sending
	open       []openItem // outbox items the store holds unsettled
	settledBuf []string   // reused by settled
}

// items is the step's outbox.
func (o *outbox) items() []sending {
	if o.buf == nil {
		return nil
	}
	return *o.buf
}

// sendingBufs and outgoingBufs recycle the buffers of a step's outbox and
// of the record.Outgoing copies commitStep hands the store (which copies
// what it keeps): an instance holds neither between its steps.
var (
	sendingBufs  = sync.Pool{New: func() any { b := make([]sending, 0, 4); return &b }}
	outgoingBufs = sync.Pool{New: func() any { b := make([]record.Outgoing, 0, 4); return &b }}
)

// takeItems takes the step's outbox, leaving none: the caller hands the
// buffer back with putItems.
func (o *outbox) takeItems() *[]sending {
	b := o.buf
	o.buf = nil
	return b
}

// putItems clears a buffer taken with takeItems and recycles it.
func putItems(b *[]sending) {
	if b == nil {
		return
	}
	clear(*b)
	*b = (*b)[:0]
	sendingBufs.Put(b)
}

// dropItems forgets the step's outbox.
func (o *outbox) dropItems() { putItems(o.takeItems()) }

// sending is an outbox item of the step being built, waiting for the commit.
type sending struct {
	out record.Outgoing
	r   *run // nil for a final notice
	// resent marks work sent again as an instance is resumed: it goes out
	// under a transport key of its own (resentKey), so that it is
	// delivered even when the transport took the first send already.
	resent bool
	// first marks the first work of a start whose room the engine checked
	// (RoomTeller): a full mailbox then means that other work took the
	// room since the check (work sent again by a resume, another
	// engine's starts), not that the start should fail.
	first bool
	// commits is the commit count in that key, set at the first try: a
	// later try (sendLater) goes under the same key, kept once.
	commits int
}

// openItem is an outbox item the store holds unsettled.
type openItem struct {
	key    string // its run's key as it started it: a run made anew in r (see reusableRun) has another
	r      *run   // the run it started; nil for a final notice
	notice string // the notice's hand-off id
}

// runKindName names a run kind in an Outgoing.
func runKindName(k runKind) string {
	switch k {
	case runDelegate:
		return "delegate"
	case runBranch:
		return "branch"
	case runItem:
		return "item"
	}
	return "state"
}

func runKindOf(name string) runKind {
	switch name {
	case "delegate":
		return runDelegate
	case "branch":
		return runBranch
	case "item":
		return runItem
	}
	return runState
}

// patient reports whether a full mailbox only delays s instead of failing
// its run: s is work sent again as its instance resumed, whose first send
// may well be one of the items that fill the mailbox (and if it is not,
// s must still reach the agent), or the first work of a start that found
// room at its check. Such work is offered (Offerer), not dead-lettered,
// and sent again after a growing pause until it is taken or its run ends;
// the run waits meanwhile, guarded by its own timeouts.
func (s *sending) patient() bool { return s.resent || s.first }

// later reports whether s, refused with err, is sent again later rather
// than failing its run: the transport cannot take it for now, or s is
// patient and the mailbox is full.
func (s *sending) later(err error) bool {
	return errors.Is(err, transport.ErrUnavailable) || (s.patient() && errors.Is(err, transport.ErrQueueFull))
}

// queue adds s, the work of s.r (nil for a final notice, described by
// s.out), to the step's outbox and to the open items; work of a start
// whose room check passed is its first (see patient).
func (i *instance) queue(s sending) {
	s.first = i.roomChecked
	if i.out.buf == nil {
		i.out.buf = sendingBufs.Get().(*[]sending) // empty: putItems leaves it so
	}
	*i.out.buf = append(*i.out.buf, s)
	if i.out.open == nil {
		i.out.open = make([]openItem, 0, 2) // a step's work and its successor's, as a step settles the one and opens the other
	}
	i.out.open = append(i.out.open, openItem{key: s.out.Key, r: s.r, notice: noticeID(s.out)})
}

func noticeID(o record.Outgoing) string {
	if o.Kind == record.OutgoingNotice {
		return o.HandoffID
	}
	return ""
}

// outgoing describes the work a run is sent.
func (i *instance) outgoing(r *run, rule *rules.Rule) record.Outgoing {
	o := record.Outgoing{
		Key: r.key, Kind: record.OutgoingDispatch, Run: runKindName(r.kind), Step: r.step, Attempt: r.attempt,
		State: r.state.Name, To: r.agent, From: r.from, HandoffID: r.handoffID, Reason: string(r.handoffReason),
		Explanation: r.reason, Task: r.description, Priority: r.priority, Rule: ruleID(rule),
		Previous: r.previous, Constraints: r.constraints, Payload: r.payload,
		Delegator: r.delegator(), ReturnControl: r.returnControl, Returned: r.returned, Index: r.index,
	}
	if r.handoffID != "" {
		o.Kind = record.OutgoingHandoff
	}
	return o
}

// runOf rebuilds the run an outbox item started.
func (i *instance) runOf(o record.Outgoing, st *rules.State) *run {
	r := &run{
		step: o.Step, attempt: max(o.Attempt, 1), state: st, agent: o.To, from: o.From, key: o.Key,
		handoffID: o.HandoffID, description: o.Task, reason: o.Explanation, priority: max(o.Priority, 1),
		previous: o.Previous, constraints: o.Constraints, kind: runKindOf(o.Run),
		handoffReason: handoff.Reason(o.Reason), payload: o.Payload,
		returnControl: o.ReturnControl,
		returned:      o.Returned,
		index:         o.Index,
	}
	if o.Delegator != "" {
		r.more().delegator = o.Delegator
	}
	return r
}

// settled returns the keys of open outbox items whose work is over, and
// drops them from the open list. The returned slice is reused.
func (i *instance) settled() []string {
	keys := i.out.settledBuf[:0]
	open := i.out.open[:0]
	for _, it := range i.out.open {
		if i.itemOver(it) {
			keys = append(keys, it.key)
			continue
		}
		open = append(open, it)
	}
	clear(i.out.open[len(open):])
	i.out.open = open
	i.out.settledBuf = keys
	return keys
}

// dropOver drops from the step's outbox the work whose run ended within the
// same step (a join that completed or timed out as it was rebuilt, say):
// it is neither committed nor sent, and settled() leaves it out.
func (i *instance) dropOver() {
	items, keep := i.out.items(), 0
	for k := range items {
		s := &items[k]
		if s.r != nil && i.itemOver(openItem{key: s.out.Key, r: s.r}) {
			continue
		}
		if keep != k {
			// Moved only when an item before it was dropped: copying
			// each item onto itself was a write barrier for each of its
			// pointers while the collector ran.
			items[keep] = *s
		}
		keep++
	}
	clear(items[keep:])
	if i.out.buf != nil {
		*i.out.buf = items[:keep]
	}
}

// settleLater marks an outbox item from before a restart that the resumed
// instance does not take up: the next commit settles it.
func (i *instance) settleLater(key string) {
	i.out.open = append(i.out.open, openItem{key: key, r: &run{ended: true}})
}

// itemOver reports whether an open outbox item's work is over: its run
// ended or is no longer the instance's, or its notice was taken.
func (i *instance) itemOver(it openItem) bool {
	if it.r == nil {
		return !i.notices[it.notice]
	}
	if it.r.ended || it.r.key != it.key || i.status.Finished() {
		return true // ended, or made anew for another step (see reusableRun)
	}
	if i.run == it.r {
		return false
	}
	return i.work == nil || i.work.run(it.r.step) != it.r
}

// send hands one outbox item to its agent: to the agent's lane for a Go
// handler; otherwise its task, written by the wire codec, through the
// transport, resent work under the resent key of its commit count.
func (i *instance) send(ctx context.Context, s *sending) error {
	r := s.r
	if r == nil {
		r = i.runOf(s.out, i.state) // a final notice, as it was prepared
		r.notice = true
	} else if r.ended || i.active(r.step) != r {
		return nil // an earlier send of this step failed and ended the run (a join, the instance)
	}
	if l := i.e.lanes[r.agent]; l != nil {
		return i.sendLocal(l, r, s.patient())
	}
	t := i.task(r)
	t.Traceparent = i.traceparent(r)
	// Patient work is offered: a full mailbox does not dead-letter it.
	how := wire.Sending{Offer: s.patient()}
	if s.resent {
		if s.commits == 0 {
			s.commits = i.commits
		}
		how.Key = resentKey(t.IdempotencyKey, s.commits)
	}
	return wire.Send(ctx, i.e.tr, t, how)
}

// sendFailed handles work the bus refused after its step was committed (a
// full mailbox, say; the bus dead-lettered the message): the run failed
// before it began, as its kind decides.
func (i *instance) sendFailed(ctx context.Context, s *sending, err error) {
	r := s.r
	if r == nil {
		delete(i.notices, s.out.HandoffID)
		i.note(record.Entry{Kind: record.KindFinalNotice, Step: s.out.Step, State: s.out.State, From: s.out.From, To: s.out.To, Rule: s.out.Rule, HandoffID: s.out.HandoffID, Error: err.Error(), Detail: "not delivered"})
		return
	}
	if r.ended || i.active(r.step) != r {
		return // the run was over before its work went out
	}
	r.ended = true
	r.stopTimers()
	ran := record.Entry{Kind: record.KindAgentRun, Step: r.step, State: r.state.Name, Agent: r.agent, Attempt: r.attempt, Error: err.Error(), ErrorKind: "transport"}
	i.note(ran)
	i.runEnded(r, &ran, err)
	r.endSpan("", "transport", err)
	if i.work != nil {
		i.work.sendFailed(ctx, i, r, err) // a branch or an item
		return
	}
	switch {
	case r.kind == runDelegate && !r.returned:
		i.decide(ctx, "rejected", nil, rules.ErrorInfo{Message: err.Error(), Kind: "rejected"})
	case r.returned:
		i.decide(ctx, "error", nil, rules.ErrorInfo{Message: err.Error(), Retryable: true, Kind: "error"})
	default:
		i.runFailed(ctx, r, registry.Kind(err, "transport"), false, true)
	}
}

// noticeStep is the step in a notice's hand-off id (instance:step).
func noticeStep(id string) int {
	_, step := registry.SplitStepKey(id)
	return step
}

// The pauses before work the transport could not take for now
// (transport.ErrUnavailable), or patient work a full mailbox refused, is sent
// again: it doubles from sendAgainFirst up to sendAgainMax.
const (
	sendAgainFirst = 500 * time.Millisecond
	sendAgainMax   = 30 * time.Second
)

// sendLater sends s again after delay: its step is committed and the item
// is in the outbox, so the run goes on waiting, guarded by its own timeouts
// (the state's timeout, the join's), as if the work had been sent. The
// caller holds mu.
func (i *instance) sendLater(s sending, err error, delay time.Duration) {
	level := zap.WarnLevel
	if errors.Is(err, transport.ErrQueueFull) {
		level = zap.InfoLevel // patient work behind a full mailbox: expected after a restart, the run waits
	}
	if ce := i.e.log.Check(level, "engine: work not sent for now; sending again"); ce != nil {
		ce.Write(zap.String("instance", i.id), zap.Int("step", s.out.Step), zap.String("agent", s.out.To), zap.Duration("in", delay), zap.Error(err))
	}
	t := i.e.clock.AfterFunc(delay, func() {
		i.e.offPool(func() { i.sendAgain(s, delay) })
	})
	if s.r != nil {
		x := s.r.more()
		if x.resend != nil {
			x.resend.Stop()
		}
		x.resend = t
	}
}

// sendAgain is sendLater's try: it sends s unless its run has ended or the
// instance has left the engine, and waits longer after another refusal
// for now (or, for patient work, a full mailbox). A refusal for good fails
// the run as at the first send.
func (i *instance) sendAgain(s sending, delay time.Duration) {
	if i.e.closed.Load() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.commitErr != nil || (i.status.Finished() && s.r != nil) {
		return // released, refused by the store, or over
	}
	if s.r == nil && !i.notices[s.out.HandoffID] {
		return // the notice was taken meanwhile
	}
	ctx := i.e.ctx
	err := i.send(ctx, &s)
	switch {
	case err == nil:
	case s.later(err):
		i.sendLater(s, err, min(2*delay, sendAgainMax))
	default:
		i.sendFailed(ctx, &s, err)
		i.commit(ctx)
	}
}
