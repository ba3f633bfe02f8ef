package engine_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/registry"
)

// BenchmarkFloorStep is the least a Go step of BenchmarkEngineRefund
// needs, to compare the engine with in one run: per step the instance goes
// over a channel to one of two workers, which arms a timeout, calls the
// agent's handler with a task, stops the timeout, merges the result into
// a copy of the instance's context (the committed one is never changed),
// picks the next agent by the trigger and appends one entry to the
// instance's history; b.N instances of the refund's 4 steps, up to
// 500 at a time, with the cpu-ns/step metric of BenchmarkEngineRefund.
// Nothing is kept once an instance ends.
func BenchmarkFloorStep(b *testing.B) {
	hs := refundagents.Approved()
	next := map[string]string{"validated": "seller", "reviewed": "payment", "refunded": "notification"}
	type entry struct {
		at      time.Time
		agent   string
		trigger string
		result  map[string]any
	}
	type floorInst struct {
		agent   string
		step    int
		ctx     map[string]any
		history []entry
	}
	const window = 500
	ctx := context.Background()
	// At most window instances are in flight, each in work at most once:
	// no send on work blocks.
	work := make(chan *floorInst, window)
	slots := make(chan struct{}, window)
	var ended sync.WaitGroup
	var workers sync.WaitGroup
	for range 2 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for in := range work {
				in.step++
				timeout := time.AfterFunc(time.Minute, func() {})
				out, err := hs[in.agent].Handle(ctx, &registry.Task{Agent: in.agent, Step: in.step, Context: in.ctx})
				timeout.Stop()
				if err != nil {
					b.Error(err)
				}
				if len(out.Result) > 0 {
					c := maps.Clone(in.ctx)
					maps.Copy(c, out.Result)
					in.ctx = c
				}
				in.history = append(in.history, entry{at: time.Now(), agent: in.agent, trigger: out.Trigger, result: out.Result})
				if to, ok := next[out.Trigger]; ok {
					in.agent = to
					work <- in
					continue
				}
				<-slots
				ended.Done()
			}
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for range b.N {
		slots <- struct{}{} // as the refund benchmark waits for the 500th instance back
		ended.Add(1)
		work <- &floorInst{agent: "customer", ctx: refundInput, history: make([]entry, 0, 4)}
	}
	ended.Wait()
	reportSteps(b, 4*b.N, start, cpu0)
	b.StopTimer()
	close(work)
	workers.Wait()
}
