package natscluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/jsretry"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/wire"
)

// Key names in the lease bucket.
const (
	memberKey     = "member."
	partitionKey  = "partition."
	partitionsKey = "config.partitions"
)

// Node is one engine's membership in the cluster: the partitions it owns,
// their leases and fences, and the routing of reports to their owners.
type Node struct {
	cfg Config
	// fence is the store's Fence; a test makes it fail.
	fence func(ctx context.Context, partition int, token uint64) error
	nonce string    // this process's mark in its heartbeats: another under the same name is told apart
	start time.Time // when this node started: an older heartbeat under its name is its predecessor's
	nc    *nats.Conn
	store *natsstore.Store
	kv    jetstream.KeyValue
	log   *zap.Logger
	parts int

	mu      sync.Mutex
	owned   map[int]*lease // partitions whose lease this node holds, fenced or being fenced
	handler func(context.Context, *wire.Report) wire.Answer
	calls   CallHandler
	closed  bool

	running sync.WaitGroup // the forwarded calls under way

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// The loop's view of the bucket; only the loop's goroutine uses it.
	members map[string]time.Time // name -> when its heartbeat was last seen
	leases  map[int]entry        // partition -> its lease record

	// lastBeat is when the server last took this node's heartbeat (Unix
	// nanoseconds); the heartbeat has a goroutine of its own, so that a
	// long resume on the loop never delays it.
	lastBeat atomic.Int64
}

// lease is a partition this node holds: its lease record names this node
// under token. It is fenced, then resumed (settle); until both went
// through, it is tried again at next.
type lease struct {
	token  uint64
	fenced bool // the store holds the partition under token
	ready  bool // OnAcquire has returned: reports go to the engine
	sub    *nats.Subscription
	next   time.Time     // when settle tries again a fence or resume that failed
	pause  time.Duration // the pause before that try, growing with each failure
}

// entry is a partition's lease record as last seen.
type entry struct {
	owner string // "" when free
	rev   uint64 // 0 when never written
}

// Start joins the cluster of engines sharing store (opened with
// natsstore.Config.Partitions) over nc, and starts the node's goroutine:
// it heartbeats, claims its share of the partitions and balances them. It
// returns once the lease bucket is ready; partitions are taken on the
// goroutine, each reported to Config.OnAcquire. The node does not own nc
// or store: Close the node first.
func Start(ctx context.Context, nc *nats.Conn, store *natsstore.Store, cfg Config) (*Node, error) {
	return start(ctx, nc, store, cfg, store.Fence) // a method value: a nil store is refused in start
}

// start is Start with the store's Fence given apart, so that a test can
// make it fail.
func start(ctx context.Context, nc *nats.Conn, store *natsstore.Store, cfg Config, fence func(context.Context, int, uint64) error) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if nc == nil || store == nil {
		return nil, errors.New("natscluster: Start needs a connection and a store")
	}
	if store.Partitions() == 0 {
		return nil, &ConfigError{Field: "store", Reason: "the store was opened without natsstore.Config.Partitions"}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natscluster: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 3*cfg.Timeout)
	defer cancel()
	kv, err := jsretry.Do(rctx, jsretry.Per(cfg.Timeout), func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      store.Prefix() + "_leases",
			Description: "baton: engines of the cluster and the leases of their partitions",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("natscluster: open the lease bucket: %w", err)
	}
	if err := checkPartitions(rctx, kv, store.Partitions()); err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, fence: fence, nc: nc, store: store, kv: kv, log: cfg.Logger.With(zap.String("engine", cfg.Name)),
		nonce: nuid.Next(), start: time.Now(),
		parts: store.Partitions(), owned: map[int]*lease{},
		members: map[string]time.Time{}, leases: map[int]entry{}, done: make(chan struct{}),
	}
	lctx, lcancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := kv.WatchAll(lctx)
	if err != nil {
		lcancel()
		return nil, fmt.Errorf("natscluster: watch the lease bucket: %w", err)
	}
	n.cancel = lcancel
	go n.loop(lctx, w)
	return n, nil
}

// checkPartitions records the number of partitions of the prefix, or
// checks it against the one recorded: every engine must hash ids to the
// same partitions.
func checkPartitions(ctx context.Context, kv jetstream.KeyValue, parts int) error {
	want := strconv.Itoa(parts)
	if _, err := kv.Create(ctx, partitionsKey, []byte(want)); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("natscluster: record the number of partitions: %w", err)
	}
	e, err := kv.Get(ctx, partitionsKey)
	if err != nil {
		return fmt.Errorf("natscluster: read the number of partitions: %w", err)
	}
	if got := string(e.Value()); got != want {
		return &ConfigError{Field: "store", Reason: fmt.Sprintf("the store has %d partitions, the cluster %s", parts, got)}
	}
	return nil
}

