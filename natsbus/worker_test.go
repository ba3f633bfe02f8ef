package natsbus_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/wire"
)

var refundInput = map[string]any{"order_id": "1", "amount": 50}

// runCounter counts the runs of each piece of work by idempotency key.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *runCounter) wrap(hs map[string]registry.Handler) map[string]registry.Handler {
	c.runs = map[string]int{}
	out := map[string]registry.Handler{}
	for id, h := range hs {
		out[id] = registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
			c.mu.Lock()
			c.runs[t.IdempotencyKey]++
			c.mu.Unlock()
			return h.Handle(ctx, t)
		})
	}
	return out
}

// refundEngine is an engine running the refund example with every agent
// external, on a natsbus transport, answering reports over NATS.
type refundEngine struct {
	eng *engine.Engine
	tr  *natsbus.Transport
}

func newRefundEngine(tb testing.TB, nc *nats.Conn, change func(*natsbus.Config), opts ...engine.Option) *refundEngine {
	tb.Helper()
	eng, tr := newEngine(tb, nc, loadRefund(tb), change, opts...)
	serveReports(tb, nc, eng)
	return &refundEngine{eng: eng, tr: tr}
}

// loadRefund loads the refund example.
func loadRefund(tb testing.TB) *rules.Workflow {
	tb.Helper()
	w, err := rules.Load("../examples/refund/workflow.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// newEngine returns an engine running w with every agent external, on a
// natsbus transport on nc (natsbus.DefaultConfig with change applied),
// both closed at the end of the test. It answers no report until
// serveReports.
func newEngine(tb testing.TB, nc *nats.Conn, w *rules.Workflow, change func(*natsbus.Config), opts ...engine.Option) (*engine.Engine, *natsbus.Transport) {
	tb.Helper()
	reg, err := engine.NewRegistry(w, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := natsbus.DefaultConfig()
	if change != nil {
		change(&cfg)
	}
	tr, err := natsbus.New(context.Background(), nc, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	eng, err := engine.New(w, reg, append([]engine.Option{engine.WithTransport(tr)}, opts...)...)
	if err != nil {
		_ = tr.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = eng.Close()
		_ = tr.Close()
	})
	return eng, tr
}

// serveReports has eng answer the reports sent over nc until stop or the
// end of the test.
func serveReports(tb testing.TB, nc *nats.Conn, eng *engine.Engine) (stop func() error) {
	tb.Helper()
	stop, err := natsbus.ServeReports(context.Background(), nc, eng.HandleReport)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = stop() })
	return stop
}

// startWorker runs a Worker with hs on a transport of its own until the
// test ends.
func startWorker(tb testing.TB, nc *nats.Conn, hs map[string]registry.Handler, change func(*natsbus.Config)) *natsbus.Worker {
	tb.Helper()
	return runWorker(tb, nc, hs, change, natsbus.WorkerConfig{Concurrency: 128}).Worker
}

// runningWorker is a Worker running on a transport of its own.
type runningWorker struct {
	*natsbus.Worker
	tr *natsbus.Transport
	// ran waits for the Worker's Run to return and gives what it returned.
	ran func() error
}

// runWorker runs a Worker with hs and wcfg on a transport of its own on nc
// (natsbus.DefaultConfig with change applied) until the test ends.
func runWorker(tb testing.TB, nc *nats.Conn, hs map[string]registry.Handler, change func(*natsbus.Config), wcfg natsbus.WorkerConfig) *runningWorker {
	tb.Helper()
	cfg := natsbus.DefaultConfig()
	if change != nil {
		change(&cfg)
	}
	tr, err := natsbus.New(context.Background(), nc, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	wk, err := natsbus.NewWorker(tr, hs, wcfg)
	if err != nil {
		_ = tr.Close()
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	rw := &runningWorker{Worker: wk, tr: tr, ran: sync.OnceValue(func() error { return <-done })}
	tb.Cleanup(func() {
		_ = wk.Close()
		_ = rw.ran()
		_ = tr.Close()
	})
	return rw
}

// startInstance starts an instance of eng with input and returns it with
// a context that ends a minute later (or with the test) to wait for it in.
func startInstance(tb testing.TB, eng *engine.Engine, input map[string]any) (context.Context, *engine.Instance) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), time.Minute)
	tb.Cleanup(cancel)
	inst, err := eng.Start(ctx, input)
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	return ctx, inst
}

// runRefunds starts n instances and waits for each to complete.
func runRefunds(tb testing.TB, eng *engine.Engine, n int) []*engine.Instance {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	insts := startRefunds(ctx, tb, eng, n)
	wantCompleted(ctx, tb, insts)
	return insts
}

// startRefunds starts n instances.
func startRefunds(ctx context.Context, tb testing.TB, eng *engine.Engine, n int) []*engine.Instance {
	tb.Helper()
	insts := make([]*engine.Instance, n)
	for i := range insts {
		inst, err := eng.Start(ctx, refundInput)
		if err != nil {
			tb.Fatalf("Start: %v", err)
		}
		insts[i] = inst
	}
	return insts
}

