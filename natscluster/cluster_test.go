package natscluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/internal/crashcheck"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// longEnv makes the cluster test run longer: more instances, and every
// fault held longer.
const longEnv = "BATON_CLUSTER_LONG"

// testCluster is a three-server JetStream cluster, engines and agents'
// workers: all child processes on loopback.
type testCluster struct {
	t    *testing.T // the test or subtest checking
	root *testing.T // the test owning the processes

	nats    *clustertest.Cluster
	engines map[string]*exec.Cmd
	workers []*exec.Cmd
	log     string
	nc      *nats.Conn
	js      jetstream.JetStream
	store   *natsstore.Store
	started []string // instance ids the engines acknowledged
	next    int      // for engine names
}

func startCluster(t *testing.T) *testCluster {
	t.Helper()
	c := &testCluster{t: t, root: t, engines: map[string]*exec.Cmd{}, log: filepath.Join(t.TempDir(), "agents.log")}
	c.nats = clustertest.Start(t, 3)
	c.nc = c.nats.Connect(t, 0, "test")
	var err error
	c.js, err = jetstream.New(c.nc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startEngine starts an engine connected to server k first.
func (c *testCluster) startEngine(k int) string {
	name := fmt.Sprintf("e%d", c.next)
	c.next++
	c.engines[name] = clustertest.Child(c.root, childEnv+"=engine", nameEnv+"="+name, urlsEnv+"="+c.nats.URLs(k))
	return name
}

func (c *testCluster) startWorker(k int) {
	c.workers = append(c.workers, clustertest.Child(c.root, childEnv+"=worker", nameEnv+fmt.Sprintf("=w%d", k), urlsEnv+"="+c.nats.URLs(k), logEnv+"="+c.log))
}

// openStore opens the test's own view of the store, once the engines have
// made it.
func (c *testCluster) openStore() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.waitFor("the store", time.Minute, func() bool {
		cfg := storeConfig()
		t0 := time.Now()
		st, err := natsstore.Open(ctx, c.nc, cfg)
		if err != nil {
			c.t.Logf("open the store: %v (after %v)", err, time.Since(t0))
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
	return clustertest.WaitFor(c.t, what, limit, cond)
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
	var left []string // what the last look found unsettled, for a failure's message
	lastLog := time.Now()
	c.waitFor("every instance to finish with its outbox settled", limit, func() bool {
		var err error
		snaps, err = c.store.Instances(ctx)
		if err != nil || len(snaps) < len(c.started) {
			return false
		}
		left = left[:0]
		for _, s := range snaps {
			out, err := c.store.Outbox(ctx, s.ID)
			if err != nil {
				return false
			}
			if !s.Status.Finished() || len(out) > 0 {
				left = append(left, fmt.Sprintf("%s %s in %s at step %d (partition %d, updated %s), %d outbox items",
					s.ID, s.Status, s.State, s.Step, c.store.Partition(s.ID), s.Updated.Format("15:04:05.000"), len(out)))
			}
		}
		if len(left) > 0 && time.Since(lastLog) > 30*time.Second {
			lastLog = time.Now()
			c.t.Logf("%d instances not settled yet, leases %v: %v", len(left), c.leases(), left[:min(len(left), 5)])
		}
		return len(left) == 0
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

// TestCluster_Faults runs a workflow with a chain, a fan-out and a final
// notice on three engines sharing a three-server JetStream cluster (R3),
// every agent in worker processes, and breaks it three ways: an engine
// killed with SIGKILL, the steps stream's leader killed with SIGKILL, and a
// server cut off from the others by its proxies for longer than an
// election. After each fault, every instance completes with each step
// applied once, no acknowledged instance is lost, the outboxes settle and
// dead letters are kept once. BATON_CLUSTER_LONG=1 runs it with more
// instances and every fault held longer.
func TestCluster_Faults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of child processes for minutes")
	}
	perEngine, cut, limit := 10, 11*time.Second, 5*time.Minute
	if os.Getenv(longEnv) != "" {
		perEngine, cut, limit = 100, 25*time.Second, 10*time.Minute
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

	t.Run("StreamLeaderKilled", func(t *testing.T) {
		c.t = t
		stream := clusterPrefix + "_steps_0"
		lead, ok := clustertest.Leader(c.js, stream)
		if !ok {
			t.Fatalf("stream %s has no leader", stream)
		}
		k := c.nats.Index(lead)
		if k < 0 {
			t.Fatalf("leader %q is not a server of the test", lead)
		}
		c.startInstances(perEngine, names...)
		killed := time.Now()
		c.nats.Kill(k)
		took := c.waitFor("a new leader of "+stream, limit, func() bool {
			l, ok := clustertest.Leader(c.js, stream)
			return ok && l != lead
		})
		t.Logf("stream leader failover: %s has a new leader %v after its leader was killed", stream, took)
		c.nats.Restart(k)
		c.settle(limit)
		t.Logf("all settled %v after the kill", time.Since(killed))
	})

	t.Run("NodeCutOff", func(t *testing.T) {
		c.t = t
		// Cut off a server the test's own connection does not use.
		k := slices.IndexFunc(c.nats.Nodes, func(n *clustertest.Node) bool { return n.Name != c.nc.ConnectedServerName() })
		c.startInstances(perEngine, names...)
		before := c.leases()
		alone, err := nats.Connect(c.nats.Nodes[k].URL(), nats.Name("alone"))
		if err != nil {
			t.Fatal(err)
		}
		defer alone.Close()
		c.nats.Cut(k, true)
		begin := time.Now()
		ajs, err := jetstream.New(alone)
		if err != nil {
			t.Fatal(err)
		}
		c.waitFor("JetStream to stop answering on the cut-off server", limit, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := ajs.AccountInfo(ctx)
			return err != nil
		})
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
		t.Logf("cut-off: server %s cut off; the lease bucket took writes %v after the cut", c.nats.Nodes[k].Name, took)
		if rest := cut - time.Since(begin); rest > 0 {
			time.Sleep(rest) // hold the cut longer than an election
		}
		t.Logf("cut-off: partitions per engine before %v, at the end of the cut %v", before, c.leases())
		c.nats.Cut(k, false)
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
