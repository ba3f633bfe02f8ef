package natsbus_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// queuedRefund is the refund example with a customer work stream of
// capacity messages.
func queuedRefund(t *testing.T, capacity string) *rules.Workflow {
	t.Helper()
	src, err := os.ReadFile("../examples/refund/workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const decl = "customer:     {type: support}"
	if !strings.Contains(string(src), decl) {
		t.Fatalf("the refund example no longer declares %q", decl)
	}
	src = []byte(strings.Replace(string(src), decl, "customer: {type: support, queue: "+capacity+"}", 1))
	w, err := rules.Parse("workflow.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// storedEngine is an engine on natsbus and a store that outlives it,
// answering reports; close shuts it down as a graceful stop does.
type storedEngine struct {
	eng  *engine.Engine
	tr   *natsbus.Transport
	stop func() error

	mu     sync.Mutex
	failed []string // the instances that failed, as the observers see it
}

func (se *storedEngine) failures() []string {
	se.mu.Lock()
	defer se.mu.Unlock()
	return append([]string(nil), se.failed...)
}

func startStoredEngine(t *testing.T, nc *nats.Conn, w *rules.Workflow, store record.Store) *storedEngine {
	t.Helper()
	se := &storedEngine{}
	se.eng, se.tr = newEngine(t, nc, w, nil, engine.WithStore(store), engine.WithObserver(func(e engine.Event) {
		if e.Type == engine.EventFailed {
			se.mu.Lock()
			se.failed = append(se.failed, e.InstanceID)
			se.mu.Unlock()
		}
	}))
	se.stop = serveReports(t, nc, se.eng)
	return se
}

func (se *storedEngine) close() {
	_ = se.stop()
	_ = se.eng.Close()
	_ = se.tr.Close()
}

// An engine restarted (graceful stop, then Resume on the same store) while
// the first agent's work stream is full of the work it sent before, and
// no agent runs, fails none of the instances it had accepted: the work it
// sends again finds the stream full and waits, with no dead letter. Once
// an agent runs, every instance completes with each step applied once.
func TestResume_FullWorkStreamFailsNoInstance(t *testing.T) {
	ns := startServer(t, false)
	nc := connect(t, ns)
	store, err := natsstore.Open(context.Background(), nc, natsstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	const capacity = 6
	w := queuedRefund(t, "6")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	first := startStoredEngine(t, nc, w, store)
	var ids []string
	for range capacity + 3 {
		inst, err := first.eng.Start(ctx, refundInput)
		switch {
		case err == nil:
			ids = append(ids, inst.ID())
		case !errors.Is(err, engine.ErrOverloaded):
			t.Fatalf("Start: %v", err)
		}
	}
	if len(ids) != capacity {
		t.Fatalf("got %d starts accepted, want %d (the customer's stream)", len(ids), capacity)
	}
	first.close()

	second := startStoredEngine(t, nc, w, store)
	dl, _ := collect(second.tr)
	rep, err := second.eng.Resume(ctx)
	if err != nil || len(rep.Resumed) != capacity || len(rep.Failed) != 0 {
		t.Fatalf("Resume: %+v (%v), want %d resumed", rep, err, capacity)
	}
	if got := second.failures(); len(got) != 0 {
		t.Fatalf("got instances %v failed on resume, want none", got)
	}
	if got := dl.all(); len(got) != 0 {
		t.Fatalf("got dead letters %v, want none: the resent work waits for room", got)
	}

	var runs runCounter
	startWorker(t, connect(t, ns), runs.wrap(refundagents.Approved()), nil)
	insts := make([]*engine.Instance, len(ids))
	for k, id := range ids {
		if insts[k], err = second.eng.Instance(id); err != nil {
			t.Fatal(err)
		}
	}
	wantCompleted(ctx, t, insts)
	wantEachStepOnce(t, insts, &runs)
	if got := second.failures(); len(got) != 0 {
		t.Errorf("got instances %v failed, want none", got)
	}
	for _, d := range dl.all() {
		t.Errorf("got a dead letter %s of %s (%s), want none", d.Reason, d.Message.Key(), d.LastError)
	}
}
