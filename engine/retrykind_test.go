package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/wire"
)

// policyWorkflow is a one-agent workflow whose WORK state has the given
// extra keys (a retry policy, a timeout, a heartbeat).
func policyWorkflow(t testing.TB, state string) *rules.Workflow {
	t.Helper()
	src := fmt.Sprintf(`
workflow: policy
initial: WORK
agents: {worker: {}}
states:
  WORK: {agent: worker, %s}
  DONE: {terminal: true}
  FAILED: {terminal: true}
rules:
  - {id: done, from: worker, trigger: done, next: DONE}
  - {id: failed, from: worker, trigger: [error, timeout, rejected], next: FAILED, context: {kind: error.kind, message: error.message}}
`, state)
	w, err := rules.Parse("policy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// kinded fails the run with an error of that kind.
func kinded(kind string) reply {
	return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{}, registry.Kind(errors.New(kind+" failure"), kind)
	}
}

func retryDelays(h []record.Entry) []time.Duration {
	var out []time.Duration
	for _, e := range entries(h, record.KindRetry) {
		out = append(out, e.Delay)
	}
	return out
}

func TestEngine_RetryPolicy_ByKind(t *testing.T) {
	s := time.Second
	tests := []struct {
		name        string
		state       string
		worker      []reply
		wantOutcome string
		wantKind    any // error.kind as the rules saw it, for FAILED
		wantDelays  []time.Duration
	}{
		{
			name:  "backoff object: initial, rate, capped by max",
			state: `retry: {max: 4, backoff: {initial: 1s, rate: 3, max: 5s}}`, worker: append(flakies(4), ok("done", nil)),
			wantOutcome: "DONE", wantDelays: []time.Duration{s, 3 * s, 5 * s, 5 * s},
		},
		{
			name:  "backoff object: default rate 2",
			state: `retry: {max: 3, backoff: {initial: 100ms}}`, worker: append(flakies(3), ok("done", nil)),
			wantOutcome: "DONE", wantDelays: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond},
		},
		{
			name:  "on: a listed kind is retried",
			state: `retry: {max: 2, backoff: [1s], on: [rate_limited]}`, worker: []reply{kinded("rate_limited"), ok("done", nil)},
			wantOutcome: "DONE", wantDelays: []time.Duration{s},
		},
		{
			name:  "on: an unlisted kind is not, and rules read its kind",
			state: `retry: {max: 2, backoff: [1s], on: [rate_limited]}`, worker: []reply{kinded("rate_limited"), kinded("bad_request")},
			wantOutcome: "FAILED", wantKind: "bad_request", wantDelays: []time.Duration{s},
		},
		{
			name:  "on: an agent failure without a kind is kind error",
			state: `retry: {max: 2, on: [rate_limited]}`, worker: []reply{fail("boom")},
			wantOutcome: "FAILED", wantKind: "error",
		},
		{
			name:  "except: a listed kind is never retried",
			state: `retry: {max: 2, except: [bad_request]}`, worker: []reply{fail("flaky"), kinded("bad_request")},
			wantOutcome: "FAILED", wantKind: "bad_request", wantDelays: []time.Duration{0},
		},
		{
			name:  "rejected is never retried, even when on lists it",
			state: `retry: {max: 2, on: [rejected]}`, worker: []reply{reject("busy")},
			wantOutcome: "FAILED", wantKind: "rejected",
		},
		{
			name:  "a panic has kind panic",
			state: `retry: {max: 2, on: [timeout]}`, worker: []reply{panics("boom")},
			wantOutcome: "FAILED", wantKind: "panic",
		},
		{
			name:  "a timed-out run has kind timeout and is retried when on lists it",
			state: `timeout: 10s, retry: {max: 1, backoff: [2s], on: [timeout]}`, worker: []reply{takes(time.Minute, ok("done", nil)), takes(time.Minute, ok("done", nil))},
			wantOutcome: "FAILED", wantKind: "timeout", wantDelays: []time.Duration{2 * s},
		},
		{
			name:  "invalid results have kind invalid_result",
			state: `retry: {max: 1, except: [invalid_result]}`, worker: []reply{ok("done", map[string]any{"f": func() {}})},
			wantOutcome: "FAILED", wantKind: "invalid_result",
		},
		{
			name:  "a permanent failure is not retried even when on lists its kind",
			state: `retry: {max: 2, on: [rate_limited]}`,
			worker: []reply{func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
				return registry.Outcome{}, registry.Permanent(registry.Kind(errors.New("quota gone"), "rate_limited"))
			}},
			wantOutcome: "FAILED", wantKind: "rate_limited",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRunOf(t, policyWorkflow(t, tt.state), map[string][]reply{"worker": tt.worker})
			res, h := r.finish(nil)
			wantCompleted(t, res, tt.wantOutcome)
			if tt.wantKind != nil && res.Context["kind"] != tt.wantKind {
				t.Errorf("error.kind: got %v, want %v (message %v)", res.Context["kind"], tt.wantKind, res.Context["message"])
			}
			if got := retryDelays(h); !slices.Equal(got, tt.wantDelays) {
				t.Errorf("retry delays: got %v, want %v", got, tt.wantDelays)
			}
			if tt.wantKind != nil {
				out := entries(h, record.KindOutcome)
				if got := out[len(out)-1].ErrorKind; got != tt.wantKind {
					t.Errorf("outcome entry's kind: got %q, want %v", got, tt.wantKind)
				}
			}
		})
	}
}

