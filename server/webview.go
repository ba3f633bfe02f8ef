package server

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/webview"
)

// ViewPath is where the server serves the web view; GET / redirects there.
const ViewPath = "/ui/"

// view is the web view on this server: it reads and acts through the same
// functions as the API, and asks for one of the API's tokens when the
// server has tokens.
func (s *Server) view() http.Handler {
	opts := []webview.Option{webview.WithBase(ViewPath), webview.WithLogger(s.log), webview.WithWriteTimeout(s.cfg.WriteTimeout)}
	if len(s.tokens) > 0 {
		opts = append(opts, webview.WithTokenCheck(s.validToken))
	}
	v := viewBackend{s: s, progress: &viewProgress{log: webview.NewProgressLog()}}
	// The log follows every instance, watched or not, so that a page opened
	// during a long answer shows what streamed before it.
	_, _, _ = s.hub.watch(progressEvent, v.progress.observe)
	return webview.New(v, opts...)
}

// viewBackend is the server as the web view's backend.
type viewBackend struct {
	s        *Server
	progress *viewProgress
}

var _ webview.Backend = viewBackend{}

// viewProgress is the progress of the runs under way, fed by the hub's
// events, every instance's (this server's and, in a cluster, the others').
type viewProgress struct {
	mu   sync.Mutex
	last uint64 // the id of the last event taken
	log  *webview.ProgressLog
}

// progressEvent reports whether ev changes the progress the view shows.
func progressEvent(ev Event) bool {
	switch engine.EventType(ev.Type) {
	case engine.EventAgentProgress, engine.EventAgentReported, engine.EventStateChanged,
		engine.EventCompleted, engine.EventFailed, engine.EventCancelled:
		return true
	}
	return false
}

// observe takes ev into the log once. The hub hands an event to its
// watchers in no set order: each page's watcher calls observe before it
// tells its page, so that the page reads the log with ev in it; the ids,
// handed out in order, let the later calls for the same event pass.
func (p *viewProgress) observe(ev Event) {
	if !progressEvent(ev) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.ID <= p.last {
		return
	}
	p.last = ev.ID
	p.log.Observe(engine.Event{Type: engine.EventType(ev.Type), InstanceID: ev.Instance, Step: ev.Step, Agent: ev.Agent, State: ev.State, Progress: ev.Progress})
}

// viewError turns an API error into the view's: 404 is ErrNotFound, 400
// and 409 are refusals shown on the page, others are failures.
func viewError(e *apiError) error {
	switch {
	case e == nil:
		return nil
	case e.Status == http.StatusNotFound:
		return webview.ErrNotFound
	case e.Status == http.StatusBadRequest || e.Status == http.StatusConflict:
		return &webview.RefusedError{Status: e.Status, Reason: e.Message}
	}
	return e
}

func (v viewBackend) viewInstance(in Instance, hash string) webview.Instance {
	out := webview.Instance{
		ID: in.ID, Workflow: in.Workflow, Version: in.Version, Hash: hash, Status: in.Status, State: in.State,
		Step: in.Step, Outcome: in.Outcome, CancelReason: in.CancelReason, Context: in.Context, Created: in.Created, Updated: in.Updated,
		Usage: registry.Ledger{Totals: in.Usage.Totals},
	}
	for _, agent := range slices.Sorted(maps.Keys(in.Usage.Agents)) {
		out.Usage.Agents = append(out.Usage.Agents, registry.AgentTotal{Agent: agent, Totals: in.Usage.Agents[agent]})
	}
	if in.Error != nil {
		out.Error = *in.Error
	}
	return out
}

func (v viewBackend) Instances(ctx context.Context, f webview.Filter) (webview.Page, error) {
	out, next, e := v.s.listInstances(ctx, instanceQuery{
		workflow: f.Workflow, status: f.Status, state: f.State, version: f.Version, idPrefix: f.IDPrefix,
		since: f.Since, until: f.Until, cursor: f.Cursor, limit: max(f.Limit, 1),
	})
	if e != nil {
		return webview.Page{}, viewError(e)
	}
	page := webview.Page{Instances: make([]webview.Instance, len(out))}
	for k, in := range out {
		page.Instances[k] = v.viewInstance(in, "")
	}
	if next != nil {
		page.Next = *next
	}
	return page, nil
}

