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

// idOwnedBy is an id of a new trip that owner runs. Partitions move while
// servers join, so an owner may hold none for a moment: it asks until one
// of the ids is owned.
func idOwnedBy(t *testing.T, owner *fixture, prefix string) string {
	t.Helper()
	var id string
	clustertest.WaitFor(t, "an id the server owns", time.Minute, func() bool {
		for k := range 1000 {
			if c := fmt.Sprintf("%s-%d", prefix, k); owner.srv.Owns(c) {
				id = c
				return true
			}
		}
		return false
	})
	return id
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
