package handoff_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testAgents is the refund cast plus the agents the validator's checks
// need: a supervisor and an error monitor (system agents), a selectable
// document-search agent and a non-selectable one.
func testAgents() []registry.Agent {
	return []registry.Agent{
		{ID: "customer", Type: "support"},
		{ID: "seller", Type: "merchant", Capabilities: []string{"approve_refund"}},
		{ID: "payment", Type: "finance", Capabilities: []string{"refund"}},
		{ID: "notification", Type: "messaging", Selectable: true},
		{ID: "rag", Type: "search", Capabilities: []string{"rag_search"}, Selectable: true},
		{ID: "supervisor", Type: "system", System: true},
		{ID: "error_monitor", Type: "system", System: true},
	}
}

func newRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	reg, err := registry.FromSpecs(testAgents())
	if err != nil {
		t.Fatalf("FromSpecs: %v", err)
	}
	return reg
}
