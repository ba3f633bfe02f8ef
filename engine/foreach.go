package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// foreach is the visit of a foreach state under way: one run of the
// state's agent per item, at most max_concurrency at once, started in item
// order; each run follows the state's retry and timeout.
type foreach struct {
	state    *rules.State
	items    []any
	results  []any               // by index; nil for an item that failed or has not ended
	failures []itemFailure       // items that failed for good, in the order they did
	runs     map[int]*run        // the item runs under way, by step
	retries  map[int]clock.Timer // the retries waiting for their backoff, by index
	next     int                 // the next item to start
	open     int                 // items started and not ended: running, or waiting for a retry
	ended    int
	d        dispatch // how the state was entered: the item runs' task and priority
}

// itemFailure is an item that failed after its retries.
type itemFailure struct {
	index         int
	message, kind string
}

func newForeach(st *rules.State, items []any, d dispatch) *foreach {
	n := min(st.Foreach.MaxConcurrency, len(items))
	return &foreach{
		state: st, items: items, results: make([]any, len(items)), d: d,
		runs: make(map[int]*run, n), retries: map[int]clock.Timer{},
	}
}

// itemsResult is the result of a foreach state: the items' results in item
// order (null for a failed item) and the failures in item order.
func (f *foreach) itemsResult() map[string]any {
	slices.SortFunc(f.failures, func(a, b itemFailure) int { return cmp.Compare(a.index, b.index) })
	errs := make([]any, len(f.failures))
	for k, fl := range f.failures {
		errs[k] = map[string]any{"index": fl.index, "message": fl.message, "kind": fl.kind}
	}
	return map[string]any{"results": f.results, "errors": errs}
}

// emptyItemsResult is the result of a foreach state whose items could not
// be evaluated.
func emptyItemsResult() map[string]any {
	return map[string]any{"results": []any{}, "errors": []any{}}
}

// foreachKind is the kind of a foreach state: a run of its agent per item
// (see foreach).
type foreachKind struct{}

// enter enters a foreach state: its items (evaluated by Decide for a
// rule's transition, here for the initial state or on_limit), then the
// first max_concurrency item runs. Items that are not a list are the
// outcome error, kind invalid_items; an empty list is joined at once.
func (foreachKind) enter(ctx context.Context, i *instance, d dispatch) {
	st := i.state
	i.run = nil
	items, err := d.items, d.itemsErr
	if !d.itemsSet {
		env := rules.Env{
			Result: orEmpty(d.previous), Input: i.input, Context: i.context,
			State: st.Name, Step: i.step, Visits: i.visits.m, Usage: i.usage().Totals,
		}
		items, err = i.e.wf.Items(st, &env)
		if err == nil && i.step+len(items) > i.e.wf.Limits.MaxSteps {
			i.limitHit(ctx, &LimitError{Limit: "max_steps", State: st.Name, Count: i.step + len(items), Max: i.e.wf.Limits.MaxSteps})
			return
		}
	}
	if err != nil {
		i.note(record.Entry{Kind: record.KindForeach, State: st.Name, Agent: st.Foreach.Agent, Error: err.Error(), ErrorKind: "invalid_items"})
		i.decide(ctx, "error", emptyItemsResult(), rules.ErrorInfo{Message: err.Error(), Kind: "invalid_items"})
		return
	}
	if items == nil {
		items = []any{}
	}
	f := newForeach(st, items, d)
	i.work = f
	i.note(record.Entry{Kind: record.KindForeach, State: st.Name, Agent: st.Foreach.Agent, Result: map[string]any{"items": items},
		Detail: fmt.Sprintf("%d items, at most %d at once", len(items), st.Foreach.MaxConcurrency)})
	i.pumpItems(ctx, f)
	i.checkForeach(ctx, f)
}

// pumpItems starts the next items, in item order, while fewer than
// max_concurrency are open.
func (i *instance) pumpItems(ctx context.Context, f *foreach) {
	for i.work == f && f.open < f.state.Foreach.MaxConcurrency && f.next < len(f.items) {
		k := f.next
		f.next++
		f.open++
		i.launchItem(ctx, f, k, 1)
	}
}

