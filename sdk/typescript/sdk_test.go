// Package typescript_test runs the TypeScript SDK's node tests against a
// real engine: an embedded NATS JetStream server on a random loopback port,
// an engine on the natsbus transport answering reports over NATS, and a
// small control service on NATS through which the node tests start
// instances and read their results, history and dead letters. The node
// tests are the agents; this test then checks that every instance they
// started ended as they said it would, and that the transport's counts add
// up.
package typescript_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
)

// URLEnv names the environment variable that gives the node tests the NATS
// server's URL; without it they run only the tests that need no server.
const URLEnv = "BATON_NATS_URL"

// ackWait is the engine's ack wait: short, so that the heartbeat test
// proves in-progress acks keep a long run's work and the crash test sees a
// redelivery soon.
const ackWait = 500 * time.Millisecond

func TestNodeSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript SDK's tests need it")
	}
	ensureModules(t)
	ns := startServer(t)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	h := newHarness(t, nc)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec")
	cmd.Env = append(os.Environ(), URLEnv+"="+ns.ClientURL())
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("node --test: %v", err)
	}
	h.checkOutcomes(t)
}

// The package is JavaScript with hand-written declarations (index.d.ts):
// tsc checks the sources and the examples against them and compiles an
// agent written in TypeScript (tests/types.ts) against them.
func TestTypeDeclarations(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package's declarations with tsc")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript SDK's tests need it")
	}
	ensureModules(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json").CombinedOutput()
	if err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
}

