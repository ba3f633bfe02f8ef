// The refund and travel examples with their agents in processes of their
// own: the server built from cmd/wfrun, on its embedded NATS server and on
// a 3-node JetStream cluster, and the agent programs of
// examples/refund/agents and examples/travel/agents, as their READMEs run
// them.
package processes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/internal/proctest"
)

// root is the repository's root, where the READMEs' commands run.
const root = "../.."

func TestProcesses_EmbeddedNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the examples' programs")
	}
	bin := build(t)
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			addrs := proctest.FreeAddrs(t, 2)
			httpAddr, natsAddr := addrs[0], addrs[1]
			env := []string{"NATS_URL=nats://" + natsAddr, "BATON_SERVER=http://" + httpAddr}
			proctest.Start(t, env, "wfrun: serving the HTTP API", filepath.Join(bin, "wfrun"), "serve",
				"--workflows", filepath.Join("..", ex.name), "--data", t.TempDir(), "--http", httpAddr, "--nats-listen", natsAddr)
			startAgents(t, bin, env, ex)
			runInstances(t, bin, env, ex)
		})
	}
}

func TestProcesses_Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node NATS cluster and the examples' programs")
	}
	bin := build(t)
	c := clustertest.Start(t, 3)
	// One example after the other on the same cluster: the two workflows
	// share an agent id (payment), and so would share its mailbox.
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			httpAddr := proctest.FreeAddr(t)
			proctest.Start(t, []string{"BATON_SERVER=http://" + httpAddr}, "wfrun: serving the HTTP API", filepath.Join(bin, "wfrun"), "serve",
				"--workflows", filepath.Join("..", ex.name), "--data", t.TempDir(), "--http", httpAddr, "--nats", c.URLs(0), "--replicas", "3")
			// The agents run twice over, each process connected to another
			// server of the cluster first.
			for k := 1; k <= 2; k++ {
				startAgents(t, bin, []string{"NATS_URL=" + c.URLs(k)}, ex, "-replicas", "3")
			}
			runInstances(t, bin, []string{"BATON_SERVER=http://" + httpAddr}, ex)
		})
	}

	// The instances of both are in the store on the cluster, for wfrun
	// inspect as for the server.
	out, code := proctest.Output(t, nil, filepath.Join(bin, "wfrun"), "inspect", "--nats", c.URLs(2), "--limit", "0")
	if code != 0 {
		t.Fatalf("wfrun inspect --nats: exit %d\n%s", code, out)
	}
	for _, ex := range examples {
		for _, in := range ex.instances {
			if !strings.Contains(out, in.id) || !strings.Contains(out, in.outcome) {
				t.Errorf("wfrun inspect --nats does not list %s in %s:\n%s", in.id, in.outcome, out)
			}
		}
	}

	// Every stream Baton made keeps three copies.
	nc := c.Connect(t, 0, "check")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := js.StreamNames(ctx)
	n := 0
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Errorf("stream %s has %d replicas, want 3", name, r)
		}
		n++
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	// The store's streams, and a mailbox for each of the 9 agents.
	if n < 9+3 {
		t.Errorf("the cluster has %d streams, want the store's and a mailbox per agent", n)
	}
}

// example is one example's programs and the instances it runs.
type example struct {
	name string
	// agents are the -agents flags of the agent processes to start.
	agents    []string
	instances []want
}

// want is an instance to start and how it must end.
type want struct {
	id, input string
	outcome   string
	steps     int
	context   map[string]any
}

var examples = []example{
	{
		name:   "refund",
		agents: []string{"customer,seller", "payment,notification,supervisor"},
		instances: []want{
			{"order-12345", `{"order_id":"12345","amount":50}`, "COMPLETED", 4, map[string]any{"transaction_id": "tx-12345", "approved_by": "seller"}},
			{"order-23456", `{"order_id":"23456","amount":350}`, "REJECTED", 2, map[string]any{"rejection_reason": "rejected by seller"}},
			{"order-34567", `{"order_id":"34567","amount":900}`, "REJECTED", 1, map[string]any{"rejection_reason": "not eligible"}},
		},
	},
	{
		name: "travel",
		// A trip's steps: the planner, the three searches, then payment
		// or the planner again.
		agents: []string{"planner,payment", "flight,hotel,car"},
		instances: []want{
			{"trip-budget", `{"from":"MAD","to":"NYC","budget":1500}`, "BOOKED", 5, map[string]any{"package": "budget", "searched": 3}},
			{"trip-premium", `{"from":"MAD","to":"NYC","budget":3000}`, "BOOKED", 5, map[string]any{"package": "premium", "searched": 3}},
			{"trip-atlantis", `{"from":"MAD","to":"ATLANTIS","budget":3000}`, "CANCELLED", 5, map[string]any{"destination": "ATLANTIS"}},
		},
	},
}

// build builds wfrun and the two agent programs.
func build(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	proctest.Run(t, root, nil, "go", "build", "-o", bin, "./cmd/wfrun")
	// Both agent programs are called agents: each is built under its name.
	proctest.Run(t, root, nil, "go", "build", "-o", filepath.Join(bin, "refund-agents"), "./examples/refund/agents")
	proctest.Run(t, root, nil, "go", "build", "-o", filepath.Join(bin, "travel-agents"), "./examples/travel/agents")
	return bin
}