func (v viewBackend) Instance(ctx context.Context, id string) (webview.Instance, error) {
	snap, e := v.s.snapshot(ctx, id)
	if e != nil {
		return webview.Instance{}, viewError(e)
	}
	out := v.viewInstance(v.s.instance(snap), snap.Hash)
	if !out.Finished() {
		out.Progress = v.progress.log.Of(id)
	}
	return out, nil
}

func (v viewBackend) History(ctx context.Context, id string) ([]record.Entry, error) {
	return v.s.store.History(ctx, id)
}

func (v viewBackend) Outbox(ctx context.Context, id string) ([]record.Outgoing, error) {
	out, err := v.s.store.Outbox(ctx, id)
	if errors.Is(err, record.ErrUnknownInstance) {
		return nil, webview.ErrNotFound
	}
	return out, err
}

func (v viewBackend) DeadLetters(ctx context.Context, f webview.DeadLetterFilter) (webview.DeadLetterPage, error) {
	before := 0
	if f.Cursor != "" {
		n, err := strconv.Atoi(f.Cursor)
		if err != nil || n < 1 {
			return webview.DeadLetterPage{}, &webview.RefusedError{Status: http.StatusBadRequest, Reason: "cursor is not a cursor this server gave"}
		}
		before = n
	}
	out, next, e := v.s.deadLetterPage(ctx, deadLetterQuery{reason: f.Reason, before: before, limit: max(f.Limit, 1)})
	if e != nil {
		return webview.DeadLetterPage{}, viewError(e)
	}
	page := webview.DeadLetterPage{DeadLetters: out}
	if next != nil {
		page.Next = *next
	}
	return page, nil
}

// Workflows lists the catalog's workflows and versions, with the number of
// instances the store has of each version.
func (v viewBackend) Workflows(ctx context.Context) ([]webview.Workflow, error) {
	snaps, err := v.s.store.Instances(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, snap := range snaps {
		counts[snap.Hash]++
	}
	var out []webview.Workflow
	for _, name := range v.s.cat.names() {
		fs := v.s.cat.versions(name)
		wf := webview.Workflow{Name: name, Description: fs[0].wf.Description}
		for _, f := range fs {
			wf.Versions = append(wf.Versions, webview.Version{Def: f.wf, Current: f.current, Instances: counts[f.wf.Hash]})
		}
		out = append(out, wf)
	}
	return out, nil
}

func (v viewBackend) Definition(_ context.Context, hash string) (*rules.Workflow, error) {
	f, ok := v.s.cat.flow(hash)
	if !ok {
		return nil, webview.ErrNotFound
	}
	return f.wf, nil
}

// Watch backs a live-update stream of the view, which takes one of the
// server's stream slots as long as it runs.
func (v viewBackend) Watch(instance string, changed func()) (func(), <-chan struct{}, error) {
	release, e := v.s.takeStream()
	if e != nil {
		return nil, nil, e
	}
	stop, done, ok := v.s.hub.watch(func(ev Event) bool { return instance == "" || ev.Instance == instance }, func(ev Event) {
		v.progress.observe(ev)
		changed()
	})
	if !ok {
		release()
		return nil, nil, errors.New("the server is shutting down")
	}
	return func() { stop(); release() }, done, nil
}

func (v viewBackend) Signal(ctx context.Context, id, name string, data map[string]any) error {
	_, e := v.s.sendSignal(ctx, id, name, data)
	return viewError(e)
}

func (v viewBackend) Select(ctx context.Context, id, agent, explanation string) error {
	_, e := v.s.selectInstance(ctx, id, agent, explanation)
	return viewError(e)
}

func (v viewBackend) Cancel(ctx context.Context, id, reason string) error {
	_, e := v.s.cancelInstance(ctx, id, reason)
	return viewError(e)
}
