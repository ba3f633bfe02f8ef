package record

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/shardmap"
)

// MemStore is the in-memory Store, the default when no durable store is
// given. Each instance has its own lock, so commits of different instances
// never contend.
//
// A MemStore keeps every running instance and the newest finished ones (by
// the order they finished): MemRetention of them by default, see
// WithRetention. Older finished instances are dropped with their history
// and outbox, so that a long-running process does not grow without bound;
// up to 1 MiB of dropped histories' buffers, and as much of the buffers
// of first commits histories left as they grew, are kept for the next
// instances' histories.
//
// History entries are kept encoded, so that the retained histories cost
// the garbage collector little; their times come back without a monotonic
// clock reading, as from every durable store. So are the maps of a finished
// instance's snapshot (Visits, Input, Context): Instance returns maps equal
// to those committed, no longer the same maps.
type MemStore struct {
	instances *shardmap.Map[*memInstance]

	mu        sync.Mutex   // guards dead and workflows
	dead      []DeadLetter // the newest MemDeadLetterLimit, and up to as many older ones
	deadSeq   int
	workflows map[string]WorkflowSource

	retention int        // finished instances kept; <= 0 keeps them all
	finMu     sync.Mutex // guards finished and live
	finished  []*memInstance
	finHead   int // finished[finHead:] are the ones not yet dropped, oldest first
	live      int // finished instances kept: those in finished[finHead:] not pruned

	ordMu   sync.Mutex     // guards order, ordSeq and ordGone
	order   []*memInstance // in the order of their first commits, for List
	ordSeq  uint64         // the number of the last instance created
	ordGone int            // how many of order are gone

	// lastWF is the workflow of the last instance whose workflow differed
	// from its predecessor's: the next ones share it.
	lastWF atomic.Pointer[memWorkflow]

	// logSize is a running estimate of the size of a finished instance's
	// encoded history, 0 until one finishes, and logDev one of the
	// histories' deviation from it, both in sixteenths of a byte (see
	// logRoom).
	logSize, logDev atomic.Int64

	// spares holds the history buffers of dropped instances.
	spares memSpares
}

var (
	_ Store  = (*MemStore)(nil)
	_ Pruner = (*MemStore)(nil)
	_ Lister = (*MemStore)(nil)
)

// MemRetention is how many finished instances a MemStore keeps by default.
const MemRetention = 10_000

// MemOption configures a MemStore.
type MemOption func(*MemStore)

// WithRetention keeps the newest n finished instances (by the order they
// finished) and drops older ones with their history and outbox; n <= 0
// keeps every finished instance. Running instances are always kept.
func WithRetention(n int) MemOption { return func(s *MemStore) { s.retention = n } }

type memInstance struct {
	mu       sync.Mutex
	finished bool   // counted in the store's finished queue
	gone     bool   // pruned or dropped: not to be dropped again
	seq      uint64 // its place in the order of first commits; set once, under the store's ordMu
	snap     memSnap
	// log holds the history, encoded (see memLog).
	log memLog
	// outbox holds the unsettled outbox items, oldest first; usually one.
	outbox []Outgoing
}

