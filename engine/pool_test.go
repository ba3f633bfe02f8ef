package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
)

// answer is a Go handler that always reports trigger.
func answer(trigger string, result map[string]any) registry.Handler {
	return registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: trigger, Result: result}, nil
	})
}

// blocker is a Go handler that blocks until its context ends and reports
// the context's error on seen.
type blocker struct {
	started chan struct{}
	seen    chan error
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 1), seen: make(chan error, 1)}
}

func (b *blocker) Handle(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.seen <- ctx.Err()
	return registry.Outcome{Trigger: "next"}, ctx.Err()
}

// poolEngine builds an engine on the real clock and worker pool.
func poolEngine(t *testing.T, file string, handlers map[string]registry.Handler, opts ...engine.Option) *engine.Engine {
	t.Helper()
	w := loadWorkflow(t, file)
	reg, err := engine.NewRegistry(w, handlers)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	eng, err := newEngine(w, reg, opts...)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	return eng
}

// serveExternal plays an external agent on the bus until ctx ends: it
// reports trigger for every hand-off it receives.
func serveExternal(ctx context.Context, t *testing.T, eng *engine.Engine, agent, trigger string, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			m, err := busOf(eng).ReceiveWait(ctx, agent)
			if err != nil {
				return
			}
			if err := reportWork(ctx, eng, m, registry.Outcome{Trigger: trigger}, nil); err != nil {
				t.Errorf("report: %v", err)
			}
		}
	}()
}

func TestEngine_Pool_GoAndExternalAgents(t *testing.T) {
	defer goleak.VerifyNone(t)
	// alpha and beta are Go handlers, gamma is external, watch receives the
	// final notice.
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
		"alpha": answer("next", map[string]any{"n": 1}),
		"beta":  answer("next", nil),
		"watch": answer("ignored", nil),
	})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	serveExternal(ctx, t, eng, "gamma", "next", &wg)

	const n = 50
	insts := make([]*engine.Instance, n)
	for k := range insts {
		inst, err := eng.Start(ctx, map[string]any{"k": k})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		insts[k] = inst
	}
	for _, inst := range insts {
		res, err := inst.Wait(ctx)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		wantCompleted(t, res, "DONE")
		if res.Steps != 3 || res.Context["n"] != 1 {
			t.Errorf("got steps %d context %v, want 3 steps and n=1", res.Steps, res.Context)
		}
	}
	cancel()
	wg.Wait()
	if err := eng.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := eng.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestEngine_Pool_TimeoutOfAGoHandler(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		beta := newBlocker()
		eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{"alpha": answer("next", nil), "beta": beta})
		ctx := t.Context()
		start := time.Now()
		inst, err := eng.Start(ctx, nil)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		res, err := inst.Wait(ctx)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		wantCompleted(t, res, "FAILED") // b_lost: beta timed out
		if got := time.Since(start); got != 30*time.Second {
			t.Errorf("got %s of (bubble) time, want the state's 30s timeout", got)
		}
		if err := <-beta.seen; !errors.Is(err, context.Canceled) {
			t.Errorf("handler saw %v, want its context cancelled", err)
		}
		_ = eng.Close() // waits for the worker that reports the late reply
		h := history(t, inst)
		outs := entries(h, record.KindOutcome)
		if last := outs[len(outs)-1]; last.Trigger != "timeout" || last.Agent != "beta" {
			t.Errorf("got outcome %+v, want beta's timeout", last)
		}
		if late := entries(h, record.KindLateReply); len(late) != 1 || late[0].Step != 2 {
			t.Errorf("got late replies %+v, want the cancelled handler's reply to step 2", late)
		}
	})
}