func TestEngine_RetryPolicy_FullJitterIsDeterministic(t *testing.T) {
	const state = `retry: {max: 5, backoff: {initial: 1s, rate: 2, max: 10s, jitter: full}}`
	delays := func(opts ...engine.Option) []time.Duration {
		r := newSimRunOf(t, policyWorkflow(t, state), map[string][]reply{"worker": append(flakies(5), ok("done", nil))}, opts...)
		res, h := r.finish(nil)
		wantCompleted(t, res, "DONE")
		return retryDelays(h)
	}
	first, second := delays(), delays()
	if !slices.Equal(first, second) {
		t.Fatalf("two runs on the simulated clock drew %v and %v, want the same delays", first, second)
	}
	ceilings := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}
	for n, d := range first {
		if d < 0 || d > ceilings[n] {
			t.Errorf("retry %d: got %s, want a delay in [0, %s]", n+1, d, ceilings[n])
		}
	}
	if slices.Equal(first, ceilings) {
		t.Errorf("got the computed delays %v, want them jittered", first)
	}
	if other := delays(engine.WithJitterSeed(42)); slices.Equal(other, first) {
		t.Errorf("another seed drew the same delays %v", other)
	}
}

func TestEngine_Heartbeat_ExternalRunWithoutHeartbeatFails(t *testing.T) {
	ctx := context.Background()
	w := policyWorkflow(t, `heartbeat: 30s, retry: {max: 1, backoff: [1s], on: [heartbeat]}`)
	r := newSimRunOf(t, w, nil) // worker is external
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	beat := func(step int) {
		t.Helper()
		ans := r.eng.HandleReport(ctx, &wire.Report{InstanceID: inst.ID(), Step: step, Agent: "worker", Heartbeat: true})
		if !ans.OK {
			t.Fatalf("heartbeat of step %d: %+v", step, ans)
		}
	}
	msgs, err := busOf(r.eng).TakeWork(ctx, "worker", 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("TakeWork: %v, %d messages", err, len(msgs))
	}
	_ = busOf(r.eng).Ack(ctx, msgs[0])
	if task, err := wire.Decode(msgs[0]); err != nil || task.Heartbeat != 30*time.Second {
		t.Fatalf("work: got heartbeat %v (%v), want 30s in its metadata", task.Heartbeat, err)
	}
	start := r.sim.Now()
	r.sim.Advance(20 * time.Second)
	beat(1) // the timer restarts: 30s from now
	r.sim.Advance(29 * time.Second)
	if err := r.sim.RunReady(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(entries(history(t, inst), record.KindRetry)); got != 0 {
		t.Fatalf("run failed after a heartbeat 29s ago: %d retries", got)
	}
	r.runUntil(func() bool { return len(entries(history(t, inst), record.KindRetry)) > 0 })
	h := history(t, inst)
	retry := entries(h, record.KindRetry)[0]
	if retry.ErrorKind != "heartbeat" || !retry.Time.Equal(start.Add(50*time.Second)) {
		t.Fatalf("got retry %+v, want kind heartbeat at +50s", retry)
	}
	r.runUntil(func() bool { return inst.Result().Steps == 2 })
	// The retry misses its heartbeat too: no retry left, the outcome is
	// timeout with error.kind heartbeat.
	r.settle()
	res := inst.Result()
	wantCompleted(t, res, "FAILED")
	if res.Context["kind"] != "heartbeat" {
		t.Errorf("error.kind: got %v, want heartbeat", res.Context["kind"])
	}
	if out := entries(history(t, inst), record.KindOutcome); out[len(out)-1].Trigger != "timeout" {
		t.Errorf("got outcome %s, want timeout", out[len(out)-1].Trigger)
	}
}

func TestEngine_RetryPolicy_ResumedRetryKeepsItsKind(t *testing.T) {
	ctx := context.Background()
	w := policyWorkflow(t, `retry: {max: 2, backoff: [1h], on: [rate_limited]}`)
	store := record.NewMemStore()
	sim := clock.NewSim(epoch)
	build := func() *engine.Engine {
		reg, err := engine.NewRegistry(w, nil)
		if err != nil {
			t.Fatal(err)
		}
		eng, err := newEngine(w, reg, engine.WithStore(store), engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("k")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		return eng
	}
	first := build()
	inst, err := first.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Report(ctx, inst.ID(), 1, registry.Outcome{}, registry.Kind(errors.New("429"), "rate_limited")); err != nil {
		t.Fatal(err)
	}
	_ = first.Close() // down while the retry waits for its backoff

	second := build()
	if _, err := second.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sim.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	again, err := second.Instance(inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	if res := again.Result(); res.Status != record.StatusRunning || res.Steps != 2 {
		t.Fatalf("got %s after %d steps, want the rate_limited run retried as step 2", res.Status, res.Steps)
	}
}

func TestEngine_Signal_ClosedEngine(t *testing.T) {
	r := newSimRun(t, "wait.yaml", map[string][]reply{"writer": {ok("drafted", nil)}})
	inst := startWaiting(t, r)
	_ = r.eng.Close()
	if err := inst.Signal(context.Background(), "approved", nil); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("got %v, want ErrClosed", err)
	}
}

func TestEngine_Heartbeat_AcceptRestartsTheClock(t *testing.T) {
	ctx := context.Background()
	r := newSimRunOf(t, policyWorkflow(t, `heartbeat: 30s`), nil)
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := busOf(r.eng).TakeWork(ctx, "worker", 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("TakeWork: %v, %d messages", err, len(msgs))
	}
	start := r.sim.Now()
	r.sim.Advance(25 * time.Second)
	if err := acceptWork(ctx, r.eng, msgs[0]); err != nil { // the agent takes its work late
		t.Fatal(err)
	}
	r.settle()
	res := inst.Result()
	wantCompleted(t, res, "FAILED")
	out := entries(history(t, inst), record.KindOutcome)
	last := out[len(out)-1]
	if last.Trigger != "timeout" || last.ErrorKind != "heartbeat" || !last.Time.Equal(start.Add(55*time.Second)) {
		t.Errorf("got outcome %s (kind %s) at +%s, want timeout of kind heartbeat at +55s", last.Trigger, last.ErrorKind, last.Time.Sub(start))
	}
}
