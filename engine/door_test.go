package engine_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// What the engine cannot keep it refuses at the door, naming the field, and
// nothing of the instance is started or stored.
func TestEngine_Start_RefusesDataNoStoreCanKeep(t *testing.T) {
	tests := []struct {
		name      string
		input     map[string]any
		wantField string
	}{
		{"NaN", map[string]any{"amount": math.NaN()}, "input.amount"},
		{"infinity in a list", map[string]any{"items": []any{1.0, math.Inf(1)}}, "input.items[1]"},
		{"invalid UTF-8", map[string]any{"note": map[string]any{"text": "caf\xe9"}}, "input.note.text"},
		{"a channel", map[string]any{"ch": make(chan int)}, "input.ch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := record.NewMemStore()
			eng := poolEngine(t, "chain.yaml", nil, engine.WithStore(store))
			defer eng.Close()
			_, err := eng.Start(t.Context(), tt.input)
			var ie *engine.InputError
			if !errors.As(err, &ie) || ie.Field != tt.wantField || !errors.Is(err, engine.ErrInvalidData) {
				t.Fatalf("got %v, want an *InputError naming %s", err, tt.wantField)
			}
			if snaps, _ := store.Instances(t.Context()); len(snaps) != 0 {
				t.Errorf("got %d instances in the store, want none", len(snaps))
			}
		})
	}
}

