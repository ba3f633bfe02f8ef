package natsstore_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/crashcheck"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

var (
	crashRounds    = flag.Int("crash.rounds", 6, "how many times the crash test kills its child process")
	crashInstances = flag.Int("crash.instances", 100, "how many instances the crash test runs")
)

const (
	crashEnvURL   = "BATON_NATS_CRASH_URL"
	crashEnvLog   = "BATON_NATS_CRASH_LOG"
	crashEnvCount = "BATON_NATS_CRASH_INSTANCES"
	crashPrefix   = "crash"
)

// TestStore_Crash_KilledAndResumed runs many instances in a child process
// whose engine keeps them in a NATS store, on a server this test runs
// listening on a loopback port. It kills the child with SIGKILL at random
// moments and starts it again; the child resumes what the store holds. In
// the end every instance completed, no committed step was lost or applied
// twice, and an agent that ran a step again saw the same idempotency key.
// Run longer with -crash.rounds=50.
func TestStore_Crash_KilledAndResumed(t *testing.T) {
	if os.Getenv(crashEnvURL) != "" {
		crashChild(t)
		return
	}
	if testing.Short() {
		t.Skip("starts child processes; not in -short")
	}
	srv := startServer(t, natsserver.Config{Listen: true}) // fsync on every write, the default
	logFile := filepath.Join(t.TempDir(), "agents.log")
	n := *crashInstances
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStore_Crash_KilledAndResumed$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnvURL+"="+srv.URL(), crashEnvLog+"="+logFile, fmt.Sprintf("%s=%d", crashEnvCount, n))
		return cmd
	}
	kills := 0
	for range *crashRounds {
		cmd := child()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rand.IntN(400)) * time.Millisecond)
		if cmd.Process.Kill() == nil {
			kills++
		}
		_ = cmd.Wait()
		// The server handles what the dead child sent before it closes its
		// connection: only then may the next child read the store.
		waitNoClients(t, srv)
	}
	out, err := child().CombinedOutput()
	if err != nil {
		t.Fatalf("the last, uninterrupted child failed: %v\n%s", err, out)
	}

	st := openStore(t, srv, natsstore.Config{Prefix: crashPrefix})
	fig := crashcheck.Verify(t, st, logFile, n)
	t.Logf("%d kills, %d runs resumed, %d agent runs for %d distinct keys, %d instances", kills, fig.Resumed, fig.Runs, fig.Keys, n)
}

// waitNoClients polls until the server holds no client connection, for at
// most a minute: a dead process's connection closes as soon as the server
// reads its end of the socket.
func waitNoClients(t *testing.T, srv *natsserver.Server) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for srv.Clients() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server still holds %d client connections a minute after the child died", srv.Clients())
		}
		time.Sleep(time.Millisecond)
	}
}

// failing counts the commits the store refused: in this test every commit
// must succeed, since one engine at a time owns every instance.
type failing struct {
	record.Store
	failed atomic.Int64
	first  atomic.Value
}

func (f *failing) Commit(ctx context.Context, rec record.Step) error {
	err := f.Store.Commit(ctx, rec)
	if err != nil && f.failed.Add(1) == 1 {
		f.first.Store(err)
	}
	return err
}

// crashChild is the child process: it resumes what the store holds, starts
// the instances still missing, and runs everything to the end (unless it is
// killed first).
func crashChild(t *testing.T) {
	ctx := context.Background()
	nc, err := nats.Connect(os.Getenv(crashEnvURL), nats.Name("crash-child"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ns, err := natsstore.Open(ctx, nc, natsstore.Config{Prefix: crashPrefix, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	st := &failing{Store: ns}
	logf, err := os.OpenFile(os.Getenv(crashEnvLog), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	var mu sync.Mutex
	agent := func(n int) registry.Handler {
		return registry.HandlerFunc(func(_ context.Context, task *registry.Task) (registry.Outcome, error) {
			mu.Lock()
			_, err := fmt.Fprintln(logf, task.IdempotencyKey) // the side effect, deduplicable by key
			mu.Unlock()
			if err != nil {
				return registry.Outcome{}, err
			}
			time.Sleep(2 * time.Millisecond) // a little work, so that kills land mid-run
			return registry.Outcome{Trigger: "ok", Result: map[string]any{"n": n}}, nil
		})
	}
	w, err := rules.Load("testdata/crash.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{
		"a": agent(1), "b": agent(2), "c": agent(3), "x": agent(4), "y": agent(5), "z": agent(6), "n": agent(7),
	})
	if err != nil {
		t.Fatal(err)
	}
	logger, err := zap.NewDevelopment(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(w, reg, engine.WithStore(st), engine.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rep, err := eng.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, err := range rep.Failed {
		t.Fatalf("resume %s: %v", id, err)
	}
	var waits []*engine.Instance
	for _, id := range rep.Resumed {
		inst, err := eng.Instance(id)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, inst)
	}
	snaps, err := st.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want int
	fmt.Sscan(os.Getenv(crashEnvCount), &want)
	for k := len(snaps); k < want; k++ {
		inst, err := eng.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, inst)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, inst := range waits {
		if _, err := inst.Wait(wctx); err != nil {
			t.Fatal(err)
		}
	}
	// The final notices go out after the last step: run until n has taken
	// every one (each settles its outbox item).
	for _, inst := range waits {
		for {
			left, err := st.Outbox(ctx, inst.ID())
			if err != nil {
				t.Fatal(err)
			}
			if len(left) == 0 {
				break
			}
			if wctx.Err() != nil {
				t.Fatalf("instance %s: outbox still holds %d items", inst.ID(), len(left))
			}
			time.Sleep(time.Millisecond)
		}
	}
	if n := st.failed.Load(); n > 0 {
		t.Fatalf("%d commits failed, the first: %v", n, st.first.Load())
	}
	if err := eng.Close(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