// Name returns the node's name in the cluster.
func (n *Node) Name() string { return n.cfg.Name }

// LeaseTTL is Config.LeaseTTL, defaults applied.
func (n *Node) LeaseTTL() time.Duration { return n.cfg.LeaseTTL }

// Timeout is Config.Timeout, defaults applied: how long a call or a
// report waits for an owner.
func (n *Node) Timeout() time.Duration { return n.cfg.Timeout }

// Owns reports whether the node owns an instance: it holds the lease of the
// instance's partition and has resumed it.
func (n *Node) Owns(id string) bool { return n.ready(n.store.Partition(id)) }

func (n *Node) ready(p int) bool {
	n.mu.Lock()
	l := n.owned[p]
	ok := l != nil && l.ready
	n.mu.Unlock()
	return ok && n.store.Owns(p)
}

// Settling returns how many of the partitions the node leases are not
// ready yet: not fenced or not resumed (being tried, or tried again after
// a failure). A node that has just joined takes its share a partition at a
// time; a caller that wants all of it waits until this is 0.
func (n *Node) Settling() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, l := range n.owned {
		if !l.ready {
			k++
		}
	}
	return k
}

// Partitions returns the partitions the node owns, sorted.
func (n *Node) Partitions() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]int, 0, len(n.owned))
	for p, l := range n.owned {
		if l.ready && n.store.Owns(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// NewID returns a new random instance id in a partition the node owns, so
// that an instance the node's engine starts is the node's to commit. Pass
// it to engine.WithIDs. With no partition owned it returns a random id,
// whose first commit the store refuses (an error matching
// engine.ErrNotOwner).
func (n *Node) NewID() string {
	for range 4 * n.parts {
		id := uuid.NewString()
		if n.Owns(id) {
			return id
		}
	}
	return uuid.NewString()
}

// Close stops the node and hands its partitions over: the store commits
// none of them any more, Config.OnRelease is called for each, and their
// leases are deleted so that the other engines take them at once. It
// waits for the node's goroutine and is safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.cancel()
		<-n.done
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.Timeout)
		defer cancel()
		held := n.ownedList()
		n.release(held...)
		n.mu.Lock()
		n.calls = nil // no new forwarded call starts
		n.mu.Unlock()
		// The leases go first, so that the others take the partitions at
		// once; the calls still running here can commit nothing more.
		defer n.running.Wait()
		for _, p := range held {
			if e := n.leases[p]; e.owner == n.cfg.Name && e.rev > 0 {
				err := n.kv.Delete(ctx, partitionKey+strconv.Itoa(p), jetstream.LastRevision(e.rev))
				if err != nil {
					n.log.Debug("natscluster: lease not handed over", zap.Int("partition", p), zap.Error(err))
				}
			}
		}
		if err := n.kv.Delete(ctx, memberKey+n.cfg.Name); err != nil {
			n.log.Debug("natscluster: membership not ended", zap.Error(err))
		}
		n.mu.Lock()
		n.closed = true
		n.mu.Unlock()
	})
	return n.closeErr
}

func (n *Node) ownedList() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]int, 0, len(n.owned))
	for p := range n.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// loop is the node's goroutine: it follows the bucket and, every
// heartbeat, renews the membership and balances the partitions.
func (n *Node) loop(ctx context.Context, w jetstream.KeyWatcher) {
	defer close(n.done)
	defer func() { _ = w.Stop() }()
	n.beat(ctx)
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		t := time.NewTicker(n.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				n.beat(ctx)
			}
		}
	}()
	defer func() { <-beats }()
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	re := time.NewTicker(n.cfg.Recheck)
	defer re.Stop()
	// again fires when a partition whose fence or resume failed is due to
	// be tried again.
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	initial := true
	// ownSeen is when the watch last brought this node's own heartbeat
	// back: the watch is live while it does.
	ownSeen := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-re.C:
			n.recheck(ctx)
		case <-again.C:
			n.settle(ctx)
			n.armSettle(again)
		case u, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return // the watch ended with the node
				}
				n.log.Warn("natscluster: the lease bucket's watch ended; watching again")
				nw := n.rewatch(ctx, w)
				if nw == nil {
					return // the node closed meanwhile; w is stopped below
				}
				w, initial, ownSeen = nw, true, time.Now()
				continue
			}
			if u == nil { // the bucket's current records are all in
				initial = false
				continue
			}
			if u.Key() == memberKey+n.cfg.Name {
				ownSeen = time.Now()
			}
			n.apply(u)
		case <-t.C:
			n.dropFenced()
			if n.cutOff() {
				if held := n.ownedList(); len(held) > 0 {
					n.log.Warn("natscluster: partitions given up: heartbeats failing", zap.Ints("partitions", held))
					n.release(held...)
				}
				continue
			}
			if time.Since(ownSeen) > n.cfg.LeaseTTL && len(w.Updates()) == 0 {
				// The server takes the heartbeats, but the watch has
				// brought none back for a lease time and holds nothing
				// unread: it is stuck (seen after stream leaders were
				// replaced), and its view would count every other engine
				// gone.
				n.log.Warn("natscluster: the lease bucket's watch brings no updates; watching again")
				if nw := n.rewatch(ctx, w); nw != nil {
					w, initial = nw, true
				}
				ownSeen = time.Now()
				continue
			}
			if !initial {
				n.balance(ctx)
				n.armSettle(again)
			}
		}
	}
}

