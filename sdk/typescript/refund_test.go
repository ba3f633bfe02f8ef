package typescript_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/transport"
)

// refundAgents is the node program that serves the refund example's five
// agents.
const refundAgents = "examples/refund-agents.mjs"

// refundCase is a refund request and how the refund workflow must end it
// with the agents of examples/refund/main.go.
type refundCase struct {
	amount   int
	eligible bool     // whether the customer agent accepts it
	outcome  string   // the terminal state
	rules    []string // the rule fired at each step, in order
	path     []string // the states entered after the initial one
	reason   string   // the context's rejection_reason; "" when approved
}

// The three ways a refund ends, at the edges of the agents' limits: the
// customer accepts amounts under 500, the seller approves up to 200.
var (
	approved   = refundCase{eligible: true, outcome: "COMPLETED", rules: []string{"eligible", "approved", "refunded", "notified"}, path: []string{"REVIEWING", "REFUNDING", "NOTIFYING", "COMPLETED"}}
	declined   = refundCase{eligible: true, outcome: "REJECTED", rules: []string{"eligible", "declined"}, path: []string{"REVIEWING", "REJECTED"}, reason: "rejected by seller"}
	ineligible = refundCase{outcome: "REJECTED", rules: []string{"ineligible"}, path: []string{"REJECTED"}, reason: "not eligible"}
)

// refundCases are the requests the test sends, each several times.
func refundCases() []refundCase {
	at := func(c refundCase, amount int) refundCase { c.amount = amount; return c }
	return []refundCase{
		at(approved, 1), at(approved, 50), at(approved, 200),
		at(declined, 201), at(declined, 350), at(declined, 499),
		at(ineligible, 500), at(ineligible, 900),
	}
}

// agentsOf are the agents whose runs make each step of a refund: the
// customer, then the seller, payment and notification in turn.
var agentsOf = []string{"customer", "seller", "payment", "notification"}

// TestNodeAgents_RefundEndToEnd runs examples/refund/workflow.yaml on an
// engine with no agent of its own: every run is taken over NATS by the
// node program examples/refund-agents.mjs in a child process, written with
// the SDK's Worker on the npm nats client. Every request must end as the
// workflow and the agents' logic say, step by step, with no dead letter,
// and the program must drain and exit 0 on SIGTERM.
func TestNodeAgents_RefundEndToEnd(t *testing.T) {
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
	re := newRefundEngine(t, nc)
	child := startNode(t, node, refundAgents, ns.ClientURL())
	child.waitForLine(t, "ready")

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	type run struct {
		inst  *engine.Instance
		order string
		want  refundCase
	}
	var runs []run
	for round := range 3 {
		for i, c := range refundCases() {
			order := fmt.Sprintf("o%d-%d", round, i)
			inst, err := re.eng.Start(ctx, map[string]any{"order_id": order, "amount": c.amount, "reason": "test"})
			if err != nil {
				t.Fatalf("start order %s: %v", order, err)
			}
			runs = append(runs, run{inst: inst, order: order, want: c})
		}
	}
	for _, r := range runs {
		res, err := r.inst.Wait(ctx)
		if err != nil {
			t.Fatalf("order %s (%d): %v (status %s in %s)\nnode said:\n%s", r.order, r.want.amount, err, res.Status, res.State, child.output())
		}
		checkResult(t, r.order, r.want, res)
		checkHistory(t, ctx, r.order, r.want, r.inst)
	}

	child.stop(t)
	if dl := re.deadLetters(); len(dl) != 0 {
		for _, d := range dl {
			t.Errorf("dead letter for %s: %s (%s)", d.Message.To, d.Reason, d.LastError)
		}
	}
	re.waitSettled(t)
	t.Logf("%d refunds run by the node agents", len(runs))
}

// checkResult checks how a refund ended: its terminal state, its step
// count and the context its rules built from the agents' results.
func checkResult(t *testing.T, order string, want refundCase, res engine.Result) {
	t.Helper()
	if res.Status != record.StatusCompleted || res.Outcome != want.outcome || res.Steps != len(want.rules) {
		t.Errorf("order %s (%d): got %s %s after %d steps (%v), want %s after %d",
			order, want.amount, res.Status, res.Outcome, res.Steps, res.Err, want.outcome, len(want.rules))
		return
	}
	ctx := res.Context
	wantCtx := map[string]any{"rejection_reason": want.reason}
	if want.reason == "" {
		wantCtx = map[string]any{"approved_by": "seller", "transaction_id": "tx-" + order}
	}
	if want.eligible {
		// The customer agent's result and the input, as the eligible rule
		// copies them.
		wantCtx["order_id"], wantCtx["amount"], wantCtx["customer_reason"] = order, want.amount, "test"
	}
	for k, v := range wantCtx {
		if fmt.Sprint(ctx[k]) != fmt.Sprint(v) {
			t.Errorf("order %s (%d): context %s is %v, want %v (context %v)", order, want.amount, k, ctx[k], v, ctx)
		}
	}
	if _, ok := ctx["transaction_id"]; ok && want.reason != "" {
		t.Errorf("order %s (%d): a rejected refund has a transaction_id (context %v)", order, want.amount, ctx)
	}
}