// A Go handler that answers with data no store can keep has failed its
// run, with kind invalid_result, and its state's retry policy applies; an
// external agent's report of such data is refused and changes nothing.
func TestEngine_Result_RefusedAtTheDoor(t *testing.T) {
	t.Run("go handler", func(t *testing.T) {
		r := newSimRun(t, "reject.yaml", map[string][]reply{
			"asker":    {ok("ask", nil)},
			"reviewer": {ok("reviewed", map[string]any{"score": math.NaN()}), ok("reviewed", map[string]any{"score": 1.0})},
		})
		res, h := r.finish(nil)
		wantCompleted(t, res, "DONE")
		ran := entries(h, record.KindAgentRun)
		if len(ran) != 3 || ran[1].ErrorKind != "invalid_result" || ran[1].Error == "" {
			t.Fatalf("got runs %+v, want the reviewer's first run failed with kind invalid_result", ran)
		}
		if n := len(entries(h, record.KindRetry)); n != 1 {
			t.Errorf("got %d retries, want 1", n)
		}
	})
	t.Run("external report", func(t *testing.T) {
		r := newSimRun(t, "reject.yaml", map[string][]reply{"asker": {ok("ask", nil)}})
		inst, err := r.eng.Start(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		r.runUntil(r.queued("reviewer"))
		m := receiveOne(t, busOf(r.eng), "reviewer")
		err = reportWork(t.Context(), r.eng, m, registry.Outcome{Trigger: "reviewed", Result: map[string]any{"x": math.Inf(-1)}}, nil)
		var ie *engine.InputError
		if !errors.As(err, &ie) || ie.Field != "result.x" {
			t.Fatalf("got %v, want an *InputError naming result.x", err)
		}
		if got := inst.Result(); got.State != "REVIEW" || got.Status != record.StatusRunning {
			t.Fatalf("got %s in %s, want the run still under way in REVIEW", got.Status, got.State)
		}
		if err := r.eng.Report(t.Context(), inst.ID(), 2, registry.Outcome{Trigger: "reviewed"}, nil); err != nil {
			t.Fatalf("a good report after the refused one: %v", err)
		}
		r.settle()
		wantCompleted(t, inst.Result(), "DONE")
	})
	t.Run("wire report", func(t *testing.T) {
		r := newSimRun(t, "reject.yaml", map[string][]reply{"asker": {ok("ask", nil)}})
		inst, err := r.eng.Start(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		r.runUntil(r.queued("reviewer"))
		bad := &wire.Report{InstanceID: inst.ID(), Step: 2, Agent: "reviewer", Trigger: "reviewed", Result: map[string]any{"x": math.Inf(-1)}}
		if ans := r.eng.HandleReport(t.Context(), bad); ans.Code != wire.CodeInvalid || !strings.Contains(ans.Message, "result.x") {
			t.Fatalf("got %+v, want invalid naming result.x", ans)
		}
		if got := inst.Result(); got.State != "REVIEW" || got.Status != record.StatusRunning {
			t.Fatalf("got %s in %s, want the run still under way in REVIEW", got.Status, got.State)
		}
		good := &wire.Report{InstanceID: inst.ID(), Step: 2, Agent: "reviewer", Trigger: "reviewed"}
		if ans := r.eng.HandleReport(t.Context(), good); !ans.OK {
			t.Fatalf("a good report after the refused one: %+v", ans)
		}
		r.settle()
		wantCompleted(t, inst.Result(), "DONE")
	})
}

// failingStore refuses every commit once told to.
type failingStore struct {
	*record.MemStore
	fail     atomic.Bool
	refusals atomic.Int64
}

func (s *failingStore) Commit(ctx context.Context, rec record.Step) error {
	if s.fail.Load() {
		s.refusals.Add(1)
		return errors.New("disk full")
	}
	return s.MemStore.Commit(ctx, rec)
}

// A step the store refuses is retried, then the instance stops: none of the
// step's work is sent, it fails visibly with a *CommitError, and the store
// keeps it at its last committed step, from which Resume continues it.
func TestEngine_Commit_RefusedStepSendsNothingAndResumes(t *testing.T) {
	store := &failingStore{MemStore: record.NewMemStore()}
	var betaRuns atomic.Int64
	alphaDone := make(chan struct{})
	handlers := map[string]registry.Handler{
		"alpha": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			store.fail.Store(true) // the step this outcome makes is refused
			close(alphaDone)
			return registry.Outcome{Trigger: "next"}, nil
		}),
		"beta": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			betaRuns.Add(1)
			return registry.Outcome{Trigger: "next"}, nil
		}),
		"gamma": answer("next", nil), "watch": answer("seen", nil),
	}
	var failed []engine.Event
	var mu sync.Mutex
	eng := poolEngine(t, "chain.yaml", handlers, engine.WithStore(store), engine.WithObserver(func(e engine.Event) {
		if e.Type == engine.EventFailed {
			mu.Lock()
			failed = append(failed, e)
			mu.Unlock()
		}
	}))
	inst, res := startAndWait(t, eng)
	var ce *engine.CommitError
	if res.Status != record.StatusFailed || !errors.As(res.Err, &ce) {
		t.Fatalf("got %s (%v), want failed with a *CommitError", res.Status, res.Err)
	}
	// Each refused step is tried three times; the engine may have tried
	// to resume the instance since, and been refused again.
	if n := store.refusals.Load(); n < 3 || n%3 != 0 {
		t.Errorf("got %d commit attempts refused, want three per step", n)
	}
	if n := betaRuns.Load(); n != 0 {
		t.Errorf("beta ran %d times, want 0: the refused step's work must not be sent", n)
	}
	mu.Lock()
	if len(failed) == 0 {
		t.Error("got no failed event")
	}
	for _, e := range failed {
		if e.Kind != "commit" {
			t.Errorf("got a failed event of kind %q, want commit", e.Kind)
		}
	}
	mu.Unlock()
	snap, err := store.Instance(t.Context(), inst.ID())
	if err != nil || snap.Status != record.StatusRunning || snap.State != "FIRST" || snap.Step != 1 {
		t.Fatalf("got stored %+v (%v), want running in FIRST at step 1", snap, err)
	}
	_ = eng.Close()

	// The store works again: a new engine continues the instance.
	store.fail.Store(false)
	eng2 := poolEngine(t, "chain.yaml", map[string]registry.Handler{
		"alpha": answer("next", nil), "beta": handlers["beta"], "gamma": answer("next", nil), "watch": answer("seen", nil),
	}, engine.WithStore(store))
	defer eng2.Close()
	rep, err := eng2.Resume(t.Context())
	if err != nil || len(rep.Resumed) != 1 {
		t.Fatalf("Resume: %+v %v, want the instance resumed", rep, err)
	}
	wantCompleted(t, waitFor(t, eng2, inst.ID()), "DONE")
}

