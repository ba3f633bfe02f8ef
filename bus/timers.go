package bus

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// timers owns every callback the bus schedules on its clock, so that Close
// can stop the pending ones and wait for those already running.
type timers struct {
	clock  clock.Clock
	mu     sync.Mutex
	closed bool
	live   map[*timer]struct{}
	wg     sync.WaitGroup
}

// timer is one scheduled callback. Whoever removes it from timers.live
// (the callback starting, Stop, or Close) is the one that calls wg.Done.
type timer struct {
	owner *timers
	t     clock.Timer
}

func newTimers(c clock.Clock) *timers {
	return &timers{clock: c, live: make(map[*timer]struct{})}
}

// after schedules f after d. It returns nil, and never runs f, once the
// timers are closed.
func (ts *timers) after(d time.Duration, f func()) *timer {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil
	}
	e := &timer{owner: ts}
	ts.live[e] = struct{}{}
	ts.wg.Add(1)
	e.t = ts.clock.AfterFunc(d, func() {
		if !ts.claim(e) {
			return
		}
		defer ts.wg.Done()
		f()
	})
	return e
}

func (ts *timers) claim(e *timer) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, ok := ts.live[e]; !ok {
		return false
	}
	delete(ts.live, e)
	return true
}

// stop cancels e if its callback has not started. It is safe on nil.
func (e *timer) stop() {
	if e == nil || !e.owner.claim(e) {
		return
	}
	e.t.Stop()
	e.owner.wg.Done()
}

// close stops every pending callback, refuses new ones, and waits for the
// callbacks already running.
func (ts *timers) close() {
	ts.mu.Lock()
	ts.closed = true
	pending := make([]*timer, 0, len(ts.live))
	for e := range ts.live {
		pending = append(pending, e)
	}
	clear(ts.live)
	ts.mu.Unlock()
	for _, e := range pending {
		e.t.Stop()
		ts.wg.Done()
	}
	ts.wg.Wait()
}

// sleep waits for d on the bus clock. It returns nil when d has elapsed,
// ctx.Err() when ctx is done first, and ErrClosed when the bus closes.
func (ts *timers) sleep(ctx context.Context, done <-chan struct{}, d time.Duration) error {
	ch := make(chan struct{})
	e := ts.after(d, func() { close(ch) })
	if e == nil {
		return transport.ErrClosed
	}
	defer e.stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return transport.ErrClosed
	}
}