// NewMemStore returns an empty in-memory store keeping MemRetention
// finished instances, or what the options say.
func NewMemStore(opts ...MemOption) *MemStore {
	s := &MemStore{retention: MemRetention, instances: shardmap.New[*memInstance]()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Commit implements Store.
func (s *MemStore) Commit(ctx context.Context, rec Step) error {
	if ctx == nil {
		return ErrNilContext
	}
	var (
		mi      *memInstance
		created bool
	)
	if v, ok := s.instances.Load(rec.Snapshot.ID); ok {
		mi = v
		mi.mu.Lock()
	} else {
		// A new instance is locked before it is seen: a reader must not
		// find it before its first step is in.
		mi = &memInstance{snap: memSnap{id: rec.Snapshot.ID}}
		mi.mu.Lock()
		if v, loaded := s.instances.LoadOrStore(mi.snap.id, mi); loaded {
			mi.mu.Unlock()
			mi = v
			mi.mu.Lock()
		} else {
			created = true
		}
	}
	finishes := !mi.finished && rec.Snapshot.Status.Finished()
	mi.finished = mi.finished || finishes
	last := s.lastWF.Load()
	if mi.snap.set(&rec.Snapshot, last); mi.snap.wf != last {
		s.lastWF.Store(mi.snap.wf)
	}
	room := 0
	if !mi.finished {
		room = s.logRoom()
	}
	mi.log.dropMaps()
	mi.log.add(rec.Entries, room, &s.spares)
	if rec.Snapshot.Status.Finished() && mi.log.packMaps(&mi.snap) {
		mi.snap.visits, mi.snap.input, mi.snap.context, mi.snap.packed = nil, nil, nil, true
	}
	if finishes {
		mi.log.finish()
		s.logFinished(len(mi.log.data))
	}
	mi.settle(rec.Settled, rec.Outbox)
	mi.mu.Unlock()
	if created {
		s.listed(mi)
	}
	if finishes {
		s.finish(mi)
	}
	return nil
}

// settle drops the outbox items whose keys are settled, then keeps the
// items of out, each in the place of the item with its key if there is one.
// mi.mu is held.
func (mi *memInstance) settle(settled []string, out []Outgoing) {
	if len(settled) == 1 && len(out) == 1 && len(mi.outbox) == 1 && mi.outbox[0].Key == settled[0] {
		// The engine's step: it settles the item of the step before and
		// sends one, which takes its place (dropping the item, then
		// searching the outbox for the new key, was 4% of a refund's CPU).
		mi.outbox[0] = out[0]
		return
	}
	if len(settled) > 0 {
		mi.outbox = slices.DeleteFunc(mi.outbox, func(o Outgoing) bool { return slices.Contains(settled, o.Key) })
	}
	for _, o := range out {
		if k := slices.IndexFunc(mi.outbox, func(p Outgoing) bool { return p.Key == o.Key }); k >= 0 {
			mi.outbox[k] = o
		} else {
			if mi.outbox == nil {
				mi.outbox = outboxes.Get().(*[1]Outgoing)[:0]
			}
			mi.outbox = append(mi.outbox, o)
		}
	}
	if len(mi.outbox) == 0 && mi.outbox != nil {
		if cap(mi.outbox) == 1 {
			clear(mi.outbox[:1])
			outboxes.Put((*[1]Outgoing)(mi.outbox[:1]))
		}
		mi.outbox = nil
	}
}

// outboxes holds the outboxes of one item that instances emptied: an
// instance's steps each send one, and settle it at the next, so that an
// outbox is taken when an instance starts and given back when it finishes
// (a finished instance keeps none), where allocating each cost a 288-byte
// allocation an instance.
var outboxes = sync.Pool{New: func() any { return new([1]Outgoing) }}

// logRoom is the room a running instance's history is given when it
// grows past its first commit: the running estimate of a finished one's
// size and twice the estimate of their deviation from it, so that most
// histories allocate twice in their lives and are not copied when they
// finish. No more: a history that leaves more room than a size class
// rounds up to is copied to its size when it finishes, and histories of
// one size get that size exactly (the estimates are kept in sixteenths of
// a byte for it, the size rounded up and the deviation down).
func (s *MemStore) logRoom() int {
	return int((s.logSize.Load()+15)/16 + 2*s.logDev.Load()/16)
}

// logFinished moves the estimates of logRoom an eighth of the way to n,
// the size a history finished with. n counts for at most twice the
// estimate and at least half of it, so that one odd history does not make
// the next ones allocate much more room than they use. Concurrent updates
// may lose one another's step, which an estimate can afford.
func (s *MemStore) logFinished(n int) {
	n16 := 16 * int64(n)
	old := s.logSize.Load()
	if old == 0 {
		s.logSize.Store(n16)
		return
	}
	// The steps are rounded down (>>3), so that the estimates settle on
	// histories of one size exactly, from above or below.
	diff := min(max(n16, old/2), 2*old) - old
	s.logSize.Store(old + diff>>3)
	dev := s.logDev.Load()
	s.logDev.Store(dev + (max(diff, -diff)-dev)>>3)
}

// finish queues a newly finished instance and drops the oldest finished ones
// past the retention.
func (s *MemStore) finish(mi *memInstance) {
	s.finMu.Lock()
	defer s.finMu.Unlock()
	if s.retention <= 0 {
		return
	}
	s.finished = append(s.finished, mi)
	s.live++
	for s.live > s.retention && s.finHead < len(s.finished) {
		old := s.finished[s.finHead]
		s.finished[s.finHead] = nil
		s.finHead++
		if s.drop(old) {
			s.live--
			s.unlisted()
		}
	}
	if s.finHead > len(s.finished)/2 {
		// Amortised: the queue is compacted once half of it is dropped.
		n := copy(s.finished, s.finished[s.finHead:])
		clear(s.finished[n:])
		s.finished, s.finHead = s.finished[:n], 0
	}
}

// drop deletes mi from the store unless it is already gone, and reports
// whether it did.
func (s *MemStore) drop(mi *memInstance) bool {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	if mi.gone {
		return false
	}
	mi.gone = true
	s.instances.CompareAndDelete(mi.snap.id, mi)
	// What it holds goes now, not when the order List walks is next
	// compacted: that keeps up to as many dropped instances as live ones.
	// No reader holds its history's buffer past the instance's lock (they
	// decode copies): the next instances can have it.
	s.spares.put(mi.log.data)
	mi.log, mi.outbox = memLog{}, nil
	mi.snap.visits, mi.snap.input, mi.snap.context, mi.snap.packed = nil, nil, nil, false
	return true
}

// Prune implements Pruner.
func (s *MemStore) Prune(ctx context.Context, before time.Time) (int, error) {
	if ctx == nil {
		return 0, ErrNilContext
	}
	var victims []*memInstance
	s.instances.Range(func(_ string, mi *memInstance) bool {
		mi.mu.Lock()
		if mi.snap.Status().Finished() && mi.snap.updated.Before(before) {
			victims = append(victims, mi)
		}
		mi.mu.Unlock()
		return ctx.Err() == nil
	})
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.finMu.Lock()
	defer s.finMu.Unlock()
	n := 0
	for _, mi := range victims {
		if s.drop(mi) {
			s.unlisted()
			n++
			if mi.finished && s.retention > 0 {
				s.live--
			}
		}
	}
	return n, nil
}

// Outbox implements Store.
func (s *MemStore) Outbox(ctx context.Context, id string) ([]Outgoing, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	mi, ok := s.instances.Load(id)
	if !ok {
		return nil, ErrUnknownInstance
	}
	mi.mu.Lock()
	out, gone := slices.Clone(mi.outbox), mi.gone
	mi.mu.Unlock()
	if gone {
		return nil, ErrUnknownInstance // dropped since it was found
	}
	slices.SortStableFunc(out, compareOutgoing)
	return out, nil
}

// compareOutgoing orders outbox items by step, then key.
func compareOutgoing(a, b Outgoing) int {
	if c := cmp.Compare(a.Step, b.Step); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// MemDeadLetterLimit is how many dead letters a MemStore keeps: the newest,
// as the bus's own queue does (its default limit is the same), so that a
// long-running process without a durable store does not grow without bound.
const MemDeadLetterLimit = 10_000

// AddDeadLetter implements Store. Past MemDeadLetterLimit the oldest is
// dropped; Seq keeps counting.
func (s *MemStore) AddDeadLetter(ctx context.Context, d DeadLetter) error {
	if ctx == nil {
		return ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadSeq++
	d.Seq = s.deadSeq
	if len(s.dead) >= 2*MemDeadLetterLimit {
		// Drop the older half at once: amortised, each add copies O(1).
		keep := copy(s.dead, s.dead[len(s.dead)-MemDeadLetterLimit:])
		clear(s.dead[keep:])
		s.dead = s.dead[:keep]
	}
	s.dead = append(s.dead, d)
	return nil
}

// DeadLetters implements Store.
func (s *MemStore) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.dead[max(0, len(s.dead)-MemDeadLetterLimit):]), nil
}

// SaveWorkflow implements Store.
func (s *MemStore) SaveWorkflow(ctx context.Context, w WorkflowSource) error {
	if ctx == nil {
		return ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workflows[w.Hash]; ok {
		return nil
	}
	if s.workflows == nil {
		s.workflows = make(map[string]WorkflowSource)
	}
	w.Source = slices.Clone(w.Source)
	s.workflows[w.Hash] = w
	return nil
}

// Workflow implements Store.
func (s *MemStore) Workflow(ctx context.Context, hash string) (WorkflowSource, error) {
	if ctx == nil {
		return WorkflowSource{}, ErrNilContext
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workflows[hash]
	if !ok {
		return WorkflowSource{}, fmt.Errorf("%w: %s", ErrUnknownWorkflow, hash)
	}
	w.Source = slices.Clone(w.Source)
	return w, nil
}

// Instance implements Store.
func (s *MemStore) Instance(ctx context.Context, id string) (Snapshot, error) {
	if ctx == nil {
		return Snapshot{}, ErrNilContext
	}
	mi, ok := s.instances.Load(id)
	if !ok {
		return Snapshot{}, ErrUnknownInstance
	}
	mi.mu.Lock()
	defer mi.mu.Unlock()
	if mi.gone {
		return Snapshot{}, ErrUnknownInstance // dropped since it was found
	}
	return mi.snap.snapshot(&mi.log), nil
}

// History implements Store.
func (s *MemStore) History(ctx context.Context, id string) ([]Entry, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	mi, ok := s.instances.Load(id)
	if !ok {
		return nil, ErrUnknownInstance
	}
	mi.mu.Lock()
	defer mi.mu.Unlock()
	if mi.gone {
		return nil, ErrUnknownInstance // dropped since it was found
	}
	return mi.log.entries(), nil
}

// Instances implements Store.
func (s *MemStore) Instances(ctx context.Context) ([]Snapshot, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	var out []Snapshot
	s.instances.Range(func(_ string, mi *memInstance) bool {
		mi.mu.Lock()
		if !mi.gone {
			out = append(out, mi.snap.snapshot(&mi.log))
		}
		mi.mu.Unlock()
		return true
	})
	slices.SortFunc(out, func(a, b Snapshot) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, nil
}