// waitFor waits for the end of instance id as eng runs it now.
func waitFor(t *testing.T, eng *engine.Engine, id string) engine.Result {
	t.Helper()
	h, err := eng.Instance(id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// An instance whose step the store refused is resumed by the engine itself
// once the store works again: after a pause that grows while the store
// refuses, from its last committed step, without anyone calling Resume.
func TestEngine_Commit_RefusedStepResumesByItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &failingStore{MemStore: record.NewMemStore()}
		var alphaRuns, betaRuns atomic.Int64
		handlers := map[string]registry.Handler{
			"alpha": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
				if alphaRuns.Add(1) == 1 {
					store.fail.Store(true) // the step this first outcome makes is refused
				}
				return registry.Outcome{Trigger: "next"}, nil
			}),
			"beta": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
				betaRuns.Add(1)
				return registry.Outcome{Trigger: "next"}, nil
			}),
			"gamma": answer("next", nil), "watch": answer("seen", nil),
		}
		eng := poolEngine(t, "chain.yaml", handlers, engine.WithStore(store))
		defer eng.Close()
		inst, res := startAndWait(t, eng)
		var ce *engine.CommitError
		if !errors.As(res.Err, &ce) {
			t.Fatalf("got %s (%v), want failed with a *CommitError", res.Status, res.Err)
		}
		// The store refuses for a while: every try is refused, and nothing
		// of the refused steps is sent.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := store.refusals.Load(); n < 9 {
			t.Errorf("got %d commits refused in 10s, want the engine to have tried again", n)
		}
		if n := betaRuns.Load(); n != 0 {
			t.Errorf("beta ran %d times while the store refused, want 0", n)
		}
		store.fail.Store(false)
		time.Sleep(time.Minute) // past the longest pause between tries
		synctest.Wait()
		wantCompleted(t, waitFor(t, eng, inst.ID()), "DONE")
		if n := betaRuns.Load(); n != 1 {
			t.Errorf("beta ran %d times, want once", n)
		}
	})
}

// The very first step refused: Start returns the error, the instance was
// never accepted.
func TestEngine_Commit_RefusedFirstStepFailsStart(t *testing.T) {
	store := &failingStore{MemStore: record.NewMemStore()}
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{"alpha": answer("next", nil)}, engine.WithStore(store))
	defer eng.Close()
	store.fail.Store(true)
	_, err := eng.Start(t.Context(), nil)
	var ce *engine.CommitError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CommitError", err)
	}
	if q := eng.AgentQueues()["alpha"]; q.Sent != 0 {
		t.Errorf("got %+v, want nothing sent to alpha", q)
	}
}

// A burst of starts larger than the first agent's mailbox waits for room
// instead of failing instances that were accepted; a start whose context
// ends while it waits is refused with an *OverloadedError.
func TestEngine_Start_BackpressureWaitsForRoom(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		slow := registry.HandlerFunc(func(ctx context.Context, _ *registry.Task) (registry.Outcome, error) {
			<-release
			return registry.Outcome{Trigger: "ask"}, nil
		})
		// asker: queue 2, concurrency 1 (lane.yaml's reviewer shape).
		eng := poolEngine(t, "lane_first.yaml", map[string]registry.Handler{"asker": slow, "reviewer": answer("reviewed", nil)})
		defer eng.Close()
		const n = 8
		var wg sync.WaitGroup
		insts := make([]*engine.Instance, n)
		errs := make([]error, n)
		for k := range n {
			wg.Go(func() { insts[k], errs[k] = eng.Start(t.Context(), nil) })
		}
		synctest.Wait() // one runs, two wait in the mailbox, the rest wait at the door
		if q := eng.AgentQueues()["asker"]; q.Sent != 3 || q.Refused != 0 {
			t.Fatalf("got asker's queue %+v, want 3 accepted and none refused", q)
		}
		// A start that gives up waiting is refused, and nothing of it stays.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := eng.Start(ctx, nil); !errors.Is(err, engine.ErrOverloaded) {
			t.Fatalf("got %v, want ErrOverloaded once the context ended", err)
		}
		close(release)
		wg.Wait()
		for k := range n {
			if errs[k] != nil {
				t.Fatalf("start %d: %v", k, errs[k])
			}
			res, err := insts[k].Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			wantCompleted(t, res, "DONE")
		}
	})
}

