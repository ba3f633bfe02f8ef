package engine_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/crashcheck"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

var crashRounds = flag.Int("crash.rounds", 6, "how many times the crash test kills its child process")

const (
	crashEnvStore = "BATON_CRASH_STORE"
	crashEnvLog   = "BATON_CRASH_LOG"
	crashEnvCount = "BATON_CRASH_INSTANCES"
)

// TestEngine_Crash_KilledAndResumed runs many instances in a child process on
// a bbolt store file, kills it with SIGKILL at random moments, restarts it,
// and checks that in the end every instance completed, no committed step was
// lost or applied twice, and an agent that ran a step again saw the same
// idempotency key. Each round adds instances, so kills keep landing on work
// under way. Run longer with -crash.rounds=50.
func TestEngine_Crash_KilledAndResumed(t *testing.T) {
	if os.Getenv(crashEnvStore) != "" {
		crashChild(t)
		return
	}
	dir := t.TempDir()
	store, logFile := filepath.Join(dir, "crash.db"), filepath.Join(dir, "agents.log")
	// Every round brings new instances, so that each kill lands on work
	// under way, however many rounds run: the child resumes what is there
	// and starts instances up to the round's count.
	const perRound = 25
	n := perRound * max(*crashRounds, 6)
	child := func(count int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEngine_Crash_KilledAndResumed$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnvStore+"="+store, crashEnvLog+"="+logFile, fmt.Sprintf("%s=%d", crashEnvCount, count))
		return cmd
	}
	kills := 0
	for round := range *crashRounds {
		cmd := child(min(n, (round+1)*perRound+perRound))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(30+rand.IntN(150)) * time.Millisecond)
		if cmd.Process.Kill() == nil {
			kills++
		}
		_ = cmd.Wait()
	}
	out, err := child(n).CombinedOutput()
	if err != nil {
		t.Fatalf("the last, uninterrupted child failed: %v\n%s", err, out)
	}

	st, err := boltstore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fig := crashcheck.Verify(t, st, logFile, n)
	checkCrashUsage(t, st)
	// Agents may run a step again after a crash (at-least-once side
	// effects); when they do, they see the key they saw the first time.
	t.Logf("%d kills, %d runs resumed, %d agent runs for %d distinct keys", kills, fig.Resumed, fig.Runs, fig.Keys)
}

// crashChild is the child process: it resumes what the store holds, starts
// the instances still missing, and runs everything to the end (unless it is
// killed first).
func crashChild(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(os.Getenv(crashEnvStore), boltstore.WithBatch(64))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
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
			return registry.Outcome{Trigger: "ok", Result: map[string]any{"n": n}, Usage: crashUsage(n)}, nil
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
	eng, err := newEngine(w, reg, engine.WithStore(st))
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
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
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
}
