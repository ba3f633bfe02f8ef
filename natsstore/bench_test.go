package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/cputime"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// syncModes are the server settings every benchmark compares: an fsync
// before each write is acknowledged (the default), and a flush every 100ms.
var syncModes = []struct {
	name string
	sync time.Duration
}{{"SyncEveryWrite", 0}, {"SyncInterval100ms", 100 * time.Millisecond}}

// benchStep is step n of instance id as a refund step writes it: a
// snapshot, two history entries and an outbox item settling the previous
// step's.
func benchStep(id string, n int, now time.Time) record.Step {
	return record.Step{
		Snapshot: record.Snapshot{
			ID: id, Workflow: "refund", Version: 1, Hash: "sha256:x", Status: record.StatusRunning,
			State: "REVIEWING", Step: n, Commits: n, Visits: map[string]int{"REVIEWING": 1},
			Input: map[string]any{"order_id": "1", "amount": 50}, Context: map[string]any{"order_id": "1"},
			Created: now, Updated: now,
		},
		Entries: []record.Entry{
			{Seq: 2*n - 1, Kind: record.KindAgentRun, Step: n, Agent: "seller", Result: map[string]any{"approval": "APPROVED"}, Time: now},
			{Seq: 2 * n, Kind: record.KindRuleFired, Step: n, Rule: "approved", To: "payment", Time: now},
		},
		Outbox:  []record.Outgoing{{Key: fmt.Sprintf("%s:%d", id, n), Kind: record.OutgoingDispatch, Step: n, State: "REVIEWING", To: "seller", Created: now}},
		Settled: []string{fmt.Sprintf("%s:%d", id, n-1)},
	}
}

// BenchmarkNATSStoreCommit commits steps on an in-process server, from one
// goroutine (serial: each commit's latency) and from 64 at once on as many
// instances (parallel: what concurrent instances get), with each sync mode.
func BenchmarkNATSStoreCommit(b *testing.B) {
	for _, mode := range []string{"serial", "parallel"} {
		for _, sm := range syncModes {
			b.Run(mode+"/"+sm.name, func(b *testing.B) {
				srv := startServer(b, natsserver.Config{SyncInterval: sm.sync})
				s := openStore(b, srv, natsstore.Config{})
				ctx := context.Background()
				now := time.Now().UTC()
				var ids atomic.Int64
				work := func(next func() bool) {
					id := fmt.Sprintf("inst-%d", ids.Add(1))
					for n := 1; next(); n++ {
						if err := s.Commit(ctx, benchStep(id, n, now)); err != nil {
							b.Error(err)
							return
						}
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				if mode == "serial" {
					work(b.Loop)
				} else {
					b.SetParallelism(32)
					b.RunParallel(func(pb *testing.PB) { work(pb.Next) })
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}

// BenchmarkNATSRefund runs whole refund instances (4 steps each) on an
// engine keeping them in a NATS store on an in-process server, 500 in
// flight, and reports steps per second and the CPU time (of the process,
// server included) per step.
func BenchmarkNATSRefund(b *testing.B) {
	const inFlight = 500
	w, err := rules.Load("../examples/refund/workflow.yaml")
	if err != nil {
		b.Fatal(err)
	}
	input := map[string]any{"order_id": "1", "amount": 50}
	for _, sm := range syncModes {
		b.Run(sm.name, func(b *testing.B) {
			srv := startServer(b, natsserver.Config{SyncInterval: sm.sync})
			st := openStore(b, srv, natsstore.Config{})
			reg, err := engine.NewRegistry(w, refundagents.Approved())
			if err != nil {
				b.Fatal(err)
			}
			tr := bus.New(bus.WithAckMessages(false)) // senior_seller's, never reached here
			defer tr.Close()
			eng, err := engine.New(w, reg, engine.WithStore(st), engine.WithWorkers(64), engine.WithTransport(tr))
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range min(inFlight, b.N) {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						inst, err := eng.Start(ctx, input)
						if err != nil {
							b.Error(err)
							return
						}
						if res, _ := inst.Wait(ctx); res.Outcome != "COMPLETED" {
							b.Errorf("got %s %s (%v), want COMPLETED", res.Status, res.Outcome, res.Err)
							return
						}
					}
				})
			}
			wg.Wait()
			steps := float64(4 * b.N)
			b.ReportMetric(steps/time.Since(start).Seconds(), "steps/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/steps, "cpu-µs/step")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration { return cputime.Process() }
