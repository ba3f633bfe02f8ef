package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

// tripFlow is planned by a Go handler, run by the server that owns the
// instance, then waits for a person's approval.
const tripFlow = `workflow: trip
initial: PLANNING
agents:
  planner: {}
states:
  PLANNING: {agent: planner}
  APPROVAL: {wait: {signals: [approved]}, timeout: 48h}
  DONE: {terminal: true}
rules:
  - {id: planned, from: planner, trigger: planned, next: APPROVAL, context: {planned_by: result.by}}
  - {id: approved, from: APPROVAL, trigger: approved, next: DONE, context: {approved_by: result.by}}
`

// clusterServer is a server named name sharing the NATS server at url.
func clusterServer(t *testing.T, url, dir, name string) *fixture {
	t.Helper()
	planner := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "planned", Result: map[string]any{"by": name}}, nil
	})
	s, err := server.New(context.Background(), server.Config{
		WorkflowsDir: dir, DataDir: t.TempDir(), NATS: url, Name: name, LeaseTTL: time.Second,
		Handlers: map[string]registry.Handler{"planner": planner},
	})
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return &fixture{t: t, srv: s, http: hs}
}

// idOwnedBy is an id of a new trip that owner runs.
func idOwnedBy(t *testing.T, owner *fixture, prefix string) string {
	t.Helper()
	for k := range 1000 {
		if id := fmt.Sprintf("%s-%d", prefix, k); owner.srv.Owns(id) {
			return id
		}
	}
	t.Fatalf("no id of %d tried is owned by the server", 1000)
	return ""
}

func TestServer_Cluster_ServersShareTheInstances(t *testing.T) {
	ns, err := natsserver.Start(natsserver.Config{Dir: t.TempDir(), Listen: true, SyncInterval: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ns.Close()) })
	dir := workflowsDir(t, "", map[string]string{"trip.yaml": tripFlow, "echo.yaml": echoFlow})

	a := clusterServer(t, ns.URL(), dir, "a")
	clustertest.WaitFor(t, "a alone to own every partition", time.Minute, func() bool { return len(a.srv.Partitions()) == server.ClusterPartitions })
	b := clusterServer(t, ns.URL(), dir, "b")
	clustertest.WaitFor(t, "a and b to share the partitions", time.Minute, func() bool {
		na, nb := len(a.srv.Partitions()), len(b.srv.Partitions())
		return na > 0 && nb > 0 && na+nb == server.ClusterPartitions
	})

	// Trips started on a: each is planned by the server owning it.
	ofA, ofB := idOwnedBy(t, a, "trip-a"), idOwnedBy(t, b, "trip-b")
	events := openEvents(t, a, "?instance="+ofB, "")
	for id, owner := range map[string]string{ofA: "a", ofB: "b"} {
		code, body := a.do("POST", "/v1/workflows/trip/instances", map[string]any{"id": id})
		require.Equal(t, 201, code, "start %s: %v", id, body)
		got := a.waitStatus(id, "waiting")
		require.Equal(t, owner, got["context"].(map[string]any)["planned_by"], "who planned %s", id)
		code, body = b.do("POST", "/v1/workflows/trip/instances", map[string]any{"id": id})
		require.Equal(t, 200, code, "the same start again, on the other server: %v", body)
	}
	// A start without an id, on b, runs on b.
	code, body := b.do("POST", "/v1/workflows/trip/instances", map[string]any{})
	require.Equal(t, 201, code, "%v", body)
	free := body["id"].(string)
	require.True(t, b.srv.Owns(free))
	require.Equal(t, "b", b.waitStatus(free, "waiting")["context"].(map[string]any)["planned_by"])

	// A signal through a reaches b's instance, and a's event stream shows
	// b's events.
	code, body = a.do("POST", "/v1/instances/"+ofB+"/signals/approved", map[string]any{"data": map[string]any{"by": "ana"}})
	require.Equal(t, 202, code, "%v", body)
	evs := events.until(t, "completed")
	require.Equal(t, ofB, evs[len(evs)-1].Instance)
	require.Equal(t, "ana", a.waitStatus(ofB, "completed")["context"].(map[string]any)["approved_by"])
	// A signal it does not wait for is refused by the owner, whoever asks.
	code, body = b.do("POST", "/v1/instances/"+ofA+"/signals/rejected", nil)
	require.Equal(t, 409, code, "%v", body)
	require.Equal(t, "not_waiting", errorOf(t, body)["code"])
	// Cancelling through a reaches b's other instance.
	code, body = a.do("POST", "/v1/instances/"+free+"/cancel", nil)
	require.Equal(t, 202, code, "%v", body)
	b.waitStatus(free, "cancelled")

	// An agent's report sent over HTTP to a reaches the engine on b.
	echo := idOwnedBy(t, b, "echo")
	code, body = a.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": echo})
	require.Equal(t, 201, code, "%v", body)
	code, body = a.do("POST", "/v1/reports", map[string]any{"instance_id": echo, "step": 1, "agent": "worker", "trigger": "done"})
	require.Equal(t, 200, code, "%v", body)
	require.Equal(t, true, body["ok"], "%v", body)
	b.waitStatus(echo, "completed")

	// a stops: b takes its instances over at once and runs them on.
	a.srv.Close()
	clustertest.WaitFor(t, "b to own every partition", time.Minute, func() bool { return len(b.srv.Partitions()) == server.ClusterPartitions })
	code, body = b.do("POST", "/v1/instances/"+ofA+"/signals/approved", map[string]any{"data": map[string]any{"by": "bo"}})
	require.Equal(t, 202, code, "%v", body)
	got := b.waitStatus(ofA, "completed")
	require.Equal(t, "a", got["context"].(map[string]any)["planned_by"])
	require.Equal(t, "bo", got["context"].(map[string]any)["approved_by"])
}

