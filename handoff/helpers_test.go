package handoff_test

import (
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testAgents is the refund cast of RF-009 plus the agents PRD-040's checks
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

// env is a registry, a real bus with a mailbox per agent and a manager
// logging to an observer.
type env struct {
	reg  *registry.Registry
	bus  *bus.Bus
	mgr  *handoff.Manager
	logs *observer.ObservedLogs
}

func newEnv(t testing.TB, opts ...handoff.Option) *env {
	t.Helper()
	return newEnvWith(t, testAgents(), opts...)
}

// newEnvWith is newEnv with another cast of agents.
func newEnvWith(t testing.TB, agents []registry.Agent, opts ...handoff.Option) *env {
	t.Helper()
	reg, err := registry.FromSpecs(agents)
	if err != nil {
		t.Fatalf("FromSpecs: %v", err)
	}
	b := bus.New()
	for _, a := range reg.All() {
		if err := b.Register(a.ID, bus.WithAgentType(a.Type)); err != nil {
			t.Fatalf("Register(%s): %v", a.ID, err)
		}
	}
	core, logs := observer.New(zapcore.DebugLevel)
	opts = append([]handoff.Option{handoff.WithLogger(zap.New(core))}, opts...)
	mgr, err := handoff.NewManager(reg, b, opts...)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() {
		_ = mgr.Close()
		_ = b.Close()
	})
	return &env{reg: reg, bus: b, mgr: mgr, logs: logs}
}

// take returns the one message waiting for agent, failing if there is none.
func (e *env) take(t testing.TB, agent string) *bus.Message {
	t.Helper()
	m, ok, err := e.bus.TryReceive(agent)
	if err != nil || !ok {
		t.Fatalf("TryReceive(%s) = %v, %v, want a message", agent, ok, err)
	}
	return m
}

// takeHandoff returns the hand-off waiting for agent, unpacked.
func (e *env) takeHandoff(t testing.TB, agent string) handoff.Delivery {
	t.Helper()
	d, err := handoff.Unpack(e.take(t, agent))
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	return d
}

// empty fails if agent has a message waiting.
func (e *env) empty(t testing.TB, agent string) {
	t.Helper()
	if m, ok, _ := e.bus.TryReceive(agent); ok {
		t.Fatalf("%s has an unexpected message: %s %v", agent, m.Type, m.Content)
	}
}

func mustCommand(t testing.TB, from, to string, reason handoff.Reason, opts ...handoff.CommandOption) handoff.Command {
	t.Helper()
	cmd, err := handoff.NewCommand(from, to, reason, "test hand-off", opts...)
	if err != nil {
		t.Fatalf("NewCommand: %v", err)
	}
	return cmd
}

func fieldString(key, value string) zapcore.Field { return zap.String(key, value) }