// checkHistory checks each step of a refund's history: the agent that ran
// it, the rule it fired and the state it entered, each step applied once;
// and, for a rejected refund, that the notification agent took its final
// notice.
func checkHistory(t *testing.T, ctx context.Context, order string, want refundCase, inst *engine.Instance) {
	t.Helper()
	h, err := inst.History(ctx)
	if err != nil {
		t.Fatalf("order %s: history: %v", order, err)
	}
	var fired, path, ran []string
	for _, e := range h {
		switch e.Kind {
		case record.KindAgentRun:
			ran = append(ran, e.Agent)
		case record.KindRuleFired:
			fired = append(fired, e.Rule)
		case record.KindTransition:
			if e.Step != len(path)+1 {
				t.Errorf("order %s: transition %d is of step %d", order, len(path)+1, e.Step)
			}
			path = append(path, e.Next)
		}
	}
	if !slices.Equal(fired, want.rules) || !slices.Equal(path, want.path) || !slices.Equal(ran, agentsOf[:len(want.rules)]) {
		t.Errorf("order %s (%d): got rules %v, states %v, runs of %v; want %v, %v, %v",
			order, want.amount, fired, path, ran, want.rules, want.path, agentsOf[:len(want.rules)])
	}
	if want.reason != "" {
		waitNoticeTaken(t, ctx, order, inst)
	}
}

// waitNoticeTaken waits until the history of a rejected refund records
// that the notification agent took its final notice: the instance ends
// when the notice is sent, and the agent takes it a moment later.
func waitNoticeTaken(t *testing.T, ctx context.Context, order string, inst *engine.Instance) {
	t.Helper()
	for {
		h, err := inst.History(ctx)
		if err != nil {
			t.Fatalf("order %s: history: %v", order, err)
		}
		var sent, taken int
		for _, e := range h {
			switch {
			case e.Kind == record.KindFinalNotice && e.To == "notification":
				sent++
			case e.Kind == record.KindNoticeTaken:
				taken++
			}
		}
		if sent != 1 || taken > 1 {
			t.Errorf("order %s: %d final notices to notification sent, %d taken; want one of each", order, sent, taken)
			return
		}
		if taken == 1 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("order %s: gave up waiting for the notification agent to take its final notice", order)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// refundEngine is an engine running the refund example with no agent of
// its own: all five are external, on a natsbus transport, and their
// reports come over NATS.
type refundEngine struct {
	eng *engine.Engine
	tr  *natsbus.Transport

	mu   sync.Mutex
	dead []transport.DeadLetter
}

func newRefundEngine(t *testing.T, nc *nats.Conn) *refundEngine {
	t.Helper()
	w, err := rules.Load("../../examples/refund/workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := engine.NewRegistry(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := natsbus.DefaultConfig()
	cfg.Storage = jetstream.MemoryStorage
	tr, err := natsbus.New(t.Context(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(w, reg, engine.WithTransport(tr))
	if err != nil {
		_ = tr.Close()
		t.Fatal(err)
	}
	re := &refundEngine{eng: eng, tr: tr}
	cancelDead := tr.OnDeadLetter(func(dl transport.DeadLetter) {
		re.mu.Lock()
		re.dead = append(re.dead, dl)
		re.mu.Unlock()
	})
	stopReports, err := natsbus.ServeReports(context.Background(), nc, eng.HandleReport)
	if err != nil {
		cancelDead()
		_ = eng.Close()
		_ = tr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stopReports()
		cancelDead()
		_ = eng.Close()
		_ = tr.Close()
	})
	return re
}

func (re *refundEngine) deadLetters() []transport.DeadLetter {
	re.mu.Lock()
	defer re.mu.Unlock()
	return slices.Clone(re.dead)
}

// waitSettled waits until the transport holds no work, then checks that
// its counts add up: everything accepted was delivered or dead-lettered.
func (re *refundEngine) waitSettled(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s := re.tr.Metrics()
		if s.InFlight == 0 && s.Queued == 0 {
			if sum := s.Delivered + s.DeadLettered; sum != s.Accepted || s.DeadLettered != 0 {
				t.Errorf("got accepted %d, delivered %d, dead-lettered %d; want all delivered", s.Accepted, s.Delivered, s.DeadLettered)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for the transport to settle: %d in flight, %d queued", s.InFlight, s.Queued)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nodeChild is a node program running as a child process, its output
// (stdout and stderr) kept line by line.
type nodeChild struct {
	cmd    *exec.Cmd
	out    *lineBuffer
	exited chan struct{} // closed once the process has exited
	err    error         // its exit status, once exited is closed
}

// startNode runs node with the program and its arguments; the child is
// killed at the end of the test if it is still running.
func startNode(t *testing.T, node, program string, args ...string) *nodeChild {
	t.Helper()
	out := &lineBuffer{}
	cmd := exec.Command(node, append([]string{program}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &nodeChild{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = cmd.Process.Kill()
			<-c.exited
		}
		t.Logf("node %s said:\n%s", program, c.output())
	})
	return c
}

// waitForLine waits until the child prints a line that starts with prefix.
func (c *nodeChild) waitForLine(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for !c.out.hasLine(prefix) {
		select {
		case <-c.exited:
			t.Fatalf("node exited (%v) before printing %q", c.err, prefix)
		case <-deadline:
			t.Fatalf("gave up waiting for node to print %q", prefix)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop sends the child SIGTERM and checks that it drains and exits 0.
func (c *nodeChild) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(2 * time.Minute):
		t.Fatal("node did not exit within 2 minutes of SIGTERM")
	}
	if c.err != nil {
		t.Errorf("node: got %v after SIGTERM, want exit status 0", c.err)
	}
}

func (c *nodeChild) output() string { return c.out.String() }

// lineBuffer is the output of a child process, safe to read while the
// process writes it.
type lineBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// hasLine reports whether a complete line starting with prefix was written.
func (b *lineBuffer) hasLine(prefix string) bool {
	lines := strings.Split(b.String(), "\n")
	for _, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
