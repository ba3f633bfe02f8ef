// The support example end to end: the commands of its README, with the
// addresses moved to free ports, run as processes: the server built from
// cmd/wfrun on its embedded NATS server, the Go triage agent, the booking
// HTTP agent, the TypeScript FAQ agent (when node is installed), and the
// client commands that start, inspect, signal and watch instances.
package support_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
)

const secret = "e2e-secret"

// root is the repository's root, where the README's commands run.
const root = "../.."

func TestSupport_AgentsInThreeLanguages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example's programs")
	}
	bin := t.TempDir()
	proctest.Run(t, root, nil, "go", "build", "-o", bin, "./cmd/wfrun", "./examples/support/triage", "./examples/support/booking")
	node := nodeAgent(t)

	addrs := proctest.FreeAddrs(t, 3)
	httpAddr, natsAddr, bookingAddr := addrs[0], addrs[1], addrs[2]
	flows := t.TempDir()
	src, err := os.ReadFile("workflow.yaml")
	must(t, err)
	src = []byte(strings.Replace(string(src), "127.0.0.1:8091", bookingAddr, 1))
	must(t, os.WriteFile(filepath.Join(flows, "workflow.yaml"), src, 0o600))
	env := []string{"SUPPORT_BOOKING_SECRET=" + secret, "NATS_URL=nats://" + natsAddr, "BOOKING_ADDR=" + bookingAddr, "BATON_SERVER=http://" + httpAddr}

	proctest.Start(t, env, "wfrun: serving the HTTP API", filepath.Join(bin, "wfrun"), "serve", "--workflows", flows, "--data", t.TempDir(), "--http", httpAddr, "--nats-listen", natsAddr)
	proctest.Start(t, env, "booking: listening", filepath.Join(bin, "booking"))
	proctest.Start(t, env, "triage: taking work", filepath.Join(bin, "triage"))
	if node != "" {
		proctest.Start(t, env, "faq: taking work", node, "faq/dist/faq.js")
	}
	wfrun := func(args ...string) (string, int) {
		return proctest.Output(t, env, filepath.Join(bin, "wfrun"), args...)
	}
	get := func(id string) proctest.Instance {
		return proctest.GetInstance(t, env, filepath.Join(bin, "wfrun"), id)
	}

	// A booking: retried once (the service answers 503 to "urgent"), then
	// it waits for a person's approval.
	out, code := wfrun("start", "support", "--id", "ticket-2", "--input", `{"customer":"bob@example.com","message":"Can someone come on Friday? It is urgent."}`)
	if code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	got := waitFor(t, get, "ticket-2", "waiting")
	if got.State != "APPROVAL" {
		t.Fatalf("ticket-2 waits in %s, want APPROVAL", got.State)
	}
	if out, code := wfrun("signal", "ticket-2", "approved", "--data", `{"by":"ana"}`); code != 0 {
		t.Fatalf("signal: exit %d\n%s", code, out)
	}
	if out, code := wfrun("watch", "ticket-2"); code != 0 || !strings.Contains(out, "BOOKED") {
		t.Fatalf("watch: exit %d, want 0 and BOOKED\n%s", code, out)
	}
	got = get("ticket-2")
	if got.Outcome != "BOOKED" || got.Context["approved_by"] != "ana" || got.Context["slot"] == nil {
		t.Fatalf("ticket-2: %+v", got)
	}
	if got.Step != 3 {
		t.Fatalf("ticket-2 took %d steps, want 3 (triage, a failed booking call, its retry)", got.Step)
	}
	if node == "" {
		t.Log("node is not installed: the TypeScript FAQ agent's part is left out")
		return
	}

	// A question the FAQ agent answers.
	out, code = wfrun("start", "support", "--id", "ticket-1", "--input", `{"customer":"ada@example.com","message":"What are your opening hours?"}`, "--wait", "-o", "json")
	if code != 0 {
		t.Fatalf("start --wait: exit %d\n%s", code, out)
	}
	got = get("ticket-1")
	if got.Outcome != "ANSWERED" || !strings.Contains(fmt.Sprint(got.Context["answer"]), "9:00") {
		t.Fatalf("ticket-1: %+v", got)
	}

	// A request nobody takes bounces between the agents until the loop
	// limit gives it to a person.
	out, code = wfrun("start", "support", "--id", "ticket-3", "--input", `{"customer":"eve@example.com","message":"Something odd happened"}`, "--wait")
	if code != 0 {
		t.Fatalf("start --wait: exit %d\n%s", code, out)
	}
	if got = get("ticket-3"); got.Outcome != "ESCALATED" {
		t.Fatalf("ticket-3: %+v", got)
	}
	out, _ = wfrun("ls")
	for _, id := range []string{"ticket-1", "ticket-2", "ticket-3"} {
		if !strings.Contains(out, id) {
			t.Errorf("wfrun ls does not show %s:\n%s", id, out)
		}
	}
}

// waitFor polls the instance until its status is want (for at most a
// minute: the bound only stops a broken test).
func waitFor(t *testing.T, get func(string) proctest.Instance, id, status string) proctest.Instance {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		in := get(id)
		if in.Status == status {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %s in %s, want %s", id, in.Status, in.State, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// nodeAgent builds the TypeScript FAQ agent as its README says and returns
// node's path; "" when node (or npm) is not installed.
func nodeAgent(t *testing.T) string {
	node, err := exec.LookPath("node")
	if err != nil {
		return ""
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(root, "sdk/typescript/node_modules/nats")); err != nil {
		proctest.Run(t, filepath.Join(root, "sdk/typescript"), nil, "npm", "ci", "--no-audit", "--no-fund")
	}
	if _, err := os.Stat("faq/node_modules/typescript"); err != nil {
		proctest.Run(t, "faq", nil, "npm", "ci", "--no-audit", "--no-fund")
	}
	proctest.Run(t, "faq", nil, "npm", "run", "build")
	return node
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
