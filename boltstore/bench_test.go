package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/record"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// storeKinds are the stores every benchmark compares: the in-memory default
// and the bbolt file with an fsync per commit, without fsync, and with the
// commits of concurrent instances grouped.
var storeKinds = []struct {
	name string
	opts []boltstore.Option // nil: record.MemStore
}{
	{"mem", nil},
	{"fsync", []boltstore.Option{}},
	{"nosync", []boltstore.Option{boltstore.WithNoSync(true)}},
	{"batch", []boltstore.Option{boltstore.WithBatch(256)}},
}

func benchStore(b *testing.B, opts []boltstore.Option) record.Store {
	b.Helper()
	if opts == nil {
		return record.NewMemStore()
	}
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkCommit commits one step of 5 entries at a time, from one
// goroutine (serial) and from 64 (parallel, where batching can group them).
func BenchmarkCommit(b *testing.B) {
	for _, mode := range []string{"serial", "parallel"} {
		for _, k := range storeKinds {
			b.Run(mode+"/"+k.name, func(b *testing.B) {
				s := benchStore(b, k.opts)
				ctx := context.Background()
				var ids atomic.Int64
				work := func(next func() bool) {
					id := fmt.Sprintf("inst-%d", ids.Add(1))
					rec := step(id, 1)
					rec.Entries = append(rec.Entries, rec.Entries[:2]...)
					for n := 1; next(); n++ {
						rec.Snapshot.Step = n
						if err := s.Commit(ctx, rec); err != nil {
							b.Error(err)
							return
						}
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				if mode == "serial" {
					work(b.Loop)
					return
				}
				b.SetParallelism(32)
				b.RunParallel(func(pb *testing.PB) { work(pb.Next) })
			})
		}
	}
}

// BenchmarkEngineRefundDurable runs whole refund instances (4 steps each),
// 500 in flight, started by as many callers (as the requests of a server
// would), on each kind of store, and reports steps per second. The engine
// has 64 workers: with an fsync per commit a worker waits on the disk, and
// only concurrent commits give batching something to group.
func BenchmarkEngineRefundDurable(b *testing.B) {
	const inFlight = 500
	w, err := rules.Load("../examples/refund/workflow.yaml")
	if err != nil {
		b.Fatal(err)
	}
	input := map[string]any{"order_id": "1", "amount": 50}
	for _, k := range storeKinds {
		b.Run(k.name, func(b *testing.B) {
			reg, err := engine.NewRegistry(w, refundagents.Approved())
			if err != nil {
				b.Fatal(err)
			}
			tr := bus.New(bus.WithAckMessages(false)) // senior_seller's, never reached here
			defer tr.Close()
			eng, err := engine.New(w, reg, engine.WithStore(benchStore(b, k.opts)), engine.WithWorkers(64), engine.WithTransport(tr))
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
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
			b.ReportMetric(float64(4*b.N)/time.Since(start).Seconds(), "steps/s")
		})
	}
}