func TestEngine_Pool_TimeoutOfAnExternalAgent(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{"alpha": answer("next", nil)})
		defer eng.Close()
		ctx := t.Context()
		inst, err := eng.Start(ctx, nil)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		m, err := busOf(eng).ReceiveWait(ctx, "beta")
		if err != nil {
			t.Fatalf("ReceiveWait: %v", err)
		}
		time.Sleep(31 * time.Second) // the external agent is too slow
		res := inst.Result()
		wantCompleted(t, res, "FAILED")
		err = reportWork(ctx, eng, m, registry.Outcome{Trigger: "next"}, nil)
		if !errors.Is(err, engine.ErrStaleReport) {
			t.Fatalf("got %v, want ErrStaleReport", err)
		}
		if late := entries(history(t, inst), record.KindLateReply); len(late) != 1 || late[0].Trigger != "next" {
			t.Errorf("got late replies %+v, want the stale report", late)
		}
	})
}

func TestEngine_Instance_CancelStopsTheRunningHandler(t *testing.T) {
	defer goleak.VerifyNone(t)
	beta := newBlocker()
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{"alpha": answer("next", nil), "beta": beta})
	ctx := t.Context()
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	<-beta.started
	if err := inst.Cancel(ctx); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if err := <-beta.seen; !errors.Is(err, context.Canceled) {
		t.Errorf("handler saw %v, want its context cancelled", err)
	}
	res, err := inst.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if res.Status != record.StatusCanceled || !errors.Is(res.Err, engine.ErrCanceled) || res.State != "SECOND" {
		t.Errorf("got %s in %s (%v), want canceled in SECOND with ErrCanceled", res.Status, res.State, res.Err)
	}
	if err := inst.Cancel(ctx); !errors.Is(err, engine.ErrInstanceFinished) {
		t.Errorf("second Cancel: got %v, want ErrInstanceFinished", err)
	}
	// The handler told the test it saw the cancellation before it returned:
	// its reply reaches the history a moment later, and Close before that
	// would drop it (a closing engine records nothing).
	for k := 0; k < 5000 && len(entries(history(t, inst), record.KindLateReply)) == 0; k++ {
		time.Sleep(time.Millisecond)
	}
	_ = eng.Close()
	_ = eng.Close()
	h := history(t, inst)
	if got := entries(h, record.KindCanceled); len(got) != 1 || got[0].State != "SECOND" {
		t.Errorf("got canceled entries %+v, want one in SECOND", got)
	}
	if late := entries(h, record.KindLateReply); len(late) != 1 || late[0].Step != 2 {
		t.Errorf("got late replies %+v, want the cancelled handler's reply (history %s)", late, kinds(h))
	}
	if snap, err := eng.Store().Instance(ctx, inst.ID()); err != nil || snap.Status != record.StatusCanceled {
		t.Errorf("got stored snapshot %+v (%v), want status canceled", snap, err)
	}
}

