package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/batonhq/baton/agentkind"
	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
)

// flow is one workflow version the server runs: its engine, and whether
// its file is in the workflows directory (current) or only in the store.
type flow struct {
	wf      *rules.Workflow
	eng     *engine.Engine
	kinds   *agentkind.Set // the handlers of its agents with a kind, closed after eng
	current bool
	// report is what wfrun check proves of wf, worked out on first use:
	// a version never changes, so neither does its report.
	report func() *check.Report
}

// catalog holds the server's engines: one per workflow version of the
// directory or of the store when the server started, and, on a server
// sharing its NATS system, one more for each version another server
// started an instance on that this one takes over.
type catalog struct {
	store   record.Store
	tr      transport.Transport
	cfg     Config
	waits   *reportWaits
	observe func(*rules.Workflow) engine.Observer

	// fam lets every engine start children on the current version of
	// their workflow, and run the children of the others: one engine per
	// version, never one beside another of the same version.
	fam *engine.Family

	mu     sync.RWMutex
	byHash map[string]*flow
	byName map[string][]*flow // current first, then by version, newest first
}

// loadDir loads every workflow file of dir; it reports every file that
// does not load, and versions claimed by two files.
func loadDir(dir string) ([]*rules.Workflow, error) {
	out, errs, err := readDir(dir, nil)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, &WorkflowError{Dir: dir, Err: errors.Join(errs...)}
	}
	if len(out) == 0 {
		return nil, ErrNoWorkflows
	}
	return out, nil
}

// readDir loads the workflow files of dir (*.yaml, *.yml), in name order:
// the workflows that load, and why each other file does not (its
// positioned errors, or a version another file claims first). A workflow
// state is linked to the newest version of its child among the files, or
// else to the one hosted (hosting is nil as the server starts). A changed
// child that no longer fits an unchanged caller hosted now (a terminal
// state its rules name is gone, say) is refused rather than the caller,
// so that the caller's next instances do not call what it cannot take.
// err is a directory that cannot be read.
func readDir(dir string, hosting *catalog) (out []*rules.Workflow, errs []error, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, &ConfigError{Field: "workflows", Reason: "cannot be read: " + err.Error()}
	}
	seen := map[string]string{} // name@version -> file
	for _, path := range workflowFiles(dir, entries) {
		w, err := rules.Load(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		key := fmt.Sprintf("%s@%d", w.Name, w.Version)
		if other, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("%s: workflow %s version %d is also in %s", path, w.Name, w.Version, other))
			continue
		}
		seen[key] = path
		out = append(out, w)
	}
	// Each round drops at least one workflow, until every one links.
	for {
		refused := link(out, hosting)
		if len(refused) == 0 {
			return out, errs, nil
		}
		out = slices.DeleteFunc(out, func(w *rules.Workflow) bool { return refused[w] != nil })
		for _, w := range slices.SortedFunc(maps.Keys(refused), func(a, b *rules.Workflow) int { return strings.Compare(a.File, b.File) }) {
			errs = append(errs, refused[w])
		}
	}
}

// link links the workflow states of ws to their children (the newest
// version of each among ws, or else the one hosted) and returns the
// workflows refused, with why.
func link(ws []*rules.Workflow, hosting *catalog) map[*rules.Workflow]error {
	newest := map[string]*rules.Workflow{}
	for _, w := range ws {
		if n, ok := newest[w.Name]; !ok || w.Version > n.Version {
			newest[w.Name] = w
		}
	}
	lookup := func(name string) (*rules.Workflow, bool) {
		if w, ok := newest[name]; ok {
			return w, true
		}
		if hosting != nil {
			return hosting.hosted(name)
		}
		return nil, false
	}
	refused := map[*rules.Workflow]error{}
	for _, w := range ws {
		err := rules.Link(w, lookup)
		if err == nil {
			continue
		}
		blamed := false
		if hosting != nil && hosting.isCurrent(w.Hash) {
			for _, st := range w.States {
				if t, ok := newest[childName(st)]; ok && !hosting.isCurrent(t.Hash) {
					refused[t] = fmt.Errorf("%s: workflow %s no longer fits its caller %s, which stays as it is:\n%w", t.File, t.Name, w.Name, err)
					blamed = true
				}
			}
		}
		if !blamed {
			refused[w] = err
		}
	}
	return refused
}

// childName is the workflow a workflow state calls; "" for other states.
func childName(st *rules.State) string {
	if !st.Calls() {
		return ""
	}
	return st.Child.Workflow
}

// workflowFiles are the paths of the workflow files among a directory's
// entries, in name order.
func workflowFiles(dir string, entries []os.DirEntry) []string {
	var out []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}