// ensureModules installs the SDK's npm dependencies from the lock file when
// they are missing (CI runs npm ci before the Go tests; this covers a fresh
// checkout).
func ensureModules(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("node_modules/nats/package.json"); err == nil {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("node_modules is missing and npm is not installed: run npm ci in sdk/typescript")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund").CombinedOutput()
	if err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
}

// startServer starts an in-process JetStream server on a random loopback
// port.
func startServer(t *testing.T) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// harness is the engine the node tests' agents work for, and the control
// service they drive it through.
type harness struct {
	eng   *engine.Engine
	tr    *natsbus.Transport
	spans *tracetest.InMemoryExporter // the engine's spans

	mu      sync.Mutex
	started []started
	dead    []deadLetter
}

type started struct {
	inst   *engine.Instance
	expect string
}

// deadLetter is a dead letter as the control service gives it to the node
// tests.
type deadLetter struct {
	Agent     string             `json:"agent"`
	Reason    string             `json:"reason"`
	LastError string             `json:"last_error"`
	Attempts  int                `json:"attempts"`
	Message   *transport.Message `json:"message"`
}

func newHarness(t *testing.T, nc *nats.Conn) *harness {
	t.Helper()
	w, err := rules.Load("testdata/sdk.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The router sends each instance to the scenario its input names.
	router := registry.HandlerFunc(func(_ context.Context, task *registry.Task) (registry.Outcome, error) {
		scenario, _ := task.Input["scenario"].(string)
		return registry.Outcome{Trigger: scenario}, nil
	})
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"router": router})
	if err != nil {
		t.Fatal(err)
	}
	cfg := natsbus.DefaultConfig()
	cfg.Storage = jetstream.MemoryStorage
	cfg.AckWait = ackWait
	tr, err := natsbus.New(t.Context(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	eng, err := engine.New(w, reg, engine.WithTransport(tr), engine.WithTracerProvider(tp))
	if err != nil {
		_ = tr.Close()
		t.Fatal(err)
	}
	h := &harness{eng: eng, tr: tr, spans: spans}
	cancelDead := tr.OnDeadLetter(func(dl transport.DeadLetter) {
		h.mu.Lock()
		h.dead = append(h.dead, deadLetter{Agent: dl.Message.To, Reason: string(dl.Reason), LastError: dl.LastError, Attempts: dl.Attempts, Message: dl.Message})
		h.mu.Unlock()
	})
	stopReports, err := natsbus.ServeReports(context.Background(), nc, eng.HandleReport)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.Subscribe("sdktest.*", func(m *nats.Msg) { go h.control(m) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sub.Unsubscribe()
		_ = stopReports()
		cancelDead()
		_ = eng.Close()
		_ = tr.Close()
		_ = tp.Shutdown(context.Background())
	})
	return h
}

// control answers one request of the node tests:
//
//	sdktest.start   {input, expect}   -> {id}
//	sdktest.wait    {id}              -> {status, state, outcome, steps, context, usage, error}
//	sdktest.history {id}              -> {history: [entries]}
//	sdktest.progress {id}             -> {progress: [{step, agent, progress}]}
//	sdktest.dead    {}                -> {dead: [dead letters]}
//	sdktest.spans   {id}              -> {trace_id, runs: {step: span_id}}
func (h *harness) control(m *nats.Msg) {
	var req struct {
		ID     string         `json:"id"`
		Input  map[string]any `json:"input"`
		Expect string         `json:"expect"`
	}
	reply := func(v any) {
		data, _ := json.Marshal(v)
		_ = m.Respond(data)
	}
	fail := func(err error) { reply(map[string]string{"error": err.Error()}) }
	if err := json.Unmarshal(m.Data, &req); err != nil {
		fail(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch m.Subject {
	case "sdktest.start":
		inst, err := h.eng.Start(ctx, req.Input)
		if err != nil {
			fail(err)
			return
		}
		h.mu.Lock()
		h.started = append(h.started, started{inst: inst, expect: req.Expect})
		h.mu.Unlock()
		reply(map[string]string{"id": inst.ID()})
	case "sdktest.wait":
		inst, err := h.eng.Instance(req.ID)
		if err != nil {
			fail(err)
			return
		}
		res, err := inst.Wait(ctx)
		if err != nil {
			fail(err)
			return
		}
		errText := ""
		if res.Err != nil {
			errText = res.Err.Error()
		}
		reply(map[string]any{"status": string(res.Status), "state": res.State, "outcome": res.Outcome,
			"steps": res.Steps, "context": res.Context, "usage": res.Usage, "error": errText})
	case "sdktest.history":
		inst, err := h.eng.Instance(req.ID)
		if err != nil {
			fail(err)
			return
		}
		hist, err := inst.History(ctx)
		if err != nil {
			fail(err)
			return
		}
		reply(map[string]any{"history": hist})
	case "sdktest.progress":
		inst, err := h.eng.Instance(req.ID)
		if err != nil {
			fail(err)
			return
		}
		type runProgress struct {
			Step     int               `json:"step"`
			Agent    string            `json:"agent"`
			Progress registry.Progress `json:"progress"`
		}
		out := []runProgress{}
		for _, p := range inst.Progress() {
			out = append(out, runProgress{Step: p.Step, Agent: p.Agent, Progress: p.Progress})
		}
		reply(map[string]any{"progress": out})
	case "sdktest.dead":
		h.mu.Lock()
		dead := append([]deadLetter{}, h.dead...)
		h.mu.Unlock()
		reply(map[string]any{"dead": dead})
	case "sdktest.spans":
		reply(h.spansOf(req.ID))
	default:
		fail(errors.New("unknown control subject " + m.Subject))
	}
}

// spansOf is the trace of instance id as the engine exported it: the
// trace id, and the span id of each run by step, in hex.
func (h *harness) spansOf(id string) map[string]any {
	runs := map[string]string{}
	out := map[string]any{"runs": runs}
	for _, s := range h.spans.GetSpans() {
		var conv string
		var step int64
		for _, kv := range s.Attributes {
			switch kv.Key {
			case "gen_ai.conversation.id":
				conv = kv.Value.AsString()
			case "baton.step":
				step = kv.Value.AsInt64()
			}
		}
		switch {
		case conv != id:
		case strings.HasPrefix(s.Name, "invoke_workflow "):
			out["trace_id"] = s.SpanContext.TraceID().String()
		case strings.HasPrefix(s.Name, "invoke_agent "):
			runs[strconv.FormatInt(step, 10)] = s.SpanContext.SpanID().String()
		}
	}
	return out
}

// checkOutcomes checks that every instance the node tests started ended in
// the state they expected, and that the transport's counts add up once the
// last acks are in.
func (h *harness) checkOutcomes(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	all := append([]started{}, h.started...)
	h.mu.Unlock()
	if len(all) == 0 {
		t.Fatal("the node tests started no instance")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, s := range all {
		res, err := s.inst.Wait(ctx)
		if err != nil {
			t.Errorf("instance %s: %v (status %s in %s)", s.inst.ID(), err, res.Status, res.State)
			continue
		}
		if s.expect != "" && res.Outcome != s.expect {
			t.Errorf("instance %s: got %s %s (%v), want %s", s.inst.ID(), res.Status, res.Outcome, res.Err, s.expect)
		}
	}
	var snap transport.Snapshot
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap = h.tr.Metrics()
		if snap.InFlight == 0 && snap.Queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for the last acks: %d in flight, %d queued", snap.InFlight, snap.Queued)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if sum := snap.Delivered + snap.DeadLettered + uint64(snap.Queued) + uint64(snap.InFlight); sum != snap.Accepted {
		t.Errorf("got accepted %d, delivered %d + dead %d + queued %d + in flight %d = %d, want them equal",
			snap.Accepted, snap.Delivered, snap.DeadLettered, snap.Queued, snap.InFlight, sum)
	}
	t.Logf("%d instances checked; transport: accepted %d, delivered %d, dead-lettered %d", len(all), snap.Accepted, snap.Delivered, snap.DeadLettered)
}