// wantCompleted waits for each of insts and fails unless it completed
// after four steps.
func wantCompleted(ctx context.Context, tb testing.TB, insts []*engine.Instance) {
	tb.Helper()
	for _, inst := range insts {
		res, err := inst.Wait(ctx)
		if err != nil || res.Outcome != "COMPLETED" || res.Steps != 4 {
			tb.Fatalf("instance %s: got %s %s after %d steps (%v, %v), want COMPLETED after 4", inst.ID(), res.Status, res.Outcome, res.Steps, res.Err, err)
		}
	}
}

// wantEachStepOnce checks that every instance's history applied each of
// its four steps once, and that every step's agent ran at least once.
func wantEachStepOnce(tb testing.TB, insts []*engine.Instance, runs *runCounter) {
	tb.Helper()
	for _, inst := range insts {
		h, err := inst.History(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		steps := map[int]int{}
		for _, e := range h {
			if e.Kind == record.KindTransition {
				steps[e.Step]++
			}
		}
		for step := 1; step <= 4; step++ {
			if steps[step] != 1 {
				tb.Errorf("instance %s step %d: applied %d times, want once (history %d entries)", inst.ID(), step, steps[step], len(h))
			}
			if runs != nil {
				runs.mu.Lock()
				n := runs.runs[inst.ID()+":"+itoa(step)]
				runs.mu.Unlock()
				if n < 1 {
					tb.Errorf("instance %s step %d: the agent ran %d times, want at least once", inst.ID(), step, n)
				}
			}
		}
	}
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

func TestWorker_RefundsOverNATS_EachStepAppliedOnceAndAllWorkAcked(t *testing.T) {
	ns := startServer(t, false)
	re := newRefundEngine(t, connect(t, ns), memStorage)
	var runs runCounter
	startWorker(t, connect(t, ns), runs.wrap(refundagents.Approved()), memStorage)
	insts := runRefunds(t, re.eng, 200)
	wantEachStepOnce(t, insts, &runs)
	// The worker acks each piece of work once the engine has answered its
	// report: the last acks may follow the instances' completion.
	s := settled(t, re.tr, "the last acks")
	if s.Accepted != 800 || s.Delivered != 800 || s.DeadLettered != 0 {
		t.Errorf("got accepted %d delivered %d dead %d, want 800, 800, 0", s.Accepted, s.Delivered, s.DeadLettered)
	}
}

func TestWorker_Reject_IsReportedAndTerminated(t *testing.T) {
	ns := startServer(t, false)
	re := newRefundEngine(t, connect(t, ns), nil)
	dl, _ := collect(re.tr)
	hs := refundagents.Approved()
	hs["seller"] = registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{}, registry.Reject("not my job")
	})
	hs["supervisor"] = registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "fail"}, nil
	})
	startWorker(t, connect(t, ns), hs, nil)
	ctx, inst := startInstance(t, re.eng, refundInput)
	res, err := inst.Wait(ctx)
	if err != nil || res.Outcome != "FAILED" {
		t.Fatalf("got %s %s (%v), want FAILED through the supervisor", res.Status, res.Outcome, err)
	}
	waitFor(t, "the dead letter", func() bool { return len(dl.all()) == 1 })
	if d := dl.all()[0]; d.Reason != "rejected" || d.LastError != "not my job" || d.Message.To != "seller" {
		t.Errorf("got %+v, want seller's work rejected: not my job", d)
	}
	// The worker takes work without its content and metadata (its task
	// holds them): the dead letter still keeps the whole message.
	if m := dl.all()[0].Message; m.Content[wire.KeyAction] != wire.ActionRun || m.Metadata[wire.KeyInstanceID] != inst.ID() {
		t.Errorf("got content %v and metadata %v in the dead letter, want the work's", m.Content, m.Metadata)
	}
	wantBalanced(t, re.tr.Metrics())
}

