package check

import (
	"context"
	"testing"

	"github.com/batonhq/baton/internal/cputime"
	"github.com/batonhq/baton/rules"
)

// BenchmarkExplore measures explored runs per second on the refund example,
// one run after the other (one core).
func BenchmarkExplore(b *testing.B) {
	w, err := rules.LoadBeside("../examples/refund/workflow.yaml")
	if err != nil {
		b.Fatal(err)
	}
	x, err := newExplorer(w, ExploreOptions{Seed: 1, Path: w.File, AllowLimits: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	cpu0 := cputime.Process()
	for b.Loop() {
		if r := x.runIndex(ctx, i); r.err != nil {
			b.Fatal(r.err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	// Runs per second of CPU time: on a shared machine, wall time counts the
	// neighbours' work too.
	if cpu := cputime.Process() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "cpu-runs/s")
	}
}
