package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// waiting is the visit of a wait state under way: the instance runs nothing
// until one of the state's signals, or its timeout, is the outcome.
type waiting struct {
	state *rules.State
	since time.Time
	timer clock.Timer
}

// waitKind is the kind of a wait state: the instance runs nothing until
// one of the state's signals, or its timeout, is the outcome.
type waitKind struct{}

// enter enters a wait state just entered: nothing runs and no step is
// taken; the state's timeout, if any, is armed from now.
func (waitKind) enter(_ context.Context, i *instance, _ dispatch) {
	st := i.state
	i.run = nil
	w := &waiting{state: st, since: i.e.clock.Now()}
	i.work = w
	i.note(record.Entry{Kind: record.KindWaiting, State: st.Name, Agent: st.Name, Detail: strings.Join(st.Wait.Signals, ", "), Delay: st.Timeout})
	i.armWait(w, st.Timeout)
}

// armWait arms the timeout of w to fire after left.
func (i *instance) armWait(w *waiting, left time.Duration) {
	if w.state.Timeout <= 0 {
		return
	}
	w.timer = i.e.clock.AfterFunc(max(left, 0), func() {
		i.e.exec.Submit(func() { i.waitTimedOut(i.e.ctx, w) })
	})
}

// A wait has no runs.
func (w *waiting) run(int) *run { return nil }
func (w *waiting) runDone(context.Context, *instance, *run, registry.Outcome, error, bool, bool) {
}
func (w *waiting) sendFailed(context.Context, *instance, *run, error) {}
func (w *waiting) progress(out []RunProgress) []RunProgress           { return out }

func (w *waiting) pending(buf []Pending) []Pending {
	return append(buf, Pending{Kind: PendingWait, State: w.state.Name, Since: w.since, Deadline: deadline(w.since, w.state.Timeout), Signals: w.state.Wait.Signals})
}

func (w *waiting) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *waiting) end(context.Context) { w.stop() }

// waitTimedOut produces the outcome timeout of the wait w, if the instance
// still waits there.
func (i *instance) waitTimedOut(ctx context.Context, w *waiting) {
	if i.e.closed.Load() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.status.Finished() || i.work != w {
		return
	}
	i.work = nil
	msg := fmt.Sprintf("no signal (%s) within %s", strings.Join(w.state.Wait.Signals, ", "), w.state.Timeout)
	i.decide(ctx, "timeout", nil, rules.ErrorInfo{Message: msg, Kind: "timeout"})
	i.commit(ctx)
}

// signal applies a signal: the outcome of the wait under way, when the
// state lists it; anything else is refused and changes nothing.
func (i *instance) signal(ctx context.Context, name string, data map[string]any) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	w, _ := i.work.(*waiting)
	switch {
	case i.status.Finished():
		return fmt.Errorf("%w %q: instance %s has %s", ErrUnexpectedSignal, name, i.id, i.status)
	case w == nil:
		return fmt.Errorf("%w %q: instance %s is not waiting (state %s)", ErrUnexpectedSignal, name, i.id, i.state.Name)
	case !w.state.Wait.Accepts(name):
		return fmt.Errorf("%w %q: state %s waits for %s", ErrUnexpectedSignal, name, w.state.Name, strings.Join(w.state.Wait.Signals, ", "))
	}
	i.endWork(ctx)
	i.note(record.Entry{Kind: record.KindSignal, State: w.state.Name, Agent: w.state.Name, Trigger: name, Result: data})
	i.event(Event{Type: EventSignalReceived, Signal: name})
	if i.rootSpan() != nil { // the attributes are built only for a span
		i.traceEvent("signal_received", attrTrigger.String(name), attrState.String(w.state.Name))
	}
	i.decide(ctx, name, data, rules.ErrorInfo{})
	i.commit(ctx)
	return nil
}

// Signal sends the signal name with data to the instance: the outcome of
// the wait state it waits in (trigger name, result data). A signal the
// state does not list, or one sent while the instance is not waiting, is
// refused with ErrUnexpectedSignal and changes nothing; so is data that is
// not JSON (a *InputError).
func (h *Instance) Signal(ctx context.Context, name string, data map[string]any) error {
	if ctx == nil {
		return errors.New("engine: nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if h.inst.e.closed.Load() {
		return ErrClosed
	}
	if data == nil {
		data = map[string]any{}
	}
	if err := checkData("data", data); err != nil {
		return err
	}
	return h.inst.signal(context.WithoutCancel(ctx), name, data)
}

// Signal sends the signal name with data to the instance with that id (see
// Instance.Signal). An instance the engine does not run is
// ErrUnknownInstance; one that has finished refuses with
// ErrUnexpectedSignal.
func (e *Engine) Signal(ctx context.Context, instanceID, name string, data map[string]any) error {
	if ctx == nil {
		return errors.New("engine: nil context")
	}
	h, err := e.Instance(instanceID)
	if err != nil {
		return err
	}
	return h.Signal(ctx, name, data)
}

// resume continues a wait state after a restart: still waiting, with
// the deadline it had (counted from when the wait began, as the history
// recorded it); a deadline already past produces the outcome timeout now.
func (waitKind) resume(ctx context.Context, i *instance, _ record.Snapshot, history []record.Entry, outbox []record.Outgoing) error {
	st := i.state
	since := time.Time{}
	for k := len(history) - 1; k >= 0; k-- {
		e := history[k]
		if e.Kind == record.KindWaiting && e.State == st.Name {
			since = e.Time
			break
		}
		if e.Kind == record.KindTransition && e.Next == st.Name {
			since = e.Time // a wait entered before its entry was committed
			break
		}
	}
	if since.IsZero() {
		return fmt.Errorf("%w %s: no wait of state %s in its history", ErrCannotResume, i.id, st.Name)
	}
	for _, o := range outbox {
		if o.Kind == record.OutgoingNotice {
			if err := i.resend(ctx, o, nil); err != nil {
				return err
			}
			continue
		}
		i.settleLater(o.Key) // the work of a run that ended before the wait
	}
	w := &waiting{state: st, since: since}
	i.work = w
	left := since.Add(st.Timeout).Sub(i.e.clock.Now())
	if st.Timeout > 0 && left <= 0 {
		i.work = nil
		msg := fmt.Sprintf("no signal (%s) within %s", strings.Join(st.Wait.Signals, ", "), st.Timeout)
		i.decide(ctx, "timeout", nil, rules.ErrorInfo{Message: msg, Kind: "timeout"})
		return nil
	}
	i.armWait(w, left)
	return nil
}
