package natscluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/crashcheck"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// clusterEnv runs the cluster test; it is not run by default, since it
// takes minutes on a shared 2-vCPU machine.
const clusterEnv = "BATON_CLUSTER"

// longEnv makes the cluster test run longer: more instances, and every
// fault held longer.
const longEnv = "BATON_CLUSTER_LONG"

// natsNode is one NATS server of the test cluster, a child process.
type natsNode struct {
	name, dir       string
	port, routePort int
	routes          []string // the proxies this server dials the others through
	cmd             *exec.Cmd
}

func (n *natsNode) url() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

// testCluster is three NATS servers routed to each other through proxies,
// engines and agents' workers: all child processes on loopback.
type testCluster struct {
	t    *testing.T // the test or subtest checking
	root *testing.T // the test owning the processes

	nodes   []*natsNode
	proxies map[[2]int]*proxy // [from, to] -> the proxy from dials to reach to
	engines map[string]*exec.Cmd
	workers []*exec.Cmd
	log     string
	nc      *nats.Conn
	js      jetstream.JetStream
	store   *natsstore.Store
	started []string // instance ids the engines acknowledged
	next    int      // for engine names
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func child(t *testing.T, kind string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + kind}, env...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func startCluster(t *testing.T) *testCluster {
	t.Helper()
	c := &testCluster{t: t, root: t, proxies: map[[2]int]*proxy{}, engines: map[string]*exec.Cmd{}, log: filepath.Join(t.TempDir(), "agents.log")}
	for k := range 3 {
		c.nodes = append(c.nodes, &natsNode{name: fmt.Sprintf("n%d", k), dir: t.TempDir(), port: freePort(t), routePort: freePort(t)})
	}
	for i, from := range c.nodes {
		for j, to := range c.nodes {
			if i == j {
				continue
			}
			p := newProxy(t, "127.0.0.1:"+strconv.Itoa(to.routePort))
			c.proxies[[2]int{i, j}] = p
			from.routes = append(from.routes, "nats-route://"+p.addr())
		}
	}
	for k := range c.nodes {
		c.startNode(k)
	}
	var urls []string
	for _, n := range c.nodes {
		urls = append(urls, n.url())
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	c.js, err = jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor("the cluster's JetStream", time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.js.AccountInfo(ctx)
		return err == nil
	})
	return c
}

func (c *testCluster) startNode(k int) {
	n := c.nodes[k]
	n.cmd = child(c.root, "nats", nameEnv+"="+n.name, dirEnv+"="+n.dir, portEnv+"="+strconv.Itoa(n.port),
		routePortEnv+"="+strconv.Itoa(n.routePort), routesEnv+"="+strings.Join(n.routes, ","))
}

// urls lists the servers' addresses, server k's first.
func (c *testCluster) urls(k int) string {
	out := []string{c.nodes[k].url()}
	for j, n := range c.nodes {
		if j != k {
			out = append(out, n.url())
		}
	}
	return strings.Join(out, ",")
}

// startEngine starts an engine connected to server k first.
func (c *testCluster) startEngine(k int) string {
	name := fmt.Sprintf("e%d", c.next)
	c.next++
	c.engines[name] = child(c.root, "engine", nameEnv+"="+name, urlsEnv+"="+c.urls(k))
	return name
}

func (c *testCluster) startWorker(k int) {
	c.workers = append(c.workers, child(c.root, "worker", nameEnv+fmt.Sprintf("=w%d", k), urlsEnv+"="+c.urls(k), logEnv+"="+c.log))
}

// openStore opens the test's own view of the store, once the engines have
// made it.
func (c *testCluster) openStore() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.waitFor("the store", time.Minute, func() bool {
		cfg := storeConfig()
		st, err := natsstore.Open(ctx, c.nc, cfg)
		if err != nil {
			return false
		}
		c.store = st
		return true
	})
	c.root.Cleanup(func() { _ = c.store.Close() })
}