// handlers are the Go handlers of w's agents: the handler agentkind builds
// for each agent with a kind (url, a2a, mcp or llm), the configured Go
// handler of an agent without one; the others are external and take their
// work from the transport. The set is closed after the engine (it may have
// started stdio MCP servers).
func handlers(w *rules.Workflow, cfg Config, waits *reportWaits, eng *func() *engine.Engine) (map[string]registry.Handler, *agentkind.Set, error) {
	for _, a := range w.Agents {
		if _, ok := cfg.Handlers[a.ID]; ok && a.Kind() != "" {
			return nil, nil, fmt.Errorf("server: workflow %s: agent %s has %s and a Go handler: give it one or the other", w.Name, a.ID, kindKey(a.Kind()))
		}
	}
	set, err := agentkind.Handlers(w, agentkind.WithLogger(cfg.Logger))
	if err != nil {
		return nil, nil, fmt.Errorf("server: workflow %s: %w", w.Name, err)
	}
	hs := set.Handlers()
	for id, h := range hs {
		// An HTTP agent may answer 202 and report later: the guard fails
		// its run when no report comes. The other kinds answer in the call.
		if a, _ := w.Agent(id); a.Kind() == rules.KindHTTP {
			hs[id] = waits.guard(h, eng)
		}
	}
	for _, a := range w.Agents {
		if h, ok := cfg.Handlers[a.ID]; ok {
			hs[a.ID] = h
		}
	}
	return hs, set, nil
}

// endingObserver is observe, telling the agents' handlers of each instance
// that ends, so that an A2A task left waiting for input is cancelled with
// its instance.
func endingObserver(observe engine.Observer, kinds *agentkind.Set) engine.Observer {
	return func(ev engine.Event) {
		observe(ev)
		switch ev.Type {
		case engine.EventCompleted, engine.EventFailed, engine.EventCancelled:
			kinds.EndInstance(ev.InstanceID)
		}
	}
}

// kindKey is the workflow key that gives an agent kind.
func kindKey(kind string) string {
	if kind == rules.KindHTTP {
		return "a url"
	}
	return "an " + kind + " key"
}

// keepDeadLetters lets only one engine of those sharing a transport write
// its dead letters to the shared store: each engine subscribes to every
// dead letter of the transport.
type keepDeadLetters struct {
	transport.Transport
	keep bool
}

func (k keepDeadLetters) OnDeadLetter(f func(transport.DeadLetter)) func() {
	if !k.keep {
		return func() {}
	}
	return k.Transport.OnDeadLetter(f)
}

// buildCatalog makes an engine for every workflow of the directory and for
// every other version the store has instances of.
func buildCatalog(ctx context.Context, dir []*rules.Workflow, store record.Store, tr transport.Transport, cfg Config, waits *reportWaits, observe func(*rules.Workflow) engine.Observer) (*catalog, error) {
	c := &catalog{store: store, tr: tr, cfg: cfg, waits: waits, observe: observe, byHash: map[string]*flow{}, byName: map[string][]*flow{}}
	c.fam = engine.NewFamily(func(name string) *engine.Engine {
		if f, ok := c.pick(name, 0); ok {
			return f.eng
		}
		return nil
	})
	fail := func(err error) (*catalog, error) {
		c.close()
		return nil, err
	}
	for _, w := range dir {
		if _, err := c.add(w, true); err != nil {
			return fail(err)
		}
	}
	snaps, err := store.Instances(ctx)
	if err != nil {
		return fail(fmt.Errorf("server: read the store: %w", err))
	}
	for _, s := range snaps {
		if s.Hash == "" {
			continue
		}
		if _, _, err := c.load(ctx, s.Hash); err != nil {
			return fail(fmt.Errorf("server: instance %s: its workflow version: %w", s.ID, err))
		}
	}
	return c, nil
}

// add makes w's engine, unless the catalog has one; added is nil then.
// The engine is built outside the catalog's lock (it opens mailboxes and
// saves the source, which take requests): the requests reading the
// catalog meanwhile are not held up.
func (c *catalog) add(w *rules.Workflow, current bool) (added *flow, err error) {
	c.mu.RLock()
	_, have := c.byHash[w.Hash]
	first := len(c.byHash) == 0
	c.mu.RUnlock()
	if have {
		return nil, nil
	}
	var built *engine.Engine
	get := func() *engine.Engine { return built }
	hs, kinds, err := handlers(w, c.cfg, c.waits, &get)
	if err != nil {
		return nil, err
	}
	defer func() {
		if added == nil {
			_ = kinds.Close()
		}
	}()
	reg, err := engine.NewRegistry(w, hs)
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(w, reg,
		engine.WithStore(c.store),
		engine.WithTransport(keepDeadLetters{Transport: c.tr, keep: first}),
		engine.WithLogger(c.cfg.Logger),
		engine.WithFamily(c.fam),
		engine.WithObserver(endingObserver(c.observe(w), kinds)),
		engine.WithTracerProvider(c.cfg.TracerProvider))
	if err != nil {
		return nil, fmt.Errorf("server: workflow %s version %d: %w", w.Name, w.Version, err)
	}
	built = eng
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byHash[w.Hash]; ok {
		_ = eng.Close() // another call built it first
		return nil, nil
	}
	f := &flow{wf: w, eng: eng, kinds: kinds, current: current, report: sync.OnceValue(func() *check.Report { return check.Check(w) })}
	c.byHash[w.Hash] = f
	c.byName[w.Name] = sortFlows(append(c.byName[w.Name], f))
	return f, nil
}

