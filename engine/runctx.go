package engine

import (
	"context"
	"sync"
)

// runContext is the context a Go handler runs with. It lives in its run's
// take, beside the task (no allocation of its own, and its Done channel
// only once a handler asks for it), not in the run, which a later step may
// reuse while the handler still holds its context. It is cancelled when the
// run ends (early: a timeout, a user selection, a join that completed, the
// instance cancelled or finished) and when the engine closes. Values and
// the deadline are the engine's.
type runContext struct {
	context.Context // the engine's; never cancelled through this value

	mu     sync.Mutex
	done   chan struct{}
	err    error
	closed bool // done has been closed
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Done returns a channel closed once the run is cancelled.
func (c *runContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			c.done, c.closed = closedChan, true
		} else {
			c.done = make(chan struct{})
		}
	}
	return c.done
}

// Err returns context.Canceled once the run is cancelled, nil before.
func (c *runContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// cancel cancels the run's context; later calls do nothing.
func (c *runContext) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = context.Canceled
	if c.done != nil && !c.closed {
		close(c.done)
		c.closed = true
	}
}
