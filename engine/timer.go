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
	r *run // the run it times; set under the instance's lock
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
		rt.r = r
		rt.t.(clock.Resetter).Reset(d)
		r.timer = rt
		return
	}
	rt := &i.firstTimer
	if rt.t != nil {
		rt = new(runTimer) // the first timer is still some run's
	}
	rt.i, rt.r = i, r
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
	if _, ok := rt.t.(clock.Resetter); ok { // else every run gets a timer of its own
		rt.i.spareTimer = rt
	}
}

// fire times out the run, if it is still under way.
func (rt *runTimer) fire() {
	i := rt.i
	i.e.exec.Submit(func() {
		i.mu.Lock()
		step := rt.r.step // a timer that fired is never reused (see stop): rt.r is its run's
		i.mu.Unlock()
		_ = i.finishRun(i.e.ctx, step, registry.Outcome{}, ErrTimeout, true)
	})
}