func TestServer_Cluster_TakesOverAVersionItDoesNotHost(t *testing.T) {
	ns, err := natsserver.Start(natsserver.Config{Dir: t.TempDir(), Listen: true, SyncInterval: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ns.Close()) })
	// a has been given version 2 of the trip; b still hosts version 1.
	v2 := strings.Replace(tripFlow, "workflow: trip\n", "workflow: trip\nversion: 2\n", 1)
	v2 = strings.Replace(v2, "approved_by: result.by", "approved_by: result.by, version: 2", 1)
	a := clusterServer(t, ns.URL(), workflowsDir(t, "", map[string]string{"trip.yaml": v2}), "a")
	clustertest.WaitFor(t, "a to own every partition", time.Minute, func() bool { return len(a.srv.Partitions()) == server.ClusterPartitions })
	b := clusterServer(t, ns.URL(), workflowsDir(t, "", map[string]string{"trip.yaml": tripFlow}), "b")
	clustertest.WaitFor(t, "a and b to share the partitions", time.Minute, func() bool { return len(b.srv.Partitions()) > 0 })

	id := idOwnedBy(t, a, "trip-v2")
	code, body := a.do("POST", "/v1/workflows/trip/instances", map[string]any{"id": id})
	require.Equal(t, 201, code, "%v", body)
	require.EqualValues(t, 2, a.waitStatus(id, "waiting")["version"])

	// a stops: b builds version 2 from the source in the store and runs
	// the trip on to its end on version 2's rules.
	a.srv.Close()
	clustertest.WaitFor(t, "b to own every partition", time.Minute, func() bool { return len(b.srv.Partitions()) == server.ClusterPartitions })
	code, body = b.do("POST", "/v1/instances/"+id+"/signals/approved", map[string]any{"data": map[string]any{"by": "bo"}})
	require.Equal(t, 202, code, "%v", body)
	got := b.waitStatus(id, "completed")
	require.EqualValues(t, 2, got["context"].(map[string]any)["version"], "%v", got)
	code, body = b.do("GET", "/v1/workflows", nil)
	require.Equal(t, 200, code)
	require.Contains(t, fmt.Sprint(body), "version:2", "b lists the version it now runs: %v", body)
}
