package webview

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// Local is a Backend on a Go program's own engines and their store: pass
// its Observer to each engine (engine.WithObserver), then Add the engines.
// Close ends the view's event streams; call it before closing the engines.
type Local struct {
	store    record.Store
	progress *ProgressLog

	mu       sync.Mutex
	engines  map[string]*engine.Engine // by workflow hash
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
	return &Local{store: store, progress: NewProgressLog(), engines: map[string]*engine.Engine{}, watchers: map[*watcher]struct{}{}, done: make(chan struct{})}
}

// Add makes the engines' workflows and instances visible and actionable.
func (l *Local) Add(engines ...*engine.Engine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range engines {
		l.engines[e.Workflow().Hash] = e
	}
}

// Observer is the engine observer that feeds the view's live updates and
// keeps the progress of the runs under way (see ProgressLog).
func (l *Local) Observer() engine.Observer {
	return func(ev engine.Event) {
		l.progress.Observe(ev) // before the pages are told, so that they show it
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

func (l *Local) engine(hash string) (*engine.Engine, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.engines[hash]
	return e, ok
}

// instanceOf is a snapshot as the view shows it: a running instance in a
// wait state is waiting.
func (l *Local) instanceOf(s record.Snapshot) Instance {
	in := Instance{
		ID: s.ID, Workflow: s.Workflow, Version: s.Version, Hash: s.Hash, Status: string(s.Status), State: s.State,
		Step: s.Step, Outcome: s.Outcome, Error: s.Error, Context: s.Context, Created: s.Created.UTC(), Updated: s.Updated.UTC(),
		Usage: s.Usage,
	}
	switch s.Status {
	case record.StatusCanceled:
		in.Status = StatusCancelled
		in.Error, in.CancelReason = "", s.CancelReason // a cancel is no failure
	case record.StatusRunning:
		if e, ok := l.engine(s.Hash); ok {
			if st, ok := e.Workflow().State(s.State); ok && st.Waits() {
				in.Status = StatusWaiting
			}
		}
	}
	return in
}

// Instances implements Backend: newest first, in the order the store took
// their starts, paged by the store (record.List), so that a page costs what
// it shows rather than the number of instances kept.
func (l *Local) Instances(ctx context.Context, f Filter) (Page, error) {
	snaps, next, err := record.List(ctx, l.store, record.ListQuery{
		Workflow: f.Workflow, State: f.State,
		Match: func(s record.Snapshot) bool { return f.Match(l.instanceOf(s)) },
		Limit: max(f.Limit, 1), After: f.Cursor,
	})
	if errors.Is(err, record.ErrBadCursor) {
		return Page{}, &RefusedError{Status: http.StatusBadRequest, Reason: "cursor is not a cursor this view gave"}
	}
	if err != nil {
		return Page{}, err
	}
	page := Page{Instances: make([]Instance, len(snaps)), Next: next}
	for k, s := range snaps {
		page.Instances[k] = l.instanceOf(s)
	}
	return page, nil
}

// Instance implements Backend.
func (l *Local) Instance(ctx context.Context, id string) (Instance, error) {
	s, err := l.store.Instance(ctx, id)
	if errors.Is(err, record.ErrUnknownInstance) {
		return Instance{}, ErrNotFound
	}
	if err != nil {
		return Instance{}, err
	}
	in := l.instanceOf(s)
	if !in.Finished() {
		in.Progress = l.progress.Of(id)
	}
	return in, nil
}

// History implements Backend.
func (l *Local) History(ctx context.Context, id string) ([]record.Entry, error) {
	return l.store.History(ctx, id)
}

// Outbox implements Backend.
func (l *Local) Outbox(ctx context.Context, id string) ([]record.Outgoing, error) {
	out, err := l.store.Outbox(ctx, id)
	if errors.Is(err, record.ErrUnknownInstance) {
		return nil, ErrNotFound
	}
	return out, err
}

// DeadLetters implements Backend: newest first, paged by sequence number.
func (l *Local) DeadLetters(ctx context.Context, f DeadLetterFilter) (DeadLetterPage, error) {
	before := 0
	if f.Cursor != "" {
		n, err := strconv.Atoi(f.Cursor)
		if err != nil || n < 1 {
			return DeadLetterPage{}, &RefusedError{Status: http.StatusBadRequest, Reason: "cursor is not a cursor this view gave"}
		}
		before = n
	}
	all, err := l.store.DeadLetters(ctx)
	if err != nil {
		return DeadLetterPage{}, err
	}
	limit := max(f.Limit, 1)
	var page DeadLetterPage
	for _, d := range slices.Backward(all) {
		if (before > 0 && d.Seq >= before) || (f.Reason != "" && d.Reason != f.Reason) {
			continue
		}
		if len(page.DeadLetters) == limit {
			page.Next = strconv.Itoa(page.DeadLetters[limit-1].Seq)
			break
		}
		page.DeadLetters = append(page.DeadLetters, d)
	}
	return page, nil
}

// Workflows implements Backend: the engines' workflows, every version
// current.
func (l *Local) Workflows(ctx context.Context) ([]Workflow, error) {
	snaps, err := l.store.Instances(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, s := range snaps {
		counts[s.Hash]++
	}
	l.mu.Lock()
	byName := map[string]*Workflow{}
	for _, e := range l.engines {
		def := e.Workflow()
		wf := byName[def.Name]
		if wf == nil {
			wf = &Workflow{Name: def.Name, Description: def.Description}
			byName[def.Name] = wf
		}
		wf.Versions = append(wf.Versions, Version{Def: def, Current: true, Instances: counts[def.Hash]})
	}
	l.mu.Unlock()
	out := make([]Workflow, 0, len(byName))
	for _, wf := range byName {
		slices.SortFunc(wf.Versions, func(a, b Version) int {
			return cmp.Or(b.Def.Version-a.Def.Version, strings.Compare(a.Def.Hash, b.Def.Hash))
		})
		out = append(out, *wf)
	}
	slices.SortFunc(out, func(a, b Workflow) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Definition implements Backend.
func (l *Local) Definition(_ context.Context, hash string) (*rules.Workflow, error) {
	e, ok := l.engine(hash)
	if !ok {
		return nil, ErrNotFound
	}
	return e.Workflow(), nil
}

// handle is the engine's handle of instance id.
func (l *Local) handle(ctx context.Context, id string) (*engine.Engine, *engine.Instance, error) {
	s, err := l.store.Instance(ctx, id)
	if errors.Is(err, record.ErrUnknownInstance) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	e, ok := l.engine(s.Hash)
	if !ok {
		return nil, nil, &RefusedError{Reason: "no engine of this program runs the version of instance " + id}
	}
	if s.Status.Finished() {
		return e, nil, &RefusedError{Reason: fmt.Sprintf("instance %s has already finished (%s)", id, l.instanceOf(s).Status)}
	}
	h, err := e.Instance(id)
	if err != nil {
		return e, nil, refusal(err)
	}
	return e, h, nil
}

// refusal turns the engine's refusals into the view's.
func refusal(err error) error {
	var (
		ie *engine.InputError
		re *handoff.RefusalError
	)
	switch {
	case errors.As(err, &ie):
		return &RefusedError{Status: http.StatusBadRequest, Reason: ie.Error()}
	case errors.As(err, &re), errors.Is(err, engine.ErrUnexpectedSignal), errors.Is(err, engine.ErrNoActiveRun),
		errors.Is(err, engine.ErrInstanceFinished), errors.Is(err, engine.ErrUnknownInstance):
		return &RefusedError{Reason: err.Error()}
	}
	return err
}

// Signal implements Backend.
func (l *Local) Signal(ctx context.Context, id, name string, data map[string]any) error {
	e, _, err := l.handle(ctx, id)
	if err != nil {
		return err
	}
	return refusal(e.Signal(ctx, id, name, data))
}

// Select implements Backend.
func (l *Local) Select(ctx context.Context, id, agent, explanation string) error {
	_, h, err := l.handle(ctx, id)
	if err != nil {
		return err
	}
	return refusal(h.Select(ctx, agent, explanation))
}

// Cancel implements Backend.
func (l *Local) Cancel(ctx context.Context, id, reason string) error {
	_, h, err := l.handle(ctx, id)
	if err != nil {
		return err
	}
	return refusal(h.CancelWith(ctx, reason))
}
