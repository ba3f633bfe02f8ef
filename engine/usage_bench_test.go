package engine_test

import (
	"context"
	"testing"

	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/registry"
)

// withUsage wraps the refund agents so that every run reports usage u, as
// a model agent does. The sub-benchmarks below compare u zero ("none") with
// u set ("reported") behind the same wrapper, so that the difference is the
// cost of usage accounting alone: the totals per instance, per agent and
// per visit, and the agent_run entries and the snapshot carrying them.
func withUsage(hs map[string]registry.Handler, report bool) map[string]registry.Handler {
	out := make(map[string]registry.Handler, len(hs))
	for id, h := range hs {
		var u registry.Usage
		if report {
			u = registry.Usage{InputTokens: 1200, OutputTokens: 300, Cost: 0.0042, Model: "model-" + id}
		}
		out[id] = registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
			o, err := h.Handle(ctx, t)
			o.Usage = u
			return o, err
		})
	}
	return out
}

// BenchmarkEngineRefund_Usage is BenchmarkEngineRefund with agents that
// report no usage and with agents that report usage on every run.
func BenchmarkEngineRefund_Usage(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchRefundWith(b, withUsage(refundagents.Approved(), false)) })
	b.Run("reported", func(b *testing.B) { benchRefundWith(b, withUsage(refundagents.Approved(), true)) })
}

// BenchmarkEngineRefundSim_Usage is the same on the simulator, with a
// store that keeps nothing: the engine's own cost per step, without
// scheduling noise.
func BenchmarkEngineRefundSim_Usage(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchRefundSimWith(b, discardStore{}, withUsage(refundagents.Approved(), false)) })
	b.Run("reported", func(b *testing.B) {
		benchRefundSimWith(b, discardStore{}, withUsage(refundagents.Approved(), true))
	})
}