// startAgents starts the example's agents, in as many processes as it
// lists, each with flags added.
func startAgents(t *testing.T, bin string, env []string, ex example, flags ...string) {
	t.Helper()
	prog := ex.name + "-agents"
	for _, agents := range ex.agents {
		proctest.Start(t, env, prog+": taking work", filepath.Join(bin, prog), append([]string{"-agents", agents}, flags...)...)
	}
}

// runInstances starts the example's instances on the server, one after
// the other, and checks how each ended.
func runInstances(t *testing.T, bin string, env []string, ex example) {
	t.Helper()
	for _, c := range ex.instances {
		out, code := proctest.Output(t, env, filepath.Join(bin, "wfrun"), "start", ex.name, "--id", c.id, "--input", c.input, "--wait", "-o", "json")
		if code != 0 {
			t.Fatalf("start %s %s: exit %d\n%s", ex.name, c.id, code, out)
		}
		var got proctest.Instance
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("start %s: %v\n%s", c.id, err, out)
		}
		if got.Outcome != c.outcome || got.Step != c.steps {
			t.Errorf("%s ended %s after %d steps, want %s after %d\n%s", c.id, got.Outcome, got.Step, c.outcome, c.steps, out)
		}
		for k, want := range c.context {
			if fmt.Sprint(got.Context[k]) != fmt.Sprint(want) {
				t.Errorf("%s: context %s = %v, want %v", c.id, k, got.Context[k], want)
			}
		}
	}
}

func TestProcesses_ClusterServerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node NATS cluster, two servers and the example's agents")
	}
	bin := build(t)
	c := clustertest.Start(t, 3)
	serve := func(name string, k int) (*exec.Cmd, []string) {
		httpAddr := proctest.FreeAddr(t)
		cmd := proctest.Start(t, nil, "wfrun: serving the HTTP API", filepath.Join(bin, "wfrun"), "serve",
			"--workflows", filepath.Join("..", "refund"), "--data", t.TempDir(), "--http", httpAddr,
			"--nats", c.URLs(k), "--replicas", "3", "--name", name, "--lease-ttl", "2s")
		return cmd, []string{"BATON_SERVER=http://" + httpAddr}
	}
	a, onA := serve("a", 0)
	_, onB := serve("b", 1)
	agents := []string{"NATS_URL=" + c.URLs(2)}
	prog := filepath.Join(bin, "refund-agents")
	proctest.Start(t, agents, "refund-agents: taking work", prog, "-agents", "customer,seller,notification,supervisor", "-replicas", "3")
	// Payment is down while the refunds are started: they wait in
	// REFUNDING, half of them on each server.
	payment := proctest.Start(t, agents, "refund-agents: taking work", prog, "-agents", "payment", "-replicas", "3")
	_ = payment.Process.Kill()
	const n = 12
	for k := range n {
		id := fmt.Sprintf("order-%d", k)
		// While b joins, partitions move: a start the server cannot place
		// yet answers 503, and a start is idempotent by id, so it is sent
		// again (a bounded number of times).
		var (
			out  string
			code int
		)
		for try := 0; try < 10; try++ {
			out, code = proctest.Output(t, onA, filepath.Join(bin, "wfrun"), "start", "refund", "--id", id, "--input", fmt.Sprintf(`{"order_id":"%d","amount":50}`, k))
			if code == 0 || !strings.Contains(out, "503 unavailable") {
				break
			}
		}
		if code != 0 {
			t.Fatalf("start %s: exit %d\n%s", id, code, out)
		}
	}
	for k := range n {
		waitState(t, bin, onB, fmt.Sprintf("order-%d", k), "REFUNDING")
	}

	// Server a dies; b takes its refunds over, and they all complete once
	// payment is back.
	_ = a.Process.Kill()
	proctest.Start(t, agents, "refund-agents: taking work", prog, "-agents", "payment", "-replicas", "3")
	for k := range n {
		id := fmt.Sprintf("order-%d", k)
		out, code := proctest.Output(t, onB, filepath.Join(bin, "wfrun"), "watch", id)
		if code != 0 {
			t.Fatalf("watch %s: exit %d\n%s", id, code, out)
		}
		got := proctest.GetInstance(t, onB, filepath.Join(bin, "wfrun"), id)
		if got.Outcome != "COMPLETED" || fmt.Sprint(got.Context["transaction_id"]) != fmt.Sprintf("tx-%d", k) {
			t.Errorf("%s ended %s with context %v, want COMPLETED and its transaction", id, got.Outcome, got.Context)
		}
	}
}

// waitState polls the instance until it is in state (for at most a
// minute: the bound only stops a broken test).
func waitState(t *testing.T, bin string, env []string, id, state string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		in := proctest.GetInstance(t, env, filepath.Join(bin, "wfrun"), id)
		if in.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s in %s, want it in %s", id, in.Status, in.State, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