// Ids from WithIDs may repeat: a second instance under a taken id is refused.
func TestEngine_Start_RefusesADuplicateID(t *testing.T) {
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
		"alpha": answer("next", nil), "beta": answer("next", nil), "gamma": answer("next", nil), "watch": answer("seen", nil),
	}, engine.WithIDs(func() string { return "same" }))
	defer eng.Close()
	first, err := eng.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Start(t.Context(), nil); !errors.Is(err, engine.ErrDuplicateInstance) {
		t.Fatalf("second start under the same id: got %v, want ErrDuplicateInstance", err)
	}
}

// Nil contexts and values are errors, never panics.
func TestEngine_NilInputsAreErrors(t *testing.T) {
	w := loadRefund(t)
	eng, err := newEngine(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var nilCtx context.Context
	if _, err := eng.Start(nilCtx, nil); err == nil {
		t.Error("Start(nil ctx): want an error")
	}
	if err := eng.Report(nilCtx, "x", 1, registry.Outcome{}, nil); err == nil {
		t.Error("Report(nil ctx): want an error")
	}
	if ans := eng.HandleReport(t.Context(), nil); ans.OK {
		t.Error("HandleReport(nil): want a refusal")
	}
	if _, err := eng.Resume(nilCtx); err == nil {
		t.Error("Resume(nil ctx): want an error")
	}
	if _, err := engine.StoredWorkflow(t.Context(), nil, "h"); err == nil {
		t.Error("StoredWorkflow(nil store): want an error")
	}
	if _, err := engine.NewRegistry(nil, nil); err == nil {
		t.Error("NewRegistry(nil): want an error")
	}
	inst, err := eng.Start(t.Context(), refundagents.Input())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Wait(nilCtx); err == nil {
		t.Error("Wait(nil ctx): want an error")
	}
	if err := inst.Cancel(nilCtx); err == nil {
		t.Error("Cancel(nil ctx): want an error")
	}
	if err := inst.Select(nilCtx, "x", ""); err == nil {
		t.Error("Select(nil ctx): want an error")
	}
	if _, err := inst.History(nilCtx); err == nil {
		t.Error("History(nil ctx): want an error")
	}
}

// StartID starts under the caller's id once; the same id again is refused.
func TestEngine_StartID(t *testing.T) {
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
		"alpha": answer("next", nil), "beta": answer("next", nil), "gamma": answer("next", nil), "watch": answer("seen", nil),
	})
	defer eng.Close()
	inst, err := eng.StartID(t.Context(), "order-7", nil)
	if err != nil || inst.ID() != "order-7" {
		t.Fatalf("got %v (%v), want order-7 started", inst, err)
	}
	if _, err := inst.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.StartID(t.Context(), "order-7", nil); !errors.Is(err, engine.ErrDuplicateInstance) {
		t.Fatalf("got %v, want ErrDuplicateInstance", err)
	}
}

// An id a caller may not choose is refused with an *IDError before
// anything starts; the longest allowed id starts and finishes.
func TestEngine_StartID_RefusesInvalidIDs(t *testing.T) {
	store := record.NewMemStore()
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
		"alpha": answer("next", nil), "beta": answer("next", nil), "gamma": answer("next", nil), "watch": answer("seen", nil),
	}, engine.WithStore(store))
	defer eng.Close()
	for _, tc := range []struct{ name, id string }{
		{"empty", ""},
		{"one byte too long", strings.Repeat("x", record.MaxIDLen+1)},
		{"3000 bytes", strings.Repeat("x", 3000)},
		{"not UTF-8", "order-\xff"},
		{"control character", "order\n7"},
		{"dot", "."},
		{"dot dot", ".."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eng.StartID(t.Context(), tc.id, nil)
			var ie *engine.IDError
			if !errors.As(err, &ie) || !errors.Is(err, engine.ErrInvalidID) || ie.ID != tc.id || ie.Reason == "" {
				t.Fatalf("got %v, want an *IDError for %.20q", err, tc.id)
			}
		})
	}
	if snaps, _ := store.Instances(t.Context()); len(snaps) != 0 {
		t.Fatalf("got %d instances stored, want none", len(snaps))
	}
	longest := strings.Repeat("é", record.MaxIDLen/2)
	inst, err := eng.StartID(t.Context(), longest, nil)
	if err != nil {
		t.Fatalf("an id of exactly %d bytes: %v", record.MaxIDLen, err)
	}
	if res, err := inst.Wait(t.Context()); err != nil || res.Status != record.StatusCompleted {
		t.Fatalf("got %v (%v), want completed", res.Status, err)
	}
}

