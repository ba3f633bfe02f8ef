package feature_test

import (
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// benchGuard sends and takes one message at a time through tr, which
// wraps b, so that the figure is the guard's cost over the bus's own
// (BenchmarkGuards/bare).
func benchGuard(b *testing.B, bb *bus.Bus, tr transport.Transport) {
	ctx := b.Context()
	m := transport.Message{Type: transport.MessageRequest, From: "A", To: "B", Content: map[string]any{"action": "a"}}
	b.ReportAllocs()
	for b.Loop() {
		c := m
		if err := tr.SendWork(ctx, &c); err != nil {
			b.Fatal(err)
		}
		if _, ok, err := bb.TryReceive("B"); !ok || err != nil {
			b.Fatal("nothing received", err)
		}
	}
}

func BenchmarkGuards(b *testing.B) {
	clk := clock.Real()
	for _, tc := range []struct {
		name string
		wrap func(transport.Transport) transport.Transport
	}{
		{"bare", func(tr transport.Transport) transport.Transport { return tr }},
		{"rate_limiter", func(tr transport.Transport) transport.Transport {
			return feature.NewRateLimiter(tr, feature.RateLimits{Outbound: 1e12, Inbound: 1e12, Burst: 1 << 30}, clk)
		}},
		{"breakers", func(tr transport.Transport) transport.Transport {
			return feature.NewBreakers(tr, feature.BreakerSettings{}, clk)
		}},
		{"pressure_gauge", func(tr transport.Transport) transport.Transport {
			return feature.NewPressureGauge(tr, feature.Backpressure{}, clk)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bb := bus.New()
			defer bb.Close()
			if err := bb.Register("B"); err != nil {
				b.Fatal(err)
			}
			tr := tc.wrap(bb)
			if c, ok := tr.(interface{ Close() error }); ok && tr != transport.Transport(bb) {
				defer c.Close()
			}
			benchGuard(b, bb, tr)
		})
	}
}
