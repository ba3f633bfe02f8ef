package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// reportWaits bounds the runs of HTTP agents that answered 202 in a state
// without a timeout: the agent promised a report before the run's
// deadline, 30 seconds by default. A run still under way then fails with
// kind timeout (and the state's retry policy applies).
type reportWaits struct {
	wait   time.Duration
	mu     sync.Mutex
	timers map[*time.Timer]struct{}
	closed bool
	firing sync.WaitGroup
}

func newReportWaits(wait time.Duration) *reportWaits {
	return &reportWaits{wait: wait, timers: map[*time.Timer]struct{}{}}
}

// guard wraps an HTTP agent's handler: a 202 without a deadline starts the
// wait for its report. eng is the engine, known once it is built.
func (w *reportWaits) guard(h registry.Handler, eng *func() *engine.Engine) registry.Handler {
	return registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
		out, err := h.Handle(ctx, t)
		if errors.Is(err, registry.ErrDeferred) && t.Deadline.IsZero() {
			w.start((*eng)(), t.InstanceID, t.Step, t.Agent)
		}
		return out, err
	})
}

func (w *reportWaits) start(e *engine.Engine, id string, step int, agent string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || e == nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(w.wait, func() {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		delete(w.timers, t)
		w.firing.Add(1)
		w.mu.Unlock()
		defer w.firing.Done()
		ctx := context.Background()
		// A heartbeat changes nothing and tells whether the run is still
		// under way: a run that has reported is left alone, its history
		// without a stray late reply.
		if ans := e.HandleReport(ctx, &wire.Report{InstanceID: id, Step: step, Agent: agent, Heartbeat: true}); !ans.OK {
			return
		}
		err := fmt.Errorf("server: %s answered 202 but sent no report within %s", agent, w.wait)
		_ = e.Report(ctx, id, step, registry.Outcome{}, registry.Kind(err, "timeout"))
	})
	w.timers[t] = struct{}{}
}

// close stops the waits (the runs are resumed, and waited for again, on
// the next start) and waits for those firing.
func (w *reportWaits) close() {
	w.mu.Lock()
	w.closed = true
	for t := range w.timers {
		t.Stop()
	}
	w.timers = nil
	w.mu.Unlock()
	w.firing.Wait()
}