// Instance ids sort in the order the instances started (UUID version 7), so
// that stores keyed by id append instead of writing all over their index.
func TestEngine_IDsSortByStart(t *testing.T) {
	eng := poolEngine(t, "chain.yaml", map[string]registry.Handler{
		"alpha": answer("next", nil), "beta": answer("next", nil), "gamma": answer("next", nil), "watch": answer("seen", nil),
	})
	defer eng.Close()
	var prev string
	for range 50 {
		inst, err := eng.Start(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if id := inst.ID(); len(id) != 36 || id[14] != '7' || id <= prev {
			t.Fatalf("got id %q after %q, want UUID v7 ids in increasing order", id, prev)
		} else {
			prev = id
		}
	}
}

// A handler for an agent the workflow does not declare is refused, with a
// did-you-mean: a typo would otherwise leave the agent external and its
// work waiting for nobody.
func TestNewRegistry_RefusesAnUndeclaredAgent(t *testing.T) {
	w := loadWorkflow(t, "chain.yaml")
	_, err := engine.NewRegistry(w, map[string]registry.Handler{"alpha": answer("next", nil), "betta": answer("next", nil)})
	var ue *registry.UnknownAgentError
	if !errors.As(err, &ue) || ue.ID != "betta" || ue.Suggestion != "beta" || !strings.Contains(err.Error(), `did you mean "beta"?`) {
		t.Fatalf("got %v, want the undeclared agent betta refused with a did-you-mean beta", err)
	}
}

// When the first agent is external, a burst of starts larger than its
// mailbox is refused at the door with an *OverloadedError, never accepted
// and then failed; room made by the agent taking work lets starts in again.
func TestEngine_Start_ExternalFirstAgentRefusesWhenTheMailboxIsFull(t *testing.T) {
	store := record.NewMemStore()
	// asker (external): a mailbox of 2.
	eng := poolEngine(t, "lane_first.yaml", map[string]registry.Handler{"reviewer": answer("reviewed", nil)}, engine.WithStore(store))
	defer eng.Close()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for k := range n {
		wg.Go(func() { _, errs[k] = eng.Start(t.Context(), nil) })
	}
	wg.Wait()
	var started, refused int
	for _, err := range errs {
		var over *engine.OverloadedError
		switch {
		case err == nil:
			started++
		case errors.As(err, &over) && over.Agent == "asker" && over.Capacity == 2:
			refused++
		default:
			t.Errorf("got %v, want nil or an OverloadedError naming asker", err)
		}
	}
	// A start whose work has just entered the mailbox still counts as under
	// way for a moment, so a concurrent start may be refused with room left
	// (a refusal the client retries): what the door guarantees is that it
	// never lets in more than the mailbox holds, and lets some in.
	if started < 1 || started > 2 || started+refused != n {
		t.Fatalf("got %d started and %d refused, want 1 or 2 started and the rest refused", started, refused)
	}
	snaps, err := store.Instances(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != started {
		t.Errorf("got %d instances in the store, want the %d accepted", len(snaps), started)
	}
	if s := busOf(eng).Metrics(); s.DeadLettered != 0 {
		t.Errorf("got %d dead letters, want none: refused starts send nothing", s.DeadLettered)
	}
	// Room made by the agent taking work lets a start in again.
	if got, err := busOf(eng).Receive("asker", started); err != nil || len(got) != started {
		t.Fatalf("Receive: %v %v", got, err)
	}
	if _, err := eng.Start(t.Context(), nil); err != nil {
		t.Errorf("start after room was made: %v", err)
	}
}