// launchItem starts one run (a step) of the state's agent over item k.
func (i *instance) launchItem(ctx context.Context, f *foreach, k, attempt int) {
	i.step++
	r := &run{
		step: i.step, attempt: attempt, state: f.state, agent: f.state.Foreach.Agent, kind: runItem,
		index: k, item: f.items[k], description: f.d.description, reason: f.d.reason,
		priority: f.d.priority, previous: f.d.previous, constraints: f.d.constraints,
	}
	f.runs[r.step] = r
	_ = i.launch(ctx, r, f.d.rule) // an item run is the engine's dispatch: no hand-off to refuse
}

// runDone ends an item run with its agent's outcome: its own trigger is
// recorded, not matched; a failure, a reserved trigger or a request to hand
// off is a failed run, which the state's retry policy may retry.
func (f *foreach) runDone(ctx context.Context, i *instance, r *run, out registry.Outcome, runErr error, isReject, timedOut bool) {
	delete(f.runs, r.step)
	switch {
	case isReject:
		var rej *registry.RejectError
		errors.As(runErr, &rej)
		i.itemFailed(f, r, registry.Kind(fmt.Errorf("%s rejected item %d: %s", r.agent, r.index, rej.Reason), "rejected"), false)
	case timedOut || errors.Is(runErr, ErrTimeout):
		kind := registry.KindOf(runErr)
		if kind == "error" {
			kind = "timeout"
		}
		i.itemFailed(f, r, registry.Kind(runErr, kind), true)
	case runErr != nil:
		i.itemFailed(f, r, runErr, registry.IsRetryable(runErr))
	case out.Handoff != nil:
		i.itemFailed(f, r, fmt.Errorf("engine: item %d of foreach %s cannot hand off (it asked to hand off to %s)", r.index, f.state.Name, out.Handoff.To), false)
	case reserved(out.Trigger):
		i.itemFailed(f, r, fmt.Errorf("%w: agent %s reported %q", ErrReservedTrigger, r.agent, out.Trigger), false)
	case out.Trigger == "":
		i.itemFailed(f, r, fmt.Errorf("engine: agent %s reported no trigger", r.agent), false)
	default:
		f.results[r.index] = orEmpty(out.Result)
		f.open--
		f.ended++
	}
	i.itemsMoved(ctx, f)
}

// sendFailed fails an item run whose work the transport refused; the
// state's retry policy may retry it.
func (f *foreach) sendFailed(ctx context.Context, i *instance, r *run, err error) {
	delete(f.runs, r.step)
	i.itemFailed(f, r, registry.Kind(err, "transport"), true)
	i.itemsMoved(ctx, f)
}

func (f *foreach) run(step int) *run { return f.runs[step] }

func (f *foreach) pending(buf []Pending) []Pending {
	for _, r := range f.runs {
		buf = appendRun(buf, PendingForeach, r)
	}
	return buf
}

func (f *foreach) progress(out []RunProgress) []RunProgress {
	for _, r := range f.runs {
		out = appendProgress(out, r)
	}
	return out
}

// itemsMoved starts the items that now fit and completes the state when
// every item has ended.
func (i *instance) itemsMoved(ctx context.Context, f *foreach) {
	i.pumpItems(ctx, f)
	if i.work == f {
		i.checkForeach(ctx, f)
	}
}

// itemFailed applies the state's retry policy to a failed item run; an
// item with no retry left has failed.
func (i *instance) itemFailed(f *foreach, r *run, err error, retryable bool) {
	st := r.state
	kind := registry.KindOf(err)
	if retryable && r.attempt-1 < st.Retry.Max && st.Retry.Retries(kind) {
		delay := st.Retry.Jittered(r.attempt, i.e.jitter(i.id, r.step))
		i.note(record.Entry{Kind: record.KindRetry, Step: r.step, State: st.Name, Agent: r.agent, Attempt: r.attempt + 1, Delay: delay, Error: err.Error(), ErrorKind: kind, Index: r.index})
		i.armItemRetry(f, r.index, r.attempt+1, delay)
		return
	}
	f.failures = append(f.failures, itemFailure{index: r.index, message: err.Error(), kind: kind})
	f.open--
	f.ended++
}

