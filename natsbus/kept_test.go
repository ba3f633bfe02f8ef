package natsbus_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/natsbus"
)

// silentEngine is an engine running the refund example on a natsbus
// transport that does not answer reports until serve is called, the way
// a server that is still starting does not; a spy on the reports subject
// counts the reports sent meanwhile (and answers none of them).
type silentEngine struct {
	eng     *engine.Engine
	nc      *nats.Conn
	reports atomic.Int64
}

func newSilentEngine(t *testing.T, nc *nats.Conn) *silentEngine {
	t.Helper()
	eng, _ := newEngine(t, nc, loadRefund(t), memStorage)
	s := &silentEngine{eng: eng, nc: nc}
	spy, err := nc.Subscribe(natsbus.ReportsSubject, func(*nats.Msg) { s.reports.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spy.Unsubscribe() })
	return s
}

// serve makes the engine answer reports from now on.
func (s *silentEngine) serve(t *testing.T) {
	t.Helper()
	serveReports(t, s.nc, s.eng)
}

// keptOutcomeApplied starts one refund while no engine answers reports,
// lets the worker report its first step's outcome several times, then
// has the engine answer: the instance completes with each step applied
// once, and the first agent ran once however often its report went
// unanswered.
func keptOutcomeApplied(t *testing.T, change func(*natsbus.Config), cfg natsbus.WorkerConfig) *natsbus.Transport {
	ns := startServer(t, false)
	se := newSilentEngine(t, connect(t, ns))
	var runs runCounter
	cfg.ReportTimeout = 50 * time.Millisecond // the spy never answers: do not wait long for it
	wk := runWorker(t, connect(t, ns), runs.wrap(refundagents.Approved()), func(c *natsbus.Config) {
		memStorage(c)
		change(c)
	}, cfg)
	ctx, inst := startInstance(t, se.eng, refundInput)
	waitFor(t, "four unanswered reports", func() bool { return se.reports.Load() >= 4 })
	se.serve(t)
	res, err := inst.Wait(ctx)
	if err != nil || res.Outcome != "COMPLETED" || res.Steps != 4 {
		t.Fatalf("got %s %s after %d steps (%v, %v), want COMPLETED after 4", res.Status, res.Outcome, res.Steps, res.Err, err)
	}
	wantEachStepOnce(t, []*engine.Instance{inst}, &runs)
	runs.mu.Lock()
	defer runs.mu.Unlock()
	if n := runs.runs[inst.ID()+":1"]; n != 1 {
		t.Errorf("the first agent ran %d times while its reports went unanswered, want once", n)
	}
	return wk.tr
}

// A worker whose reports no engine answers holds the work and reports
// the kept outcome again, with a growing pause, instead of giving the work
// back to be run again: the handler runs once, the work is not delivered
// again (with two deliveries allowed, a second one would have been the
// last), and once an engine answers the kept outcome is applied.
func TestWorker_UnansweredReport_HeldAndReportedAgain(t *testing.T) {
	wtr := keptOutcomeApplied(t, func(c *natsbus.Config) { c.MaxDeliveries = 2 }, natsbus.WorkerConfig{})
	if s := wtr.Metrics(); s.DeadLettered != 0 {
		t.Errorf("got %d dead letters, want none: held work is not delivered again", s.DeadLettered)
	}
}

// A worker that gives back work whose report no engine answered (its hold
// is over) reports the kept outcome on each later delivery of that work
// instead of running the handler again; once an engine answers, the kept
// outcome is applied.
func TestWorker_UnansweredReport_RedeliveryReportsTheKeptOutcome(t *testing.T) {
	keptOutcomeApplied(t, func(c *natsbus.Config) { c.MaxDeliveries = 50 }, natsbus.WorkerConfig{Hold: time.Nanosecond})
}