func TestReport_NoEngineIsAnError_BadBodyIsInvalid(t *testing.T) {
	ns := startServer(t, false)
	nc := connect(t, ns)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := natsbus.Report(ctx, nc, wire.Report{InstanceID: "i", Step: 1, Agent: "a", Trigger: "x"}); err == nil {
		t.Error("got no error with no engine listening")
	}
	stop, err := natsbus.ServeReports(t.Context(), nc, func(_ context.Context, r *wire.Report) wire.Answer {
		return wire.Answer{OK: r.Trigger == "x"}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ans, err := natsbus.Report(ctx, nc, wire.Report{InstanceID: "i", Step: 1, Agent: "a", Trigger: "x"})
	if err != nil || !ans.OK {
		t.Errorf("got %+v (%v), want ok", ans, err)
	}
	msg, err := nc.RequestWithContext(ctx, natsbus.ReportsSubject, []byte(`{"step": "one"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(msg.Data); got == "" || got[:11] != `{"ok":false` {
		t.Errorf("got %s, want an invalid answer", got)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// blockingRefund returns the refund handlers with seller's runs held until
// release is closed (or their context ends), counting the runs of each key.
func blockingRefund(runs *runCounter, started chan<- struct{}, release <-chan struct{}) map[string]registry.Handler {
	hs := refundagents.Approved()
	approve := hs["seller"]
	hs["seller"] = registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			return registry.Outcome{}, ctx.Err()
		}
		return approve.Handle(ctx, t)
	})
	return runs.wrap(hs)
}

// A handler that runs longer than the ack wait is kept alive by the
// worker's heartbeats: it runs once and its work is not redelivered.
func TestWorker_Heartbeats_KeepALongRunFromRedelivery(t *testing.T) {
	ns := startServer(t, false)
	short := func(c *natsbus.Config) {
		memStorage(c)
		c.AckWait = 500 * time.Millisecond
	}
	re := newRefundEngine(t, connect(t, ns), short)
	var runs runCounter
	started, release := make(chan struct{}, 1), make(chan struct{})
	startWorker(t, connect(t, ns), blockingRefund(&runs, started, release), short)
	ctx, inst := startInstance(t, re.eng, refundInput)
	<-started
	// Three ack waits pass while the seller works: a redelivery would run
	// the seller again.
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if res, err := inst.Wait(ctx); err != nil || res.Outcome != "COMPLETED" {
		t.Fatalf("got %s %s (%v), want COMPLETED", res.Status, res.Outcome, err)
	}
	runs.mu.Lock()
	defer runs.mu.Unlock()
	if n := runs.runs[inst.ID()+":2"]; n != 1 {
		t.Errorf("got the seller's step run %d times, want once", n)
	}
}

// Close drains: it stops taking work and waits for the handler running,
// whose report is applied and whose work is acked.
func TestWorker_Close_WaitsForRunningHandlers(t *testing.T) {
	ns := startServer(t, false)
	re := newRefundEngine(t, connect(t, ns), memStorage)
	var runs runCounter
	started, release := make(chan struct{}, 1), make(chan struct{})
	wk := startWorker(t, connect(t, ns), blockingRefund(&runs, started, release), memStorage)
	_, inst := startInstance(t, re.eng, refundInput)
	<-started
	closed := make(chan struct{})
	go func() {
		_ = wk.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a handler ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	// The seller's report was applied; payment's work waits for a worker.
	waitFor(t, "the seller's step to be applied", func() bool { return inst.Result().Steps >= 2 && inst.Result().State == "REFUNDING" })
	// The worker acks without waiting for the server: the last ack may
	// reach the stream a moment after Close returns.
	s := settled(t, re.tr, "the seller's ack")
	if s.InFlight != 0 || s.Queued != 1 || s.Delivered != 2 {
		t.Errorf("got in flight %d queued %d delivered %d, want 0, 1 (payment's work) and 2", s.InFlight, s.Queued, s.Delivered)
	}
}

// A handler still running when the grace period ends has its context
// cancelled; its work is given back, and another worker completes it.
func TestWorker_Close_PastTheGraceCancelsTheHandlerAndGivesTheWorkBack(t *testing.T) {
	ns := startServer(t, false)
	re := newRefundEngine(t, connect(t, ns), memStorage)
	var runs runCounter
	started, never := make(chan struct{}, 1), make(chan struct{})
	wk := runWorker(t, connect(t, ns), blockingRefund(&runs, started, never), nil, natsbus.WorkerConfig{Grace: 20 * time.Millisecond})
	ctx, inst := startInstance(t, re.eng, refundInput)
	<-started
	if err := wk.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wk.ran(); err != nil {
		t.Errorf("Run: got %v, want nil after a drain", err)
	}
	startWorker(t, connect(t, ns), refundagents.Approved(), memStorage)
	if res, err := inst.Wait(ctx); err != nil || res.Outcome != "COMPLETED" {
		t.Fatalf("got %s %s (%v), want COMPLETED by the second worker", res.Status, res.Outcome, err)
	}
	wantEachStepOnce(t, []*engine.Instance{inst}, nil)
}

// A worker whose server stops serving takes warns once when the takes
// start failing, not at every try, and asks less often while they fail.
func TestWorker_FailingTakesAreLoggedOnce(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	tr := newTestTransport(t, func(c *natsbus.Config) {
		c.Logger = zap.New(core)
		c.Timeout = 100 * time.Millisecond
	})
	tr.open("a", 0)
	wk, err := natsbus.NewWorker(tr.Transport, map[string]registry.Handler{"a": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "ok"}, nil
	})}, natsbus.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// With JetStream off, this subscription gets the worker's pulls and
	// answers none: each take fails when its timeout ends.
	watch := connect(t, tr.ns)
	var pulls atomic.Int64
	if _, err := watch.Subscribe("$JS.API.CONSUMER.MSG.NEXT.>", func(*nats.Msg) { pulls.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := tr.ns.DisableJetStream(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	deadline := time.Now().Add(time.Minute)
	for pulls.Load() < 6 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := wk.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := pulls.Load(); n < 6 {
		t.Fatalf("got %d pulls in a minute, want the worker to keep trying", n)
	}
	if n := logs.FilterMessage("natsbus: worker: take work").Len(); n != 1 {
		t.Errorf("got %d warnings for %d failed takes, want 1", n, pulls.Load())
	}
}