// armItemRetry runs item k again, as attempt, after delay.
func (i *instance) armItemRetry(f *foreach, k, attempt int, delay time.Duration) {
	f.retries[k] = i.e.clock.AfterFunc(max(delay, 0), func() {
		i.e.exec.Submit(func() { i.retryItem(i.e.ctx, f, k, attempt) })
	})
}

// retryItem starts the retry of item k once its backoff is over; a retry
// that would exceed max_steps is a limit hit.
func (i *instance) retryItem(ctx context.Context, f *foreach, k, attempt int) {
	if i.e.closed.Load() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.status.Finished() || i.work != f {
		return
	}
	delete(f.retries, k)
	if i.step+1 > i.e.wf.Limits.MaxSteps {
		i.endWork(ctx)
		i.limitHit(ctx, &LimitError{Limit: "max_steps", State: f.state.Name, Count: i.step + 1, Max: i.e.wf.Limits.MaxSteps})
	} else {
		i.launchItem(ctx, f, k, attempt)
	}
	i.commit(ctx)
}

// checkForeach completes the state once every item has ended: joined when
// none failed, partial when the failures are within tolerate, otherwise
// the outcome error with kind foreach_failed; the result is the same.
func (i *instance) checkForeach(ctx context.Context, f *foreach) {
	if f.ended < len(f.items) {
		return
	}
	i.endWork(ctx)
	result := f.itemsResult()
	n, failed := len(f.items), len(f.failures)
	tolerated := f.state.Foreach.Tolerated(n)
	outcome, info := "joined", rules.ErrorInfo{}
	switch {
	case failed == 0:
	case failed <= tolerated:
		outcome = "partial"
	default:
		outcome = "error"
		info = rules.ErrorInfo{Message: fmt.Sprintf("foreach %s: %d of %d items failed, %d tolerated", f.state.Name, failed, n, tolerated), Kind: "foreach_failed"}
	}
	i.note(record.Entry{Kind: record.KindJoined, State: f.state.Name, Trigger: outcome, Detail: foreachSummary(f)})
	i.decide(ctx, outcome, result, info)
}

func foreachSummary(f *foreach) string {
	s := fmt.Sprintf("%d of %d items succeeded", len(f.items)-len(f.failures), len(f.items))
	if len(f.failures) == 0 {
		return s
	}
	idx := make([]string, len(f.failures))
	for k, fl := range f.failures {
		idx[k] = strconv.Itoa(fl.index)
	}
	return s + "; failed: " + strings.Join(idx, ", ")
}

// stop ends the foreach under way: its item runs still going are
// cancelled (their replies will be late) and its pending retries dropped.
func (f *foreach) stop() {
	for _, r := range f.runs {
		abandon(r)
	}
	for _, t := range f.retries {
		t.Stop()
	}
}

func (f *foreach) end(context.Context) { f.stop() }

// itemState is what the history says of one item, as foreachKind.resume reads it.
type itemState struct {
	run     *run          // the run under way
	failed  *record.Entry // the last failed run, until a retry entry follows it
	retry   *record.Entry // the retry waiting for its backoff
	done    bool
	started bool
}