// rewatch replaces the lease bucket's watch w with a new one, which
// replays the bucket's records first, trying every heartbeat until it has
// one; it returns nil when the context ended.
func (n *Node) rewatch(ctx context.Context, w jetstream.KeyWatcher) jetstream.KeyWatcher {
	for ctx.Err() == nil {
		nw, err := n.kv.WatchAll(ctx)
		if err == nil {
			_ = w.Stop()
			return nw
		}
		n.log.Warn("natscluster: watch the lease bucket", zap.Error(err))
		select {
		case <-ctx.Done():
		case <-time.After(n.cfg.Heartbeat):
		}
	}
	return nil
}

// apply takes one record of the bucket into the view; a partition this
// node holds that another engine has taken is released.
func (n *Node) apply(u jetstream.KeyValueEntry) {
	key := u.Key()
	deleted := u.Operation() != jetstream.KeyValuePut
	switch {
	case strings.HasPrefix(key, memberKey):
		name := strings.TrimPrefix(key, memberKey)
		if deleted {
			delete(n.members, name)
		} else {
			n.members[name] = time.Now()
		}
		if name == n.cfg.Name && !deleted {
			nonce, at, _ := strings.Cut(string(u.Value()), " ")
			if t, err := time.Parse(time.RFC3339Nano, at); nonce != n.nonce && err == nil && t.After(n.start) {
				// Both would take the partitions for their own, and the
				// store would refuse the commits of one or the other.
				n.log.Error("natscluster: another engine runs under this engine's name: give each its own", zap.String("name", n.cfg.Name))
			}
		}
	case strings.HasPrefix(key, partitionKey):
		p, err := strconv.Atoi(strings.TrimPrefix(key, partitionKey))
		if err != nil || p < 0 || p >= n.parts {
			return
		}
		e := entry{rev: u.Revision()}
		if !deleted {
			e.owner = string(u.Value())
		}
		if old := n.leases[p]; old.rev > e.rev {
			return
		}
		n.leases[p] = e
		if e.owner != n.cfg.Name && n.holds(p) {
			n.log.Info("natscluster: partition taken over by another engine", zap.Int("partition", p), zap.String("owner", e.owner))
			n.release(p)
		}
	}
}

func (n *Node) holds(p int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.owned[p] != nil
}

// dropFenced releases the partitions the node holds that its store no
// longer does: a commit found another store's fence on them (a takeover
// this node's watch has not shown yet, or a refusal it could not tell from
// one). Held on, such a partition would keep its instances from every
// engine: this one's commits are refused, and its reports come here. Once
// released, the partition is claimed again at the next balance if the
// bucket still says it is this node's, under a new token.
func (n *Node) dropFenced() {
	var lost []int
	n.mu.Lock()
	for p, l := range n.owned {
		if l.fenced && !n.store.Owns(p) {
			lost = append(lost, p)
		}
	}
	n.mu.Unlock()
	slices.Sort(lost)
	if len(lost) > 0 {
		n.log.Warn("natscluster: partitions fenced by another store; given up", zap.Ints("partitions", lost))
		n.release(lost...)
	}
}

// beat renews the node's membership.
func (n *Node) beat(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	_, err := n.kv.Put(rctx, memberKey+n.cfg.Name, []byte(n.nonce+" "+time.Now().UTC().Format(time.RFC3339Nano)))
	cancel()
	if err == nil {
		n.lastBeat.Store(time.Now().UnixNano())
	} else if ctx.Err() == nil {
		n.log.Warn("natscluster: heartbeat not taken", zap.Error(err))
	}
}

// cutOff reports whether the node's heartbeats have not reached the server
// for LeaseTTL, less a heartbeat to be early: the other engines may be
// taking its partitions over, so it gives them up and claims none.
func (n *Node) cutOff() bool {
	return time.Since(time.Unix(0, n.lastBeat.Load())) > n.cfg.LeaseTTL-n.cfg.Heartbeat
}

