package mcpserver

import (
	"context"
	"time"

	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// Backend is the operations a Server calls: the operations layer's shape,
// so that the same tools run over a server's own *ops.Ops (Local) and over
// the HTTP API of a running server (wfrun mcp). Errors are *ops.Error
// values, whose code and field the tools answer.
type Backend interface {
	Start(ctx context.Context, req ops.StartRequest) (sum ops.Summary, created bool, err error)
	Get(ctx context.Context, id string) (ops.Instance, error)
	History(ctx context.Context, id string) ([]record.Entry, error)
	List(ctx context.Context, q ops.ListQuery) (ops.Page, error)
	Signal(ctx context.Context, id, name string, data map[string]any) (ops.Summary, error)
	Cancel(ctx context.Context, id, reason string) (ops.Summary, error)
	// Workflows lists the workflows served, by name.
	Workflows(ctx context.Context) ([]Workflow, error)
	// Wait returns instance id once it has finished or waits for a signal,
	// or as it is when ctx ends first (then with no error).
	Wait(ctx context.Context, id string) (ops.Instance, error)
}

// Workflow is a workflow served, as list_workflows answers it (the JSON of
// the HTTP API's GET /v1/workflows), with what its start tool and its
// resource are made of.
type Workflow struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Versions    []Version `json:"versions"`
	// Input is the current version's input declaration (nil: none).
	Input *rules.Schema `json:"-"`
	// Source is the current version's YAML.
	Source []byte `json:"-"`
}

// Version is one version of a workflow: current when new instances start
// on it.
type Version struct {
	Version int    `json:"version"`
	Hash    string `json:"hash"`
	File    string `json:"file"`
	Current bool   `json:"current"`
}

// Local is the Backend of an operations layer in this process.
type Local struct {
	ops *ops.Ops
	// poll bounds how long Wait trusts the events alone: an instance
	// another process runs publishes none here.
	poll time.Duration
}

// NewLocal is the Backend of o.
func NewLocal(o *ops.Ops) *Local { return &Local{ops: o, poll: 500 * time.Millisecond} }

var _ Backend = (*Local)(nil)

// Start implements Backend.
func (l *Local) Start(ctx context.Context, req ops.StartRequest) (ops.Summary, bool, error) {
	return l.ops.Start(ctx, req)
}

// Get implements Backend.
func (l *Local) Get(ctx context.Context, id string) (ops.Instance, error) { return l.ops.Get(ctx, id) }

// History implements Backend.
func (l *Local) History(ctx context.Context, id string) ([]record.Entry, error) {
	return l.ops.History(ctx, id)
}

// List implements Backend.
func (l *Local) List(ctx context.Context, q ops.ListQuery) (ops.Page, error) {
	return l.ops.List(ctx, q)
}

// Signal implements Backend.
func (l *Local) Signal(ctx context.Context, id, name string, data map[string]any) (ops.Summary, error) {
	return l.ops.Signal(ctx, id, name, data)
}

// Cancel implements Backend.
func (l *Local) Cancel(ctx context.Context, id, reason string) (ops.Summary, error) {
	return l.ops.Cancel(ctx, id, reason)
}

// Workflows implements Backend.
func (l *Local) Workflows(context.Context) ([]Workflow, error) {
	wfs := l.ops.Workflows()
	out := make([]Workflow, 0, len(wfs))
	for _, wf := range wfs {
		w := Workflow{Name: wf.Name, Description: wf.Description, Versions: make([]Version, len(wf.Versions))}
		for k, f := range wf.Versions {
			w.Versions[k] = Version{Version: f.Workflow.Version, Hash: f.Workflow.Hash, File: f.Workflow.File, Current: f.Current}
		}
		// The current version comes first.
		w.Input, w.Source = wf.Versions[0].Workflow.Input, wf.Versions[0].Workflow.Source
		out = append(out, w)
	}
	return out, nil
}

// Wait implements Backend: it reads the instance again at each of its
// events, and every poll in case its events are published elsewhere.
func (l *Local) Wait(ctx context.Context, id string) (ops.Instance, error) {
	wake := make(chan struct{}, 1)
	stop, done, err := l.ops.Watch(func(ev ops.Event) bool { return ev.Instance == id }, func(ops.Event) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		// No events here: polling alone.
		stop, done = func() {}, nil
	}
	defer stop()
	tick := time.NewTicker(l.poll)
	defer tick.Stop()
	for {
		in, err := l.ops.Get(ctx, id)
		if err != nil || settled(in) {
			return in, err
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-done:
			return in, nil
		case <-ctx.Done():
			return in, nil
		}
	}
}

// settled reports whether a wait for in is over: it has finished or waits
// for a signal.
func settled(in ops.Instance) bool { return in.Finished() || in.Status == ops.StatusWaiting }
