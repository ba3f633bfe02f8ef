package server_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/internal/proctest"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

// orderFlow calls checkFlow as a child between two runs of its own.
const orderFlow = `workflow: order
initial: PREPARING
agents:
  preparer: {}
  shipper: {}
states:
  PREPARING: {agent: preparer}
  CHECK: {workflow: check, input: {amount: context.amount}}
  SHIPPING: {agent: shipper}
  SHIPPED: {terminal: true}
  REFUSED: {terminal: true}
rules:
  - {id: prepared, from: preparer, trigger: prepared, next: CHECK, context: {amount: result.amount, prepared_by: result.by}}
  - {id: checked, from: CHECK, trigger: APPROVED, next: SHIPPING, context: {checked_by: result.approved_by}}
  - {id: refused, from: CHECK, trigger: [DECLINED, error, timeout], next: REFUSED}
  - {id: shipped, from: shipper, trigger: shipped, next: SHIPPED}
`

// checkFlow is a check a person approves: it waits for a signal.
const checkFlow = `workflow: check
initial: SCORING
agents:
  scorer: {}
states:
  SCORING: {agent: scorer}
  APPROVAL: {wait: {signals: [approved, declined]}}
  APPROVED: {terminal: true}
  DECLINED: {terminal: true}
rules:
  - {id: scored, from: scorer, trigger: scored, next: APPROVAL, context: {score: result.score, scored_by: result.by}}
  - {id: approved, from: APPROVAL, trigger: approved, next: APPROVED, context: {approved_by: result.by}}
  - {id: declined, from: APPROVAL, trigger: declined, next: DECLINED}
`

// orderHandlers are the Go handlers of orderFlow and checkFlow.
func orderHandlers(by string) map[string]registry.Handler {
	return map[string]registry.Handler{
		"preparer": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "prepared", Result: map[string]any{"amount": 40, "by": by}}, nil
		}),
		"scorer": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "scored", Result: map[string]any{"score": t.Input["amount"], "by": by}}, nil
		}),
		"shipper": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "shipped", Result: map[string]any{"by": by}}, nil
		}),
	}
}

// A workflow state runs its child on the server's own engine of the
// child's workflow: the child is an instance of its own, signalled like
// any, and its end is the parent's outcome.
func TestServer_SubWorkflow_OneServer(t *testing.T) {
	dir := workflowsDir(t, "", map[string]string{"order.yaml": orderFlow, "check.yaml": checkFlow})
	f := newFixture(t, func(c *server.Config) {
		c.WorkflowsDir = dir
		c.WatchEvery = -1
		c.Handlers = orderHandlers("one")
	})
	code, body := f.do("POST", "/v1/workflows/order/instances", map[string]any{"id": "o-1"})
	require.Equal(t, 201, code, "%v", body)
	child := "o-1/CHECK/1"
	f.waitExists(url.PathEscape(child))
	got := f.waitStatus(url.PathEscape(child), "waiting")
	assert.Equal(t, "check", got["workflow"])
	assert.EqualValues(t, 40, got["context"].(map[string]any)["score"])
	assert.Equal(t, "running", f.waitStatus("o-1", "running")["status"])

	code, body = f.do("POST", "/v1/instances/"+url.PathEscape(child)+"/signals/approved", map[string]any{"data": map[string]any{"by": "ana"}})
	require.Equal(t, 202, code, "%v", body)
	got = f.waitStatus("o-1", "completed")
	assert.Equal(t, "SHIPPED", got["outcome"])
	assert.Equal(t, "ana", got["context"].(map[string]any)["checked_by"])
	assert.Equal(t, "APPROVED", f.waitStatus(url.PathEscape(child), "completed")["outcome"])

	// A new version of the child's workflow: new children start on it,
	// with no restart.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "check.yaml"), []byte(strings.Replace(checkFlow, "workflow: check\n", "workflow: check\nversion: 2\n", 1)), 0o600))
	require.NoError(t, f.srv.Reload(context.Background()))
	code, body = f.do("POST", "/v1/workflows/order/instances", map[string]any{"id": "o-2"})
	require.Equal(t, 201, code, "%v", body)
	f.waitExists(url.PathEscape("o-2/CHECK/1"))
	assert.EqualValues(t, 2, f.waitStatus(url.PathEscape("o-2/CHECK/1"), "waiting")["version"])

	// A version of the child its caller cannot take (the caller's rules
	// name APPROVED) is refused: the version before it stays current.
	v3 := strings.ReplaceAll(strings.Replace(checkFlow, "workflow: check\n", "workflow: check\nversion: 3\n", 1), "APPROVED", "ACCEPTED")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "check.yaml"), []byte(v3), 0o600))
	err := f.srv.Reload(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "check.yaml: workflow check no longer fits its caller order")
	assert.Contains(t, err.Error(), `never ends in "APPROVED"`)
	code, body = f.do("GET", "/v1/workflows/check", nil)
	require.Equal(t, 200, code)
	assert.EqualValues(t, 2, body["version"], "the current version of check")

	// The child's workflow is hosted on its own too.
	code, body = f.do("POST", "/v1/workflows/check/instances", map[string]any{"id": "c-1", "input": map[string]any{"amount": 5}})
	require.Equal(t, 201, code, "%v", body)
	f.waitStatus("c-1", "waiting")
	code, body = f.do("POST", "/v1/instances/c-1/signals/declined", nil)
	require.Equal(t, 202, code, "%v", body)
	assert.Equal(t, "DECLINED", f.waitStatus("c-1", "completed")["outcome"])
}

