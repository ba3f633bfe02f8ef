package server

import (
	"errors"
	"net/http"
	"sync"

	"github.com/batonhq/baton/engine"
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
	progress := &viewProgress{log: webview.NewProgressLog()}
	v := viewBackend{OpsBackend: webview.OpsBackend{Ops: s.ops, Progress: progress.log}, s: s, progress: progress}
	// The log follows every instance, watched or not, so that a page opened
	// during a long answer shows what streamed before it.
	_, _, _ = s.hub.watch(progressEvent, v.progress.observe)
	return webview.New(v, opts...)
}

// viewBackend is the server as the web view's backend: the operations
// layer, and the server's events for the live updates.
type viewBackend struct {
	webview.OpsBackend
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
