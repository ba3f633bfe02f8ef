package ops

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// Flow is one workflow version and the engine that runs it.
type Flow struct {
	Workflow *rules.Workflow
	Engine   *engine.Engine
	// Current reports whether new instances may start on it (its file is
	// among those served), as opposed to one kept for the instances
	// started on it.
	Current bool
}

// Catalog finds the engine of each workflow version. It is read on every
// operation: it may change between calls (a workflow file reloaded).
type Catalog interface {
	// Flow returns the version whose hash is hash.
	Flow(hash string) (Flow, bool)
	// Versions returns the versions of workflow name, the current one
	// first, then newest first; none for a workflow it does not know.
	Versions(name string) []Flow
	// Names returns the workflow names, sorted.
	Names() []string
}

// Router sends an operation on an instance to the process that runs it,
// among several sharing one store (a cluster of servers).
type Router interface {
	// NewID returns an id for a start that names none, one whose instance
	// this process runs; "" lets the engine choose.
	NewID() string
	// Moves reports whether instances move between processes: an
	// unfinished instance its engine does not hold is then moving (try
	// again), not ended.
	Moves() bool
	// Route runs op on the process running its instance; routed is false
	// when that is this process (or op was routed here), and then the
	// operation runs here.
	Route(ctx context.Context, op Op) (res Result, routed bool)
}

// OpKind names an operation a Router passes on.
type OpKind string

// The operations a Router passes on.
const (
	OpStart  OpKind = "start"
	OpSignal OpKind = "signal"
	OpSelect OpKind = "select"
	OpCancel OpKind = "cancel"
)

// Op is an operation on one instance, as a Router passes it on: the
// fields of its kind are set.
type Op struct {
	Kind OpKind
	ID   string
	// Start is set for OpStart.
	Start StartRequest
	// Name and Data are a signal's.
	Name string
	Data map[string]any
	// Agent and Explanation are a selection's.
	Agent       string
	Explanation string
	// Reason is a cancel's.
	Reason string
}

// Result is what an operation answered: Err is nil or an *Error.
type Result struct {
	Summary Summary
	Created bool
	Err     error
}

// Ops is the operations layer over a store and a catalog of engines. Its
// methods are safe for concurrent use.
type Ops struct {
	store     record.Store
	cat       Catalog
	router    Router
	startWait time.Duration
	draining  func() bool
	events    *Hub // nil: no subscriptions
	queues    QueueReader
	activity  *activity                               // what the events told of the agents; nil without events
	finished  func(id string) (record.Snapshot, bool) // nil: every Get reads the store
}

// Option configures an Ops.
type Option func(*Ops)

// WithRouter sends operations on instances run elsewhere to r.
func WithRouter(r Router) Option { return func(o *Ops) { o.router = r } }

// WithStartWait bounds how long a start waits for the engine to take it
// (default 5s).
func WithStartWait(d time.Duration) Option { return func(o *Ops) { o.startWait = d } }

// WithDraining refuses new starts (ErrUnavailable, Retry) while draining
// reports true: the process is shutting down.
func WithDraining(draining func() bool) Option { return func(o *Ops) { o.draining = draining } }

// WithFinished lets Get answer an instance from finished, which returns
// the snapshot of an instance this process finished (ok false for any
// other) without reading the store. Give it only where that snapshot is
// provably the store's last word on the instance: where no other process
// writes the store's instances.
func WithFinished(finished func(id string) (record.Snapshot, bool)) Option {
	return func(o *Ops) { o.finished = finished }
}

// New is an operations layer over store, the store the catalog's engines
// write to.
func New(store record.Store, cat Catalog, opts ...Option) *Ops {
	o := &Ops{store: store, cat: cat, startWait: 5 * time.Second, draining: func() bool { return false }}
	for _, opt := range opts {
		opt(o)
	}
	if o.events != nil {
		o.activity = newActivity()
		o.activity.watch(o.events)
	}
	return o
}

// snapshot reads instance id.
func (o *Ops) snapshot(ctx context.Context, id string) (record.Snapshot, error) {
	snap, err := o.store.Instance(ctx, id)
	switch {
	case errors.Is(err, record.ErrUnknownInstance):
		return snap, notFound(CodeUnknownInstance, "id", "no instance "+strconv.Quote(id))
	case err != nil:
		return snap, storeError(err)
	}
	return snap, nil
}

// target is instance id and the flow of its version.
func (o *Ops) target(ctx context.Context, id string) (record.Snapshot, Flow, error) {
	snap, err := o.snapshot(ctx, id)
	if err != nil {
		return snap, Flow{}, err
	}
	f, ok := o.cat.Flow(snap.Hash)
	if !ok {
		return snap, f, Unavailable("no engine runs the version of instance "+snap.ID, nil)
	}
	return snap, f, nil
}

// latest reads instance id: from what this process finished, when it
// finished it, otherwise from the store. A client polling for the end of
// an instance this process ran is answered without a read of the store
// (ServeChain4 spent about 4% of the server's CPU, nats-server's share
// with it, on reading back what the server had just written).
func (o *Ops) latest(ctx context.Context, id string) (record.Snapshot, error) {
	if o.finished != nil {
		if snap, ok := o.finished(id); ok {
			return snap, nil
		}
	}
	return o.snapshot(ctx, id)
}