// resume rebuilds the foreach of the current visit from the
// history: its items (from the foreach entry), the items that ended, the
// retries waiting and the runs under way; the runs still owed a reply are
// sent again from the outbox, the retries armed with what is left of their
// backoff, and the items never started are started as room allows.
func (foreachKind) resume(ctx context.Context, i *instance, _ record.Snapshot, history []record.Entry, outbox []record.Outgoing) error {
	st := i.state
	begin := -1
	for k := len(history) - 1; k >= 0; k-- {
		e := history[k]
		if e.Kind == record.KindForeach && e.State == st.Name {
			begin = k
			break
		}
		if e.Kind == record.KindTransition && e.Next == st.Name {
			break
		}
	}
	if begin < 0 {
		return fmt.Errorf("%w %s: no foreach of state %s in its history", ErrCannotResume, i.id, st.Name)
	}
	items, ok := history[begin].Result["items"].([]any)
	if !ok {
		return fmt.Errorf("%w %s: the foreach entry of state %s has no items", ErrCannotResume, i.id, st.Name)
	}
	f := newForeach(st, items, dispatch{priority: rules.PriorityNormal})
	states := make([]itemState, len(items))
	byStep := map[int]int{}
	for k := begin + 1; k < len(history); k++ {
		e := &history[k]
		if e.State != st.Name {
			continue
		}
		if e.Index < 0 || e.Index >= len(items) {
			return fmt.Errorf("%w %s: item %d of state %s is not among its %d items", ErrCannotResume, i.id, e.Index, st.Name, len(items))
		}
		s := &states[e.Index]
		switch e.Kind {
		case record.KindDispatch, KindResumed:
			f.d.description, f.d.priority = e.Detail, max(e.Priority, 1)
			s.run = &run{step: e.Step, attempt: max(e.Attempt, 1), state: st, agent: st.Foreach.Agent, kind: runItem,
				index: e.Index, item: items[e.Index], key: registry.StepKey(i.id, e.Step), description: e.Detail, priority: max(e.Priority, 1)}
			s.started, s.failed, s.retry = true, nil, nil
			byStep[e.Step] = e.Index
			f.next = max(f.next, e.Index+1)
		case record.KindAgentRun:
			if idx, ok := byStep[e.Step]; !ok || idx != e.Index || s.run == nil || s.run.step != e.Step {
				continue
			}
			s.run = nil
			if e.Error == "" && e.Trigger != "" && !reserved(e.Trigger) && e.To == "" {
				f.results[e.Index] = orEmpty(e.Result)
				s.done = true
			} else {
				s.failed = e
			}
		case record.KindRetry:
			if s.failed != nil {
				s.retry, s.failed = e, nil
			}
		}
	}
	i.run = nil
	i.work = f
	for k := range states[:f.next] {
		s := &states[k]
		switch {
		case s.done:
			f.ended++
		case s.failed != nil:
			f.failures = append(f.failures, itemFailure{index: k, message: s.failed.Error, kind: cmp.Or(s.failed.ErrorKind, "error")})
			f.ended++
		case s.retry != nil:
			f.open++
			i.armItemRetry(f, k, s.retry.Attempt, s.retry.Time.Add(s.retry.Delay).Sub(i.e.clock.Now()))
		case s.run != nil:
			f.open++
			f.runs[s.run.step] = s.run
		default:
			// Counted as started but with nothing recorded: start it again.
			f.open++
			i.launchItem(ctx, f, k, 1)
		}
	}
	for _, o := range outbox {
		if o.Kind == record.OutgoingNotice {
			if err := i.resend(ctx, o, nil); err != nil {
				return err
			}
			continue
		}
		old := f.runs[o.Step]
		if old == nil || o.Index != old.index {
			i.settleLater(o.Key) // not an item run still owed a reply
			continue
		}
		r := i.runOf(o, st)
		r.item = items[r.index]
		f.runs[o.Step] = r
		if err := i.resend(ctx, o, r); err != nil {
			return err
		}
	}
	owed := make([]*run, 0, len(f.runs))
	for _, r := range f.runs {
		owed = append(owed, r)
	}
	slices.SortFunc(owed, func(a, b *run) int { return cmp.Compare(a.step, b.step) })
	for _, r := range owed {
		if r.key != "" && !i.isOpen(r.key) {
			// An item run with neither a reply nor an outbox item: send
			// its work again under its step.
			i.note(record.Entry{Kind: KindResumed, Step: r.step, State: st.Name, Agent: r.agent, Attempt: r.attempt, Priority: r.priority, Detail: r.description, Index: r.index})
			r.handler = i.e.handler(r.agent)
			i.queue(sending{out: i.outgoing(r, nil), r: r})
			i.arm(r)
		}
	}
	i.itemsMoved(ctx, f)
	return nil
}
