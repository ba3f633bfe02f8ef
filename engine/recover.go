package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/record"
)

// The engine continues by itself an instance whose step the store refused
// (commitFailed): it resumes it from its last committed step after
// recoverFirst, then after twice as long at each refusal, up to
// recoverMax, until a commit succeeds, another engine owns the instance,
// the store no longer has it, or the engine closes. Without this an
// instance left the engine until someone called Resume; on a store shared
// by several engines a stream electing a leader refuses commits for a few
// seconds, and every instance that tried to commit then would wait for
// the next full rescan.
const (
	recoverFirst = time.Second
	recoverMax   = 30 * time.Second
)

// recovery holds the timers of the instances waiting for their next try,
// the pause before each try under way, and the goroutines of the tries
// under way (offPool).
type recovery struct {
	mu     sync.Mutex
	timers map[string]clock.Timer
	// trying holds the pause that preceded each try under way: a resume
	// whose commit is refused again comes back through commitFailed, which
	// doubles it (recoverAfter) instead of starting over at recoverFirst.
	trying map[string]time.Duration
	closed bool
	tries  sync.WaitGroup
}

// offPool runs f, which waits on the store or the transport for as long as
// their timeouts (a retry after a refusal), on a goroutine of its own that
// Close waits for: on the pool, a few such waits would hold every worker
// and delay every other instance's timers. With an executor the engine
// does not own (a scenario's simulated clock), f goes to it, in order.
func (e *Engine) offPool(f func()) {
	if e.pool == nil {
		e.exec.Submit(f)
		return
	}
	e.rec.mu.Lock()
	if e.rec.closed {
		e.rec.mu.Unlock()
		return
	}
	e.rec.tries.Add(1)
	e.rec.mu.Unlock()
	go func() {
		defer e.rec.tries.Done()
		f()
	}()
}

// recoverLater schedules a try at resuming instance id after delay.
func (e *Engine) recoverLater(id string, delay time.Duration) {
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	if e.rec.closed {
		return
	}
	if e.rec.timers == nil {
		e.rec.timers = map[string]clock.Timer{}
	}
	if t := e.rec.timers[id]; t != nil {
		t.Stop()
	}
	e.rec.timers[id] = e.clock.AfterFunc(delay, func() {
		e.offPool(func() { e.recover(id, delay) })
	})
}

// recoverAfter schedules the next try at resuming instance id after its
// commit was refused: recoverFirst after a refusal of an instance that
// was running, twice the last pause when the refused commit was the one of
// a try under way.
func (e *Engine) recoverAfter(id string) {
	e.rec.mu.Lock()
	last, ok := e.rec.trying[id]
	e.rec.mu.Unlock()
	next := recoverFirst
	if ok {
		next = min(2*last, recoverMax)
	}
	e.recoverLater(id, next)
}

// recover tries to resume instance id, and schedules the next try when
// the store cannot be read or the resume fails. A resume whose commit is
// refused again comes back through commitFailed, which waits twice delay.
func (e *Engine) recover(id string, delay time.Duration) {
	e.rec.mu.Lock()
	delete(e.rec.timers, id)
	closed := e.rec.closed
	if !closed {
		if e.rec.trying == nil {
			e.rec.trying = map[string]time.Duration{}
		}
		e.rec.trying[id] = delay
	}
	e.rec.mu.Unlock()
	if closed {
		return
	}
	defer func() {
		e.rec.mu.Lock()
		delete(e.rec.trying, id)
		e.rec.mu.Unlock()
	}()
	if e.closed.Load() {
		return
	}
	if _, running := e.instances.Load(id); running {
		return // resumed meanwhile (Resume, a takeover)
	}
	next := min(2*delay, recoverMax)
	snap, err := e.store.Instance(e.ctx, id)
	switch {
	case errors.Is(err, ErrUnknownInstance), errors.Is(err, ErrNotOwner):
		return
	case err != nil:
		e.log.Warn("engine: instance not resumed after a refused commit; trying again", zap.String("instance", id), zap.Duration("in", next), zap.Error(err))
		e.recoverLater(id, next)
		return
	case snap.Workflow != e.wf.Name || snap.Hash != e.wf.Hash:
		return
	}
	rep, err := e.resumeFrom(context.WithoutCancel(e.ctx), []record.Snapshot{snap}, func(string) bool { return true })
	if err == nil {
		err = rep.Failed[id]
	}
	if err != nil && !errors.Is(err, ErrNotOwner) && !errors.Is(err, ErrCannotResume) {
		e.log.Warn("engine: instance not resumed after a refused commit; trying again", zap.String("instance", id), zap.Duration("in", next), zap.Error(err))
		e.recoverLater(id, next)
	}
}

// stopRecovery stops every try not yet begun; Close calls it, then
// waitRecovery once the engine's context is cancelled.
func (e *Engine) stopRecovery() {
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	e.rec.closed = true
	for id, t := range e.rec.timers {
		t.Stop()
		delete(e.rec.timers, id)
	}
}

// waitRecovery waits for the tries under way.
func (e *Engine) waitRecovery() { e.rec.tries.Wait() }
