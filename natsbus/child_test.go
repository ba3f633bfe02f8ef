package natsbus_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/registry"
)

// The environment of a worker child: the test binary run again as a
// natsbus Worker for the refund agents, on the server at workerURLEnv,
// appending the idempotency key of each run to workerLogEnv.
const (
	workerChildEnv = "NATSBUS_WORKER_CHILD"
	workerURLEnv   = "NATSBUS_WORKER_URL"
	workerLogEnv   = "NATSBUS_WORKER_LOG"
	childAckWait   = time.Second
)

// runWorkerChild is the child's main: it serves until SIGTERM (a drain) or
// SIGKILL.
func runWorkerChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := nats.Connect(os.Getenv(workerURLEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	log, err := os.OpenFile(os.Getenv(workerLogEnv), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer log.Close()
	cfg := natsbus.DefaultConfig()
	cfg.AckWait = childAckWait
	tr, err := natsbus.New(ctx, nc, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tr.Close()
	hs := map[string]registry.Handler{}
	for id, h := range refundagents.Approved() {
		hs[id] = registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
			fmt.Fprintln(log, t.IdempotencyKey)
			return h.Handle(ctx, t)
		})
	}
	wk, err := natsbus.NewWorker(tr, hs, natsbus.WorkerConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := wk.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild starts a worker child and returns it.
func startChild(t *testing.T, url, log string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerChildEnv+"=1", workerURLEnv+"="+url, workerLogEnv+"="+log)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// runsLogged counts the runs in the children's log by idempotency key.
func runsLogged(t *testing.T, log string) *runCounter {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &runCounter{runs: map[string]int{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k := strings.TrimSpace(sc.Text()); k != "" {
			c.runs[k]++
		}
	}
	return c
}

// childRefunds is a refund engine on a server that listens on loopback,
// for worker children to run its agents.
type childRefunds struct {
	re  *refundEngine
	url string // the server's
	log string // the children's log of runs
}

func newChildRefunds(t *testing.T) *childRefunds {
	t.Helper()
	ns := startServer(t, true)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	re := newRefundEngine(t, nc, func(c *natsbus.Config) { c.AckWait = childAckWait })
	return &childRefunds{re: re, url: ns.ClientURL(), log: t.TempDir() + "/runs.log"}
}

// startChild starts a worker child.
func (cr *childRefunds) startChild(t *testing.T) *exec.Cmd {
	t.Helper()
	return startChild(t, cr.url, cr.log)
}

// drain stops child with SIGTERM and fails unless it exits cleanly.
func drain(t *testing.T, child *exec.Cmd) {
	t.Helper()
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Errorf("child: got %v after SIGTERM, want a clean exit", err)
	}
}

func TestWorker_InAChildProcess_RunsEachStepOnceAndDrainsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	cr := newChildRefunds(t)
	child := cr.startChild(t)
	insts := runRefunds(t, cr.re.eng, 200)
	drain(t, child)
	wantEachStepOnce(t, insts, runsLogged(t, cr.log))
}

// The worker is killed with SIGKILL mid-run and started again: the work it
// held comes back after the ack wait, and every instance completes with
// each step applied once.
func TestWorker_KilledMidRun_ItsWorkComesBackAndEachStepAppliesOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	cr := newChildRefunds(t)
	child := cr.startChild(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const n = 200
	insts := startRefunds(ctx, t, cr.re.eng, n)
	// Kill it once it is well into the runs, and start another.
	waitFor(t, "the child to be under way", func() bool {
		b, _ := os.ReadFile(cr.log)
		return strings.Count(string(b), "\n") >= n
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	child = cr.startChild(t)
	wantCompleted(ctx, t, insts)
	drain(t, child)
	wantEachStepOnce(t, insts, runsLogged(t, cr.log))
	s := cr.re.tr.Metrics()
	wantBalanced(t, s)
	t.Logf("after the kill: %d redelivered or repeated runs; transport %+v", repeats(runsLogged(t, cr.log)), struct {
		Accepted, Delivered, DeadLettered uint64
		Queued, InFlight                  int
	}{s.Accepted, s.Delivered, s.DeadLettered, s.Queued, s.InFlight})
}

func repeats(c *runCounter) int {
	n := 0
	for _, r := range c.runs {
		n += r - 1
	}
	return n
}