// alive lists the engines whose heartbeat was seen within LeaseTTL, this
// one included, sorted by name.
func (n *Node) alive() []string {
	now := time.Now()
	out := []string{n.cfg.Name}
	for name, seen := range n.members {
		if name != n.cfg.Name && now.Sub(seen) <= n.cfg.LeaseTTL {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// share is how many partitions this node should hold: the partitions
// divided by the engines alive, the first ones by name taking one more.
func (n *Node) share(alive []string) int {
	k := slices.Index(alive, n.cfg.Name)
	q := n.parts / len(alive)
	if k < n.parts%len(alive) {
		q++
	}
	return q
}

// balance gives up the partitions beyond the node's share and claims free
// ones (never taken, handed over, or held by an engine no longer alive)
// up to it.
func (n *Node) balance(ctx context.Context) {
	if n.cutOff() {
		return
	}
	alive := n.alive()
	share := n.share(alive)
	held := n.ownedList()
	if len(held) > share {
		n.handOver(ctx, held[share:])
		return
	}
	var free []int
	for p := range n.parts {
		if n.holds(p) {
			continue
		}
		e := n.leases[p]
		if e.owner == "" || e.owner == n.cfg.Name || !slices.Contains(alive, e.owner) {
			free = append(free, p)
		}
	}
	// Each engine tries the free partitions in an order of its own, so
	// that engines claiming at once rarely race for the same ones.
	slices.SortFunc(free, func(a, b int) int { return int64Cmp(n.rank(a), n.rank(b)) })
	taken := 0
	for _, p := range free {
		if len(held)+taken >= share || ctx.Err() != nil {
			break
		}
		if n.claim(ctx, p) {
			taken++
		}
	}
	n.settle(ctx)
}

// recheck calls OnAcquire again with every partition the node owns.
func (n *Node) recheck(ctx context.Context) {
	if held := n.Partitions(); len(held) > 0 {
		if err := n.cfg.OnAcquire(ctx, held); err != nil {
			n.log.Warn("natscluster: recheck", zap.Error(err))
		}
	}
}

func int64Cmp(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (n *Node) rank(p int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(n.cfg.Name))
	h.Write([]byte(strconv.Itoa(p)))
	return h.Sum64()
}

// claim takes a partition's lease: a compare-and-swap on the record as last
// seen. The node holds the partition from then on; settle fences and
// resumes it.
func (n *Node) claim(ctx context.Context, p int) bool {
	key := partitionKey + strconv.Itoa(p)
	e := n.leases[p]
	rctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	var rev uint64
	var err error
	if e.rev == 0 {
		rev, err = n.kv.Create(rctx, key, []byte(n.cfg.Name))
	} else {
		rev, err = n.kv.Update(rctx, key, []byte(n.cfg.Name), e.rev)
	}
	if err != nil {
		n.log.Debug("natscluster: partition not claimed", zap.Int("partition", p), zap.Error(err))
		return false
	}
	n.leases[p] = entry{owner: n.cfg.Name, rev: rev}
	n.mu.Lock()
	n.owned[p] = &lease{token: rev}
	n.mu.Unlock()
	n.log.Info("natscluster: partition leased", zap.Int("partition", p), zap.Uint64("token", rev), zap.String("from", e.owner))
	return true
}

// release stops the node's hold on partitions: no more commits, no more
// reports, and the engine drops their instances.
func (n *Node) release(ps ...int) {
	var gone []int
	for _, p := range ps {
		n.mu.Lock()
		l := n.owned[p]
		delete(n.owned, p)
		n.mu.Unlock()
		if l == nil {
			continue
		}
		n.store.Unfence(p)
		if l.sub != nil {
			_ = l.sub.Unsubscribe()
		}
		gone = append(gone, p)
	}
	if len(gone) > 0 {
		n.cfg.OnRelease(gone)
	}
}

// handOver gives partitions up for other engines to take at once.
func (n *Node) handOver(ctx context.Context, ps []int) {
	n.log.Info("natscluster: partitions handed over", zap.Ints("partitions", ps))
	n.release(ps...)
	for _, p := range ps {
		e := n.leases[p]
		if e.owner != n.cfg.Name || e.rev == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
		if err := n.kv.Delete(rctx, partitionKey+strconv.Itoa(p), jetstream.LastRevision(e.rev)); err != nil {
			n.log.Debug("natscluster: lease not deleted", zap.Int("partition", p), zap.Error(err))
		}
		cancel()
		n.leases[p] = entry{rev: e.rev}
	}
}