// sortFlows orders the versions of a workflow: current first, then by
// version, newest first.
func sortFlows(fs []*flow) []*flow {
	slices.SortStableFunc(fs, func(a, b *flow) int {
		if a.current != b.current {
			if a.current {
				return -1
			}
			return 1
		}
		return b.wf.Version - a.wf.Version
	})
	return fs
}

// mark makes the version with source hash current or not. The flow is
// replaced, never changed in place: requests may be reading the one they
// were given.
func (c *catalog) mark(hash string, current bool) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.byHash[hash]
	if !ok || f.current == current {
		return false
	}
	nf := *f
	nf.current = current
	c.byHash[hash] = &nf
	fs := slices.Clone(c.byName[f.wf.Name])
	for i := range fs {
		if fs[i] == f {
			fs[i] = &nf
		}
	}
	c.byName[f.wf.Name] = sortFlows(fs)
	return true
}

// currentOf lists the hashes of the current versions read from file.
func (c *catalog) currentOf(file string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for h, f := range c.byHash {
		if f.current && f.wf.File == file {
			out = append(out, h)
		}
	}
	return out
}

// load returns the engine of the version with source hash, building it
// from the source the store keeps when the catalog has none (added).
func (c *catalog) load(ctx context.Context, hash string) (f *flow, added bool, err error) {
	if f, ok := c.flow(hash); ok {
		return f, false, nil
	}
	w, err := engine.StoredWorkflow(ctx, c.store, hash)
	if err != nil {
		return nil, false, err
	}
	// Its children start on the versions current here: the link only
	// serves its check report, so a child no longer hosted is no error.
	_ = rules.Link(w, c.hosted)
	if f, err = c.add(w, false); err != nil || f == nil {
		f, _ = c.flow(hash) // built meanwhile
		return f, false, err
	}
	return f, true, nil
}

// flow is the engine of the version with source hash.
func (c *catalog) flow(hash string) (*flow, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f, ok := c.byHash[hash]
	return f, ok
}

// flows lists every engine, those of called workflows before those of
// their callers: resumed in that order, a parent finds its child running.
func (c *catalog) flows() []*flow {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*flow, 0, len(c.byHash))
	for _, f := range c.byHash {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *flow) int {
		return cmp.Or(depth(a.wf, 0)-depth(b.wf, 0), strings.Compare(a.wf.Name, b.wf.Name), a.wf.Version-b.wf.Version, strings.Compare(a.wf.Hash, b.wf.Hash))
	})
	return out
}

// depth is how deep w's workflow states nest children: 0 when it calls
// none. Cycles are refused by the loader; the bound guards the rest.
func depth(w *rules.Workflow, level int) int {
	d := 0
	for _, st := range w.States {
		if !st.Calls() {
			continue
		}
		d = max(d, 1)
		if t := st.Child.Target; t != nil && level < engine.MaxNesting {
			d = max(d, 1+depth(t, level+1))
		}
	}
	return d
}

// isCurrent reports whether the version with source hash is current.
func (c *catalog) isCurrent(hash string) bool {
	f, ok := c.flow(hash)
	return ok && f.current
}

// hosted is the workflow new instances of name start on.
func (c *catalog) hosted(name string) (*rules.Workflow, bool) {
	if f, ok := c.pick(name, 0); ok {
		return f.wf, true
	}
	return nil, false
}

// versions lists the engines of workflow name: current first, then by
// version, newest first.
func (c *catalog) versions(name string) []*flow {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.byName[name])
}

// pick is the flow new instances of name start on: the given version
// (0: the newest in the directory).
func (c *catalog) pick(name string, version int) (*flow, bool) {
	for _, f := range c.versions(name) {
		if version == 0 || f.wf.Version == version {
			return f, true
		}
	}
	return nil, false
}

// names returns the workflow names, sorted.
func (c *catalog) names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.byName))
	for n := range c.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// resume continues every unfinished instance of every version.
func (c *catalog) resume(ctx context.Context, log *zap.Logger) error {
	var errs []error
	for _, f := range c.flows() {
		rep, err := f.eng.Resume(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for id, ferr := range rep.Failed {
			log.Error("server: instance not resumed", zap.String("instance", id), zap.Error(ferr))
		}
		if len(rep.Resumed) > 0 {
			log.Info("server: instances resumed", zap.String("workflow", f.wf.Name), zap.Int("version", f.wf.Version), zap.Int("count", len(rep.Resumed)))
		}
	}
	return errors.Join(errs...)
}

func (c *catalog) close() {
	for _, f := range c.flows() {
		_ = f.eng.Close()
		_ = f.kinds.Close()
	}
}
