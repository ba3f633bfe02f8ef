package webview

import (
	"errors"
	"sync"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
)

// Local is a Backend on a Go program's own engines and their store: pass
// its Observer to each engine (engine.WithObserver), then Add the engines.
// Close ends the view's event streams; call it before closing the engines.
type Local struct {
	OpsBackend
	engines *ops.Engines

	mu       sync.Mutex
	watchers map[*watcher]struct{}
	closed   bool
	done     chan struct{}
}

type watcher struct {
	instance string
	changed  func()
}

var _ Backend = (*Local)(nil)

// NewLocal builds a Local on store, the store the engines write to.
func NewLocal(store record.Store) *Local {
	engines := ops.NewEngines()
	return &Local{
		OpsBackend: OpsBackend{Ops: ops.New(store, engines), Progress: NewProgressLog()},
		engines:    engines, watchers: map[*watcher]struct{}{}, done: make(chan struct{}),
	}
}

// Add makes the engines' workflows and instances visible and actionable.
func (l *Local) Add(engines ...*engine.Engine) {
	l.engines.Add(engines...)
}

// Observer is the engine observer that feeds the view's live updates and
// keeps the progress of the runs under way (see ProgressLog).
func (l *Local) Observer() engine.Observer {
	return func(ev engine.Event) {
		l.Progress.Observe(ev) // before the pages are told, so that they show it
		l.mu.Lock()
		defer l.mu.Unlock()
		for w := range l.watchers {
			if w.instance == "" || w.instance == ev.InstanceID {
				w.changed()
			}
		}
	}
}

// Close ends the view's event streams. Safe to call twice.
func (l *Local) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		clear(l.watchers)
		close(l.done)
	}
}

// Watch implements Backend.
func (l *Local) Watch(instance string, changed func()) (func(), <-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, errors.New("webview: the view is closed")
	}
	w := &watcher{instance: instance, changed: changed}
	l.watchers[w] = struct{}{}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.watchers, w)
	}, l.done, nil
}
