package natscluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/natscluster"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/wire"
)

const (
	testPartitions = 12
	testTimeout    = time.Minute
	// testTTL is short, so that takeovers happen within a test; nothing
	// asserts how long they take.
	testTTL = 500 * time.Millisecond
)

func startServer(t *testing.T) *natsserver.Server {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Config{Dir: t.TempDir(), SyncInterval: time.Minute}) // long: the server's sync timer, racy in nats-server 2.15, never fires in a test
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv
}

// member is one engine of a test cluster: its connection, store and node,
// and the partitions its callbacks were told of.
type member struct {
	nc     *nats.Conn // the store's
	nodeNC *nats.Conn // the node's
	store  *natsstore.Store
	node   *natscluster.Node

	mu       sync.Mutex
	acquired []int
	released []int
}

func (m *member) events() (acquired, released []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.acquired), slices.Clone(m.released)
}

func join(t *testing.T, srv *natsserver.Server, name string, change ...func(*natscluster.Config)) *member {
	t.Helper()
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	store, err := natsstore.Open(context.Background(), nc, natsstore.Config{Prefix: "c", Partitions: testPartitions, Shards: 2, Timeout: testTimeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	nodeNC, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nodeNC.Close)
	m := &member{nc: nc, nodeNC: nodeNC, store: store}
	cfg := natscluster.Config{
		Name: name, LeaseTTL: testTTL, Timeout: testTimeout,
		OnAcquire: func(_ context.Context, ps []int) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps {
				if !slices.Contains(m.acquired, p) || slices.Contains(m.released, p) {
					m.acquired = append(m.acquired, p) // not a recheck
				}
			}
			return nil
		},
		OnRelease: func(ps []int) {
			m.mu.Lock()
			m.released = append(m.released, ps...)
			m.mu.Unlock()
		},
	}
	for _, c := range change {
		c(&cfg)
	}
	m.node, err = natscluster.Start(context.Background(), nodeNC, store, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.node.Close() })
	return m
}

// waitFor polls cond for up to a minute: the conditions come true within a
// few lease times, and the bound only stops a broken test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// shared reports whether the members own every partition exactly once,
// each within one of its fair share.
func shared(ms ...*member) bool {
	seen := map[int]int{}
	for _, m := range ms {
		ps := m.node.Partitions()
		if n := len(ps); n < testPartitions/len(ms) || n > testPartitions/len(ms)+1 {
			return false
		}
		for _, p := range ps {
			seen[p]++
		}
	}
	if len(seen) != testPartitions {
		return false
	}
	for _, n := range seen {
		if n != 1 {
			return false
		}
	}
	return true
}

func TestNode_EnginesShareThePartitionsFairly(t *testing.T) {
	srv := startServer(t)
	a := join(t, srv, "a")
	waitFor(t, "a alone to own every partition", func() bool { return len(a.node.Partitions()) == testPartitions })
	b := join(t, srv, "b")
	c := join(t, srv, "c")
	waitFor(t, "three engines to share the partitions", func() bool { return shared(a, b, c) })

	// Every engine owns the ids it makes.
	for _, m := range []*member{a, b, c} {
		for range 20 {
			id := m.node.NewID()
			require.True(t, m.node.Owns(id))
			require.Contains(t, m.node.Partitions(), m.store.Partition(id))
		}
	}
	// Each engine was told of every partition it took and gave up.
	for _, m := range []*member{a, b, c} {
		acq, rel := m.events()
		require.Len(t, m.node.Partitions(), len(acq)-len(rel))
	}
}

func TestNode_CloseHandsThePartitionsOver(t *testing.T) {
	srv := startServer(t)
	a, b := join(t, srv, "a"), join(t, srv, "b")
	waitFor(t, "two engines to share the partitions", func() bool { return shared(a, b) })
	held := a.node.Partitions()
	_, before := a.events()
	require.NoError(t, a.node.Close())
	require.NoError(t, a.node.Close(), "a second Close")
	require.Empty(t, a.node.Partitions())
	_, rel := a.events()
	require.ElementsMatch(t, held, rel[len(before):])
	waitFor(t, "b to own every partition", func() bool { return len(b.node.Partitions()) == testPartitions })
}

func TestNode_TheDeadEnginesPartitionsAreTakenOverAndFenced(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	a, b := join(t, srv, "a"), join(t, srv, "b")
	waitFor(t, "two engines to share the partitions", func() bool { return shared(a, b) })

	// a commits an instance of its own, then dies without handing
	// anything over.
	id := a.node.NewID()
	snap := record.Snapshot{ID: id, Workflow: "w", Version: 1, Status: record.StatusRunning, State: "S", Step: 1, Commits: 1, Created: time.Now().UTC(), Updated: time.Now().UTC()}
	require.NoError(t, a.store.Commit(ctx, record.Step{Snapshot: snap}))
	held := a.node.Partitions()
	a.crash(t)

	waitFor(t, "b to take a's partitions over", func() bool { return len(b.node.Partitions()) == testPartitions })
	require.True(t, b.node.Owns(id))
	acq, _ := b.events()
	for _, p := range held {
		require.Contains(t, acq, p, "b was told it took partition %d", p)
	}
	got, err := b.store.Instance(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 1, got.Step)
	snap.Step, snap.Commits = 2, 2
	require.ErrorIs(t, a.store.Commit(ctx, record.Step{Snapshot: snap}), record.ErrNotOwner)
	require.NoError(t, b.store.Commit(ctx, record.Step{Snapshot: snap}))
}

func (m *member) crash(t *testing.T) {
	t.Helper()
	m.nodeNC.Close()
	require.NoError(t, m.node.Close())
}