// waitFor polls cond until it holds, for at most limit: every condition
// here comes true within a few lease or election times, and the bound only
// stops a broken test.
func (c *testCluster) waitFor(what string, limit time.Duration, cond func() bool) time.Duration {
	c.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			c.t.Fatalf("gave up waiting for %s after %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// startInstances asks every engine in names for n instances and keeps the
// ids they acknowledged.
func (c *testCluster) startInstances(n int, names ...string) {
	c.t.Helper()
	for _, name := range names {
		var ids []string
		c.waitFor("engine "+name+" to start instances", 2*time.Minute, func() bool {
			msg, err := c.nc.Request(startSubject+name, []byte(strconv.Itoa(n)), 30*time.Second)
			if err != nil || json.Unmarshal(msg.Data, &ids) != nil || len(ids) == 0 {
				return false
			}
			return true
		})
		c.started = append(c.started, ids...)
	}
}

// leases reads who holds each partition.
func (c *testCluster) leases() map[string]int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	kv, err := c.js.KeyValue(ctx, clusterPrefix+"_leases")
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for p := range clusterPartitions {
		e, err := kv.Get(ctx, "partition."+strconv.Itoa(p))
		if err != nil {
			return nil
		}
		out[string(e.Value())]++
	}
	return out
}

// settle waits until every instance started has finished and its outbox
// is empty, then checks the store and the agents' log: every instance
// completed with each step applied once, every acknowledged start is
// there, and each dead letter is kept once.
func (c *testCluster) settle(limit time.Duration) {
	c.t.Helper()
	ctx := context.Background()
	var snaps []record.Snapshot
	c.waitFor("every instance to finish with its outbox settled", limit, func() bool {
		var err error
		snaps, err = c.store.Instances(ctx)
		if err != nil || len(snaps) < len(c.started) {
			return false
		}
		for _, s := range snaps {
			if !s.Status.Finished() {
				return false
			}
			if left, err := c.store.Outbox(ctx, s.ID); err != nil || len(left) > 0 {
				return false
			}
		}
		return true
	})
	have := map[string]bool{}
	for _, s := range snaps {
		have[s.ID] = true
	}
	for _, id := range c.started {
		if !have[id] {
			c.t.Errorf("instance %s was acknowledged but is not in the store", id)
		}
	}
	fig := crashcheck.Verify(c.t, retrying{c.store}, c.log, len(snaps))
	dead, err := retrying{c.store}.DeadLetters(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	seen := map[string]bool{}
	reasons := map[string]int{}
	for _, d := range dead {
		reasons[d.Reason+" ("+d.To+")"]++
		key := d.MessageID + "|" + d.Reason + "|" + d.At.String()
		if d.Reason == "" || seen[key] {
			c.t.Errorf("dead letter %+v: kept twice or without a reason", d)
		}
		seen[key] = true
	}
	c.t.Logf("%d instances: %d agent runs for %d keys, %d runs resumed, %d dead letters %v", len(snaps), fig.Runs, fig.Keys, fig.Resumed, len(dead), reasons)
}

// leader is the server leading a stream of the store.
func (c *testCluster) leader(stream string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := c.js.Stream(ctx, stream)
	if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Cluster.Leader == "" {
		return "", false
	}
	return s.CachedInfo().Cluster.Leader, true
}

// TestCluster_Faults runs a workflow with a chain, a fan-out and a final
// notice on three engines sharing a three-server JetStream cluster (R3),
// every agent in worker processes, and breaks it: an engine killed with
// SIGKILL; with BATON_CLUSTER_LONG=1 also the steps stream's leader killed
// and a server cut off from the others by its proxies for longer than an
// election, with more instances. After each fault, every instance
// completes with each step applied once, no acknowledged instance is lost,
// the outboxes settle and dead letters are kept once.
func TestCluster_Faults(t *testing.T) {
	if os.Getenv(clusterEnv) == "" && os.Getenv(longEnv) == "" {
		t.Skip("starts a cluster of child processes for minutes: set BATON_CLUSTER=1 (or BATON_CLUSTER_LONG=1)")
	}
	perEngine, cut, limit := 10, 11*time.Second, 2*time.Minute
	long := os.Getenv(longEnv) != ""
	if long {
		perEngine, cut, limit = 100, 25*time.Second, 5*time.Minute
	}
	begin := time.Now()
	c := startCluster(t)
	t.Logf("NATS cluster up: %v", time.Since(begin))
	names := []string{c.startEngine(0), c.startEngine(1), c.startEngine(2)}
	c.startWorker(0)
	c.startWorker(1)
	c.openStore()
	t.Logf("store open: %v", time.Since(begin))
	c.waitFor("three engines to share the partitions", limit, func() bool {
		l := c.leases()
		share := clusterPartitions / 3
		return len(l) == 3 && l[names[0]] >= share && l[names[1]] >= share && l[names[2]] >= share
	})
	t.Logf("cluster up, engines sharing the partitions: %v", time.Since(begin))
	c.startInstances(perEngine, names...)
	c.settle(limit)
	t.Logf("first instances settled: %v", time.Since(begin))

	t.Run("EngineKilled", func(t *testing.T) {
		c.t = t
		c.startInstances(perEngine, names...)
		victim := names[0]
		cmd := c.engines[victim]
		killed := time.Now()
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		took := c.waitFor("the other engines to take the dead one's partitions", limit, func() bool {
			l := c.leases()
			return l != nil && l[victim] == 0 && l[names[1]]+l[names[2]] == clusterPartitions
		})
		t.Logf("engine failover: partitions of the killed engine owned again %v after the kill (lease time %v)", took, childLeaseTTL)
		c.settle(limit)
		t.Logf("all settled %v after the kill", time.Since(killed))
		names[0] = c.startEngine(0)
		c.waitFor("the new engine to get its share", limit, func() bool { return c.leases()[names[0]] >= clusterPartitions/3 })
	})

	if !long {
		// The server faults take a minute or more on a shared 2-vCPU
		// machine (elections, and every engine giving its partitions up
		// while the lease bucket elects a leader): they run with
		// BATON_CLUSTER_LONG=1.
		return
	}
	t.Run("StreamLeaderKilled", func(t *testing.T) {
		c.t = t
		stream := clusterPrefix + "_steps_0"
		lead, ok := c.leader(stream)
		if !ok {
			t.Fatalf("stream %s has no leader", stream)
		}
		k := slices.IndexFunc(c.nodes, func(n *natsNode) bool { return n.name == lead })
		if k < 0 {
			t.Fatalf("leader %q is not a server of the test", lead)
		}
		c.startInstances(perEngine, names...)
		killed := time.Now()
		if err := c.nodes[k].cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = c.nodes[k].cmd.Wait()
		took := c.waitFor("a new leader of "+stream, limit, func() bool {
			l, ok := c.leader(stream)
			return ok && l != lead
		})
		t.Logf("stream leader failover: %s has a new leader %v after its leader was killed", stream, took)
		c.startNode(k)
		c.settle(limit)
		t.Logf("all settled %v after the kill", time.Since(killed))
	})

	t.Run("NodeCutOff", func(t *testing.T) {
		c.t = t
		// Cut off a server the test's own connection does not use.
		k := slices.IndexFunc(c.nodes, func(n *natsNode) bool { return n.name != c.nc.ConnectedServerName() })
		c.startInstances(perEngine, names...)
		var cuts []*proxy
		for pair, p := range c.proxies {
			if pair[0] == k || pair[1] == k {
				cuts = append(cuts, p)
			}
		}
		before := c.leases()
		for _, p := range cuts {
			p.setCut(true)
		}
		begin := time.Now()
		took := c.waitFor("the lease bucket to take writes on the majority's side", limit, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			kv, err := c.js.KeyValue(ctx, clusterPrefix+"_leases")
			if err != nil {
				return false
			}
			_, err = kv.Put(ctx, "probe", []byte(time.Now().String()))
			return err == nil
		})
		t.Logf("cut-off: server %s cut off; the lease bucket took writes %v after the cut", c.nodes[k].name, took)
		if rest := cut - time.Since(begin); rest > 0 {
			time.Sleep(rest) // hold the cut longer than an election
		}
		t.Logf("cut-off: partitions per engine before %v, at the end of the cut %v", before, c.leases())
		for _, p := range cuts {
			p.setCut(false)
		}
		c.settle(limit)
		t.Logf("all settled %v after the cut began", time.Since(begin))
	})
}

// retrying reads a store again when a read fails: a read of a replicated
// stream can fail while its leader changes, and the checks read a lot.
type retrying struct{ record.Store }

const readTries = 300

func again[T any](read func() (T, error)) (T, error) {
	var v T
	var err error
	for range readTries {
		if v, err = read(); err == nil {
			return v, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return v, err
}

func (r retrying) Instances(ctx context.Context) ([]record.Snapshot, error) {
	return again(func() ([]record.Snapshot, error) { return r.Store.Instances(ctx) })
}

func (r retrying) History(ctx context.Context, id string) ([]record.Entry, error) {
	return again(func() ([]record.Entry, error) { return r.Store.History(ctx, id) })
}

func (r retrying) Outbox(ctx context.Context, id string) ([]record.Outgoing, error) {
	return again(func() ([]record.Outgoing, error) { return r.Store.Outbox(ctx, id) })
}

func (r retrying) DeadLetters(ctx context.Context) ([]record.DeadLetter, error) {
	return again(func() ([]record.DeadLetter, error) { return r.Store.DeadLetters(ctx) })
}