func TestEngine_Instance_API(t *testing.T) {
	defer goleak.VerifyNone(t)
	beta := newBlocker()
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{"alpha": answer("next", map[string]any{"n": 2}), "beta": beta})
	ctx := t.Context()
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	<-beta.started

	got, err := eng.Instance(inst.ID())
	if err != nil || got.ID() != inst.ID() {
		t.Fatalf("Instance(%s): got %v, %v", inst.ID(), got, err)
	}
	if _, err := eng.Instance("missing"); !errors.Is(err, engine.ErrUnknownInstance) {
		t.Errorf("Instance(missing): got %v, want ErrUnknownInstance", err)
	}
	res := inst.Result()
	if res.Status != record.StatusRunning || res.State != "SECOND" || res.Steps != 2 || res.Context["n"] != 2 || res.Err != nil {
		t.Errorf("got result %+v, want running in SECOND at step 2 with n=2", res)
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if res, err := inst.Wait(short); !errors.Is(err, context.Canceled) || res.Status != record.StatusRunning {
		t.Errorf("Wait with a done context: got %s, %v; want running and context.Canceled", res.Status, err)
	}
	select {
	case <-inst.Done():
		t.Errorf("Done is closed while the instance runs")
	default:
	}
	h := history(t, inst)
	if len(h) == 0 || h[0].Kind != record.KindStarted || h[0].Seq != 1 {
		t.Errorf("got history %s, want it to open with started (seq 1)", kinds(h))
	}
	for k := 1; k < len(h); k++ {
		if h[k].Seq != h[k-1].Seq+1 || h[k].Time.Before(h[k-1].Time) {
			t.Errorf("entry %d: got seq %d at %s after seq %d at %s, want consecutive and in time order", k, h[k].Seq, h[k].Time, h[k-1].Seq, h[k-1].Time)
		}
	}

	// Close cancels the running handler, leaves the instance as it was and
	// refuses new instances.
	if err := eng.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-beta.seen; !errors.Is(err, context.Canceled) {
		t.Errorf("handler saw %v after Close, want its context cancelled", err)
	}
	if _, err := eng.Start(ctx, nil); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Start after Close: got %v, want ErrClosed", err)
	}
	if err := eng.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The engine owns its transport: Close closed it.
	note := &transport.Message{Type: transport.MessageNotification, From: "alpha", To: "beta", Content: map[string]any{"action": "ping"}}
	if err := busOf(eng).Send(ctx, note); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send on the engine's bus after Close: got %v, want transport.ErrClosed", err)
	}
	if snap, err := eng.Store().Instance(ctx, inst.ID()); err != nil || snap.State != "SECOND" {
		t.Errorf("got stored snapshot %+v (%v), want it kept in SECOND", snap, err)
	}
}

func TestEngine_Pool_LongGoHandlerKeepsItsHandoff(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		// THIRD has no timeout; gamma works for longer than any acceptance
		// time-out a hand-off once had.
		slow := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			time.Sleep(45 * time.Second) // longer than any acceptance time-out a hand-off once had
			return registry.Outcome{Trigger: "next"}, nil
		})
		eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
			"alpha": answer("next", nil), "beta": answer("next", nil), "gamma": slow, "watch": answer("ignored", nil),
		})
		defer eng.Close()
		_, res := startAndWait(t, eng)
		wantCompleted(t, res, "DONE")
		// The final notice to the Go agent watch is taken by a worker after
		// the instance has completed: let the workers finish.
		synctest.Wait()
		if st := handoffStats(t, eng); st.Accepted != 3 {
			t.Errorf("got hand-off stats %+v, want all three accepted and none timed out", st)
		}
		if q := eng.AgentQueues()["beta"]; q.Queued != 0 || q.Sent != q.Taken {
			t.Errorf("got beta's queue %+v, want everything sent taken and nothing else", q)
		}
	})
}

// startAndWait starts an instance with no input and waits for its end.
func startAndWait(t *testing.T, eng *engine.Engine) (*engine.Instance, engine.Result) {
	t.Helper()
	inst, err := eng.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := inst.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return inst, res
}

// A cancel with a reason keeps it on the record and in the history; a
// cancelled instance's record holds no error, since it did not fail.
func TestEngine_Instance_CancelWithAReason(t *testing.T) {
	beta := newBlocker()
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{"alpha": answer("next", nil), "beta": beta})
	defer func() { _ = eng.Close() }()
	ctx := t.Context()
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	<-beta.started
	if err := inst.CancelWith(ctx, "the customer withdrew"); err != nil {
		t.Fatalf("CancelWith: %v", err)
	}
	<-beta.seen
	if _, err := inst.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	snap, err := eng.Store().Instance(ctx, inst.ID())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Status != record.StatusCanceled || snap.CancelReason != "the customer withdrew" || snap.Error != "" {
		t.Errorf("got status %s, reason %q, error %q; want canceled with the reason and no error", snap.Status, snap.CancelReason, snap.Error)
	}
	if got := entries(history(t, inst), record.KindCanceled); len(got) != 1 || got[0].Detail != "the customer withdrew" {
		t.Errorf("got canceled entries %+v, want one with the reason", got)
	}
}
