package engine

import (
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/registry"
)

// runTimer is the timeout of a run. A timer stopped before it fired is the
// instance's spare, and the timeout of its next run: most steps stop their
// run's timer and arm the next run's, which then costs no allocation (two
// of a step's sixteen, when each run had a timer of its own).
type runTimer struct {
	t clock.Timer
	i *instance
	// step is the step of the run it times, set under the instance's
	// lock: a step, not the run, which a later step may reuse (see
	// reusableRun).
	step int
}

// armTimeout starts run r's timeout of d, with the instance's spare timer
// when it has one. The caller holds the instance's lock.
func (i *instance) armTimeout(r *run, d time.Duration) {
	if rt := r.timer; rt != nil {
		r.timer = nil
		rt.stop() // armed again: its timeout counts from now
	}
	if rt := i.spareTimer; rt != nil {
		i.spareTimer = nil
		pending := i.sparePending
		i.sparePending = false
		if rt.t.(clock.Resetter).Reset(d) || !pending {
			rt.step = r.step
			r.timer = rt
			return
		}
		// It fired before it was reset: its callback may be under way,
		// and reads rt.step as its own run's. It is never used again.
		rt.t.Stop()
	}
	rt := &i.firstTimer
	if rt.t != nil {
		rt = new(runTimer) // the first timer is still some run's
	}
	rt.i, rt.step = i, r.step
	rt.t = i.e.clock.AfterFunc(d, rt.fire)
	r.timer = rt
}

// stop stops the timer. One whose callback will not run (Stop reports it
// was pending) becomes the instance's spare; one that fired, or fires now,
// is never used again, so that its callback's run is the one it timed.
// The caller holds the instance's lock.
func (rt *runTimer) stop() {
	if !rt.t.Stop() {
		return
	}
	if _, ok := rt.t.(clock.Resetter); ok && !rt.i.sparePending { // else every run gets a timer of its own; a pending spare stays, to be stopped
		rt.i.spareTimer = rt
	}
}

// stopLater makes the timer of a run that ended the instance's spare
// without stopping it: the step's next run, armed before the step ends,
// resets it, one timer operation where stopping it and resetting it were
// two (2% of a step's CPU); stopSpare stops it at the end of a step that
// armed none. The caller holds the instance's lock and ends the step with
// stopSpare.
func (rt *runTimer) stopLater() {
	i := rt.i
	if _, ok := rt.t.(clock.Resetter); !ok || i.spareTimer != nil {
		rt.stop()
		return
	}
	i.spareTimer, i.sparePending = rt, true
}

// stopSpare stops the spare timer if it is still pending (see stopLater);
// one that fired is dropped, so that its callback's run is the one it
// timed. The caller holds the instance's lock.
func (i *instance) stopSpare() {
	if !i.sparePending {
		return
	}
	i.sparePending = false
	if !i.spareTimer.t.Stop() {
		i.spareTimer = nil
	}
}

// fire times out the run, if it is still under way.
func (rt *runTimer) fire() {
	i := rt.i
	i.e.exec.Submit(func() {
		i.mu.Lock()
		step := rt.step // a timer that fired is never reused (see stop): rt.step is its run's
		i.mu.Unlock()
		_ = i.finishRun(i.e.ctx, step, registry.Outcome{}, ErrTimeout, true)
	})
}
