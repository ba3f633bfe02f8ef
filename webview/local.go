package webview

import (
	"errors"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
)

// Local is a Backend on a Go program's own engines and their store: pass
// its Observer to each engine (engine.WithObserver), then Add the engines.
// Close ends the view's event streams; call it before closing the engines.
// Its operations layer (Ops) also serves the program's other front doors,
// events included.
type Local struct {
	OpsBackend
	engines *ops.Engines
	events  *ops.Hub
}

var _ Backend = (*Local)(nil)

// localEvents is how many recent events a Local keeps for a subscriber
// that resumes after an event id.
const localEvents = 256

// NewLocal builds a Local on store, the store the engines write to.
func NewLocal(store record.Store) *Local {
	engines, events := ops.NewEngines(), ops.NewHub(localEvents)
	return &Local{
		OpsBackend: OpsBackend{Ops: ops.New(store, engines, ops.WithEvents(events)), Progress: NewProgressLog()},
		engines:    engines, events: events,
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
		l.events.Publish(ops.EventOf(ev))
	}
}

// Close ends the view's event streams. Safe to call twice.
func (l *Local) Close() { l.events.Close() }

// Watch implements Backend.
func (l *Local) Watch(instance string, changed func()) (func(), <-chan struct{}, error) {
	stop, done, err := l.Ops.Watch(func(ev ops.Event) bool { return instance == "" || ev.Instance == instance }, func(ops.Event) { changed() })
	if err != nil {
		return nil, nil, errors.New("webview: the view is closed")
	}
	return stop, done, nil
}