// waitExists polls until the instance exists (bounded).
func (f *fixture) waitExists(id string) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _ := f.do("GET", "/v1/instances/"+id, nil); code == 200 {
			return
		}
		require.True(f.t, time.Now().Before(deadline), "instance %s never appeared", id)
		time.Sleep(2 * time.Millisecond)
	}
}

// orderChildEnv makes the test binary runOrderServer.
const orderChildEnv = "BATON_TEST_ORDER_SERVER"

// runOrderServer is server "a" of a cluster in its own process, spec
// being "DIR|NATS-URL": it hosts DIR/workflows, and its scorer writes the
// idempotency key it was given to DIR/scoring and never answers, so that
// the process can be killed in the middle of a child's run.
func runOrderServer(spec string) int {
	dir, natsURL, _ := strings.Cut(spec, "|")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hs := orderHandlers("a")
	hs["scorer"] = registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
		_ = os.WriteFile(filepath.Join(dir, "scoring"), []byte(t.IdempotencyKey), 0o600)
		<-ctx.Done()
		return registry.Outcome{}, ctx.Err()
	})
	err := server.Run(ctx, server.Config{
		WorkflowsDir: filepath.Join(dir, "workflows"), DataDir: filepath.Join(dir, "data"),
		NATS: natsURL, Name: "a", LeaseTTL: time.Second, HTTPAddr: "127.0.0.1:0",
		OnListen: func(a net.Addr) { fmt.Println("listening", a) },
		Handlers: hs,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A parent and its child on two servers sharing a NATS server: the server
// running them is killed (SIGKILL) while the child's agent runs; the other
// takes both over, runs the child's step again with the same key, and the
// parent ends on the child's outcome, each step applied once.
func TestServer_SubWorkflow_ServerKilledMidChild(t *testing.T) {
	ns, err := natsserver.Start(natsserver.Config{Dir: t.TempDir(), Listen: true, SyncInterval: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ns.Close()) })
	dir := t.TempDir()
	flows := workflowsDir(t, "", map[string]string{"order.yaml": orderFlow, "check.yaml": checkFlow})
	require.NoError(t, os.Rename(flows, filepath.Join(dir, "workflows")))
	flows = filepath.Join(dir, "workflows")

	var keys sync.Map // the idempotency keys b's scorer saw
	hs := orderHandlers("b")
	score := hs["scorer"]
	hs["scorer"] = registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
		keys.Store(t.IdempotencyKey, true)
		return score.Handle(ctx, t)
	})
	s, err := server.New(context.Background(), server.Config{
		WorkflowsDir: flows, DataDir: t.TempDir(), NATS: ns.URL(), Name: "b", LeaseTTL: time.Second, Handlers: hs,
	})
	require.NoError(t, err)
	b := &fixture{t: t, srv: s, http: httptest.NewServer(s.Handler())}
	t.Cleanup(func() {
		s.Close()
		b.http.Close()
	})
	clustertest.WaitFor(t, "b alone to own every partition", time.Minute, func() bool { return len(s.Partitions()) == server.ClusterPartitions })

	a := proctest.Start(t, []string{orderChildEnv + "=" + dir + "|" + ns.URL()}, "listening", os.Args[0], "-test.run=^$")
	clustertest.WaitFor(t, "a and b to share the partitions", time.Minute, func() bool {
		return len(s.Partitions()) == server.ClusterPartitions/2
	})
	// An order a runs: its id is in a partition b does not hold, and a's
	// scorer took its child's step (a partition may still move as the two
	// servers settle: then the order is b's, and another is tried).
	id, child := "", ""
	for k := 0; id == "" && k < 1000; k++ {
		cand := fmt.Sprintf("order-%d", k)
		if s.Owns(cand) {
			continue
		}
		code, body := b.do("POST", "/v1/workflows/order/instances", map[string]any{"id": cand})
		require.Equal(t, 201, code, "%v", body)
		kid := cand + "/CHECK/1"
		deadline := time.Now().Add(time.Minute)
		for id == "" {
			if key, err := os.ReadFile(filepath.Join(dir, "scoring")); err == nil && string(key) == kid+":1" {
				id, child = cand, kid
				break
			}
			if code, body := b.do("GET", "/v1/instances/"+url.PathEscape(kid), nil); code == 200 && body["status"] == "waiting" {
				break // b ran it
			}
			require.True(t, time.Now().Before(deadline), "the child of %s was never scored", cand)
			time.Sleep(2 * time.Millisecond)
		}
	}
	require.NotEmpty(t, id, "no order ran on a")
	require.NoError(t, a.Process.Kill())

	// b takes the partitions over, runs the child's step again with the
	// key a's scorer saw, and the child waits for its approval.
	clustertest.WaitFor(t, "b to own every partition", time.Minute, func() bool { return len(s.Partitions()) == server.ClusterPartitions })
	b.waitExists(url.PathEscape(child))
	got := b.waitStatus(url.PathEscape(child), "waiting")
	assert.Equal(t, "b", got["context"].(map[string]any)["scored_by"])
	_, saw := keys.Load(child + ":1")
	assert.True(t, saw, "b's scorer ran the child's step with the key a's saw")
	code, body := b.do("POST", "/v1/instances/"+url.PathEscape(child)+"/signals/approved", map[string]any{"data": map[string]any{"by": "ana"}})
	require.Equal(t, 202, code, "%v", body)
	got = b.waitStatus(id, "completed")
	assert.Equal(t, "SHIPPED", got["outcome"])
	assert.Equal(t, "ana", got["context"].(map[string]any)["checked_by"])

	for inst, want := range map[string]string{id: "prepared,checked,shipped", child: "scored,approved"} {
		applied := map[float64]int{}
		var fired []string
		resumed := 0
		for _, e := range b.history(url.PathEscape(inst)) {
			switch e["kind"] {
			case "agent_run":
				if e["error"] == nil || e["error"] == "" {
					applied[e["step"].(float64)]++
				}
			case "rule_fired":
				fired = append(fired, e["rule"].(string))
			case "resumed":
				resumed++
			}
		}
		for step, n := range applied {
			assert.Equal(t, 1, n, "instance %s: step %v applied %d times", inst, step, n)
		}
		assert.Equal(t, want, strings.Join(fired, ","), "instance %s: the rules fired", inst)
		if inst == child {
			assert.Equal(t, 1, resumed, "the child's run was resumed once, on b")
		}
	}
}