// Get returns instance id.
func (o *Ops) Get(ctx context.Context, id string) (Instance, error) {
	snap, err := o.latest(ctx, id)
	if err != nil {
		return Instance{}, err
	}
	in := o.instance(snap)
	f, ok := o.cat.Flow(snap.Hash)
	if !ok {
		return in, nil
	}
	if !in.Finished() {
		if _, held := heldPending(&in, f, nil); !held {
			if ended, ok := o.endedMeanwhile(ctx, id, f); ok {
				in = ended
			} else {
				in.Pending = o.storedPending(ctx, in.ID, f.Workflow)
			}
		}
	}
	o.markOnLimit(ctx, &in, f.Workflow)
	return in, nil
}

// endedMeanwhile reads again the snapshot of an instance found running
// whose version's engine here no longer holds it: an engine lets an
// instance go once it has finished it, so the first read may have come
// just before the end. ok is true, with the instance as it ended, when it
// did. One more read of the last step is cheaper than the history that
// would tell what a running instance waits on (a client polling for the
// end of a four-step instance met this two times in three, and the
// history read cost the server 5% of its CPU and 14% of its allocations).
func (o *Ops) endedMeanwhile(ctx context.Context, id string, f Flow) (Instance, bool) {
	if f.Engine == nil {
		return Instance{}, false // no engine here lets it go
	}
	snap, err := o.latest(ctx, id)
	if err != nil || !snap.Status.Finished() || snap.Hash != f.Workflow.Hash {
		return Instance{}, false
	}
	return o.instance(snap), true
}

// History returns instance id's history, the form wfrun replay reads
// (empty, not nil, when it has none).
func (o *Ops) History(ctx context.Context, id string) ([]record.Entry, error) {
	snap, err := o.snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	entries, err := o.store.History(ctx, snap.ID)
	if err != nil {
		return nil, storeError(err)
	}
	if entries == nil {
		entries = []record.Entry{}
	}
	return entries, nil
}

// Outbox returns instance id's outbox items not yet settled.
func (o *Ops) Outbox(ctx context.Context, id string) ([]record.Outgoing, error) {
	out, err := o.store.Outbox(ctx, id)
	switch {
	case errors.Is(err, record.ErrUnknownInstance):
		return nil, notFound(CodeUnknownInstance, "id", "no instance "+strconv.Quote(id))
	case err != nil:
		return nil, storeError(err)
	}
	return out, nil
}

// Definition returns the workflow version whose hash is hash.
func (o *Ops) Definition(hash string) (*rules.Workflow, error) {
	f, ok := o.cat.Flow(hash)
	if !ok {
		return nil, notFound(CodeUnknownVersion, "hash", "no workflow version "+strconv.Quote(hash))
	}
	return f.Workflow, nil
}

// Workflow is a workflow served and its versions, the current one first,
// then newest first.
type Workflow struct {
	Name        string
	Description string
	Versions    []Flow
}

// Workflows lists the workflows served, by name.
func (o *Ops) Workflows() []Workflow {
	var out []Workflow
	for _, name := range o.cat.Names() {
		fs := o.cat.Versions(name)
		if len(fs) == 0 {
			continue
		}
		out = append(out, Workflow{Name: name, Description: fs[0].Workflow.Description, Versions: fs})
	}
	return out
}

// Pick returns the version of workflow name new instances start on: the
// given version, the current one when version is 0.
func (o *Ops) Pick(name string, version int) (Flow, error) {
	fs := o.cat.Versions(name)
	if len(fs) == 0 {
		return Flow{}, notFound(CodeUnknownWorkflow, "workflow", "no workflow "+strconv.Quote(name)+" on this server")
	}
	for _, f := range fs {
		if version == 0 || f.Workflow.Version == version {
			return f, nil
		}
	}
	return Flow{}, notFound(CodeUnknownVersion, "version", "workflow "+name+" has no version "+strconv.Itoa(version)+" on this server")
}

// InstanceCounts returns how many instances the store has of each
// workflow version, by hash. It reads every instance.
func (o *Ops) InstanceCounts(ctx context.Context) (map[string]int, error) {
	snaps, err := o.store.Instances(ctx)
	if err != nil {
		return nil, storeError(err)
	}
	counts := map[string]int{}
	for _, snap := range snaps {
		counts[snap.Hash]++
	}
	return counts, nil
}

// Engines is a Catalog of engines added one by one, every version current:
// the catalog of a Go program running its own engines.
type Engines struct {
	mu     sync.RWMutex
	byHash map[string]Flow
}

// NewEngines is a catalog of engines.
func NewEngines(engines ...*engine.Engine) *Engines {
	c := &Engines{byHash: map[string]Flow{}}
	c.Add(engines...)
	return c
}

// Add adds engines to the catalog.
func (c *Engines) Add(engines ...*engine.Engine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range engines {
		c.byHash[e.Workflow().Hash] = Flow{Workflow: e.Workflow(), Engine: e, Current: true}
	}
}

// Flow implements Catalog.
func (c *Engines) Flow(hash string) (Flow, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f, ok := c.byHash[hash]
	return f, ok
}

// Versions implements Catalog: newest first.
func (c *Engines) Versions(name string) []Flow {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Flow
	for _, f := range c.byHash {
		if f.Workflow.Name == name {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Flow) int {
		return cmp.Or(b.Workflow.Version-a.Workflow.Version, cmp.Compare(a.Workflow.Hash, b.Workflow.Hash))
	})
	return out
}

// Names implements Catalog.
func (c *Engines) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := map[string]bool{}
	for _, f := range c.byHash {
		names[f.Workflow.Name] = true
	}
	return slices.Sorted(maps.Keys(names))
}

var _ Catalog = (*Engines)(nil)

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
