package support_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/proctest"
)

// The booking agent in Python (booking/booking.py, on the Python SDK) takes
// the Go booking agent's place: a booking is retried once (the agent fails
// an urgent request's first call as unavailable), waits for a person's
// approval and ends BOOKED.
func TestSupport_BookingAgentInPython(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example's programs")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python booking agent needs it")
	}
	bin := t.TempDir()
	proctest.Run(t, root, nil, "go", "build", "-o", bin, "./cmd/wfrun", "./examples/support/triage")
	sdk, err := filepath.Abs(filepath.Join(root, "sdk/python/src"))
	must(t, err)

	addrs := proctest.FreeAddrs(t, 3)
	httpAddr, natsAddr, bookingAddr := addrs[0], addrs[1], addrs[2]
	flows := bookingWorkflow(t, bookingAddr)
	env := []string{"SUPPORT_BOOKING_SECRET=" + secret, "NATS_URL=nats://" + natsAddr, "BOOKING_ADDR=" + bookingAddr,
		"BATON_SERVER=http://" + httpAddr, "PYTHONPATH=" + sdk, "PYTHONDONTWRITEBYTECODE=1"}
	proctest.Start(t, env, "wfrun: serving the HTTP API", filepath.Join(bin, "wfrun"), "serve", "--workflows", flows, "--data", t.TempDir(), "--http", httpAddr, "--nats-listen", natsAddr)
	proctest.Start(t, env, "baton: serving booking", py, "booking/booking.py")
	proctest.Start(t, env, "triage: taking work", filepath.Join(bin, "triage"))
	wfrun := func(args ...string) (string, int) {
		return proctest.Output(t, env, filepath.Join(bin, "wfrun"), args...)
	}
	get := func(id string) proctest.Instance {
		return proctest.GetInstance(t, env, filepath.Join(bin, "wfrun"), id)
	}

	out, code := wfrun("start", "support", "--id", "ticket-py", "--input", `{"customer":"bob@example.com","message":"Can someone come on Friday? It is urgent."}`)
	if code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	got := waitFor(t, get, "ticket-py", "waiting")
	if got.State != "APPROVAL" || !strings.HasSuffix(got.Context["slot"].(string), "T10:00:00Z") {
		t.Fatalf("ticket-py: %+v, want waiting in APPROVAL with a slot at 10:00 UTC", got)
	}
	if out, code := wfrun("signal", "ticket-py", "approved", "--data", `{"by":"ana"}`); code != 0 {
		t.Fatalf("signal: exit %d\n%s", code, out)
	}
	if out, code := wfrun("watch", "ticket-py"); code != 0 || !strings.Contains(out, "BOOKED") {
		t.Fatalf("watch: exit %d, want 0 and BOOKED\n%s", code, out)
	}
	if got = get("ticket-py"); got.Outcome != "BOOKED" || got.Context["approved_by"] != "ana" || got.Step != 3 {
		t.Fatalf("ticket-py: %+v, want BOOKED by ana in 3 steps (triage, the failed call, its retry)", got)
	}
}

// bookingWorkflow writes the example's workflow, its booking url moved to
// addr, into a new directory and returns the directory.
func bookingWorkflow(t *testing.T, addr string) string {
	t.Helper()
	flows := t.TempDir()
	src, err := os.ReadFile("workflow.yaml")
	must(t, err)
	src = []byte(strings.Replace(string(src), "127.0.0.1:8091", addr, 1))
	must(t, os.WriteFile(filepath.Join(flows, "workflow.yaml"), src, 0o600))
	return flows
}