// A server stopped while a child waits, and started again on its data:
// the parent waits for its child again, and ends on the child's outcome.
func TestServer_SubWorkflow_RestartMidChild(t *testing.T) {
	dir := workflowsDir(t, "", map[string]string{"order.yaml": orderFlow, "check.yaml": checkFlow})
	data := t.TempDir()
	open := func() *fixture {
		s, err := server.New(context.Background(), server.Config{
			WorkflowsDir: dir, DataDir: data, NATSListen: anyPort, WatchEvery: -1, Handlers: orderHandlers("one"),
		})
		require.NoError(t, err)
		return &fixture{t: t, srv: s, http: newHTTP(t, s)}
	}
	f := open()
	code, body := f.do("POST", "/v1/workflows/order/instances", map[string]any{"id": "o-1"})
	require.Equal(t, 201, code, "%v", body)
	child := url.PathEscape("o-1/CHECK/1")
	f.waitExists(child)
	f.waitStatus(child, "waiting")
	f.srv.Close()

	f = open()
	defer f.srv.Close()
	code, body = f.do("POST", "/v1/instances/"+child+"/signals/approved", map[string]any{"data": map[string]any{"by": "bo"}})
	require.Equal(t, 202, code, "%v", body)
	got := f.waitStatus("o-1", "completed")
	assert.Equal(t, "SHIPPED", got["outcome"])
	assert.Equal(t, "bo", got["context"].(map[string]any)["checked_by"])
}
