package engine

import (
	"context"
	"sync"
)

// runs counts the Go handler runs under way, so that Drain can wait for
// them, and refuses new ones once a drain has begun.
type runs struct {
	mu       sync.Mutex
	draining bool
	active   int
	idle     chan struct{} // closed when active drops to 0 during a drain
}

// enter admits a run; false once a drain has begun.
func (r *runs) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.draining {
		return false
	}
	r.active++
	return true
}

func (r *runs) leave() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active--
	if r.active == 0 && r.idle != nil {
		close(r.idle)
		r.idle = nil
	}
}

// drain stops admitting runs and returns a channel closed once none is
// under way.
func (r *runs) drain() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.draining = true
	if r.active == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if r.idle == nil {
		r.idle = make(chan struct{})
	}
	return r.idle
}

// Drain prepares a graceful stop: Go handlers start no new run, and Drain
// waits until the runs under way have returned and their outcomes are
// committed, or until ctx ends (then it returns ctx's error and Close
// cancels the runs left). Work that was not run stays in the store's
// outbox: the next Resume sends it again. Reports of external agents are
// still taken during and after a drain, until Close. Drain does not close
// the engine: call Close after it.
func (e *Engine) Drain(ctx context.Context) error {
	select {
	case <-e.runs.drain():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