func TestNode_ServeReports_ReachTheOwner(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	a, b := join(t, srv, "a"), join(t, srv, "b")
	waitFor(t, "two engines to share the partitions", func() bool { return shared(a, b) })
	var mu sync.Mutex
	handled := map[string]string{}
	serve := func(m *member, name string) {
		stop, err := m.node.ServeReports(ctx, func(_ context.Context, r *wire.Report) wire.Answer {
			if !m.node.Owns(r.InstanceID) {
				return wire.Answer{Code: wire.CodeInvalid, Message: name + " does not own " + r.InstanceID}
			}
			mu.Lock()
			handled[r.InstanceID] = name
			mu.Unlock()
			return wire.Answer{OK: true}
		})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, stop()) })
	}
	serve(a, "a")
	serve(b, "b")

	agent, err := srv.Connect()
	require.NoError(t, err)
	defer agent.Close()
	var ids []string
	for k := range 20 {
		owner := a
		if k%2 == 1 {
			owner = b
		}
		ids = append(ids, owner.node.NewID())
	}
	for k, id := range ids {
		ans, err := natsbus.Report(ctx, agent, wire.Report{InstanceID: id, Step: 1, Agent: "x", Trigger: "done"})
		require.NoError(t, err)
		require.True(t, ans.OK, "report %d: %+v", k, ans)
	}
	for k, id := range ids {
		want := "a"
		if k%2 == 1 {
			want = "b"
		}
		require.Equal(t, want, handled[id], "instance %s", id)
	}
}

// A node whose store lost a partition (a commit found another store's
// fence on it) gives it up: held on, the partition's instances would stay
// with an engine that can commit none of them. The bucket still says the
// partition is the node's, so the node claims it again under a new token.
func TestNode_APartitionTheStoreLostIsGivenUpAndClaimedAgain(t *testing.T) {
	srv := startServer(t)
	a := join(t, srv, "a")
	waitFor(t, "a to own every partition", func() bool { return len(a.node.Partitions()) == testPartitions })
	id := a.node.NewID()
	p := a.store.Partition(id)
	_, before := a.events()
	a.store.Unfence(p) // as a refused commit leaves it
	require.False(t, a.node.Owns(id), "a node must not claim an instance its store cannot commit")
	waitFor(t, "a to give the partition up", func() bool {
		_, rel := a.events()
		return slices.Contains(rel[len(before):], p)
	})
	waitFor(t, "a to own the partition again", func() bool { return a.node.Owns(id) && a.store.Owns(p) })
	snap := record.Snapshot{ID: id, Workflow: "w", Version: 1, Status: record.StatusRunning, State: "S", Step: 1, Commits: 1, Created: time.Now().UTC(), Updated: time.Now().UTC()}
	require.NoError(t, a.store.Commit(context.Background(), record.Step{Snapshot: snap}))
}

// A partition another store fenced under a newer token is given up and
// left alone: the node does not take it back.
func TestNode_APartitionFencedByANewerTokenIsLeftAlone(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	a := join(t, srv, "a")
	waitFor(t, "a to own every partition", func() bool { return len(a.node.Partitions()) == testPartitions })
	id := a.node.NewID()
	p := a.store.Partition(id)
	nc, err := srv.Connect()
	require.NoError(t, err)
	defer nc.Close()
	other, err := natsstore.Open(ctx, nc, natsstore.Config{Prefix: "c", Partitions: testPartitions, Shards: 2, Timeout: testTimeout})
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, other.Fence(ctx, p, 1<<40))
	snap := record.Snapshot{ID: id, Workflow: "w", Version: 1, Status: record.StatusRunning, State: "S", Step: 1, Commits: 1, Created: time.Now().UTC(), Updated: time.Now().UTC()}
	require.ErrorIs(t, a.store.Commit(ctx, record.Step{Snapshot: snap}), record.ErrNotOwner)
	waitFor(t, "a to give the partition up", func() bool { return !slices.Contains(a.node.Partitions(), p) && !a.node.Owns(id) })
	require.NoError(t, other.Commit(ctx, record.Step{Snapshot: snap}))
	require.ErrorIs(t, a.store.Commit(ctx, record.Step{Snapshot: snap}), record.ErrNotOwner)
	require.Len(t, a.node.Partitions(), testPartitions-1)
}

// Closing a node never panics, whichever of its context and its watch of
// the bucket the node's goroutine sees end first.
func TestNode_CloseWhileTheWatchEnds(t *testing.T) {
	srv := startServer(t)
	for k := range 30 {
		m := join(t, srv, fmt.Sprintf("n%d", k))
		require.NoError(t, m.node.Close())
	}
}

// A node takes its share a partition at a time; Settling counts the ones it
// leased that are not ready yet, so that a server can wait for all of them
// before it takes requests.
func TestNode_SettlingCountsLeasedPartitionsNotReady(t *testing.T) {
	srv := startServer(t)
	var resumes atomic.Int32
	block := make(chan struct{})
	a := join(t, srv, "a", func(c *natscluster.Config) {
		acquire := c.OnAcquire
		c.OnAcquire = func(ctx context.Context, ps []int) error {
			if resumes.Add(1) == 1 {
				<-block // the first resume hangs until the test lets it go
			}
			return acquire(ctx, ps)
		}
	})
	waitFor(t, "a node with a resume under way", func() bool { return resumes.Load() == 1 })
	if n := a.node.Settling(); n == 0 {
		t.Errorf("got %d partitions settling while a resume hangs, want some", n)
	}
	close(block)
	waitFor(t, "every partition ready", func() bool { return a.node.Settling() == 0 && len(a.node.Partitions()) == testPartitions })
}
