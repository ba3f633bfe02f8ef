package merge_test

import (
	"testing"

	"github.com/batonhq/baton/merge"
)

// BenchmarkDecide merges three replies, as a flight/hotel/car parallel
// state would, with each strategy.
func BenchmarkDecide(b *testing.B) {
	replies := []merge.Reply{
		{Agent: "flight", Option: "A", Confidence: 0.7, Priority: 2, Order: 2},
		{Agent: "hotel", Option: "B", Confidence: 0.9, Priority: 5, Order: 0},
		{Agent: "car", Option: "B", Confidence: 0.6, Priority: 5, Order: 1},
	}
	for _, s := range merge.Strategies() {
		b.Run(string(s), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := merge.Decide(s, replies, travel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOptionOfAndMap covers the engine's other calls per merge: reading
// each reply from its result map and exposing the decision to rules.
func BenchmarkOptionOfAndMap(b *testing.B) {
	result := map[string]any{"option": "B", "confidence": 0.9}
	d, err := merge.Decide(merge.WeightedVote, []merge.Reply{{Agent: "a", Option: "A"}, {Agent: "b", Option: "B"}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("OptionOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if o, _ := merge.OptionOf(result); o != "B" {
				b.Fatal(o)
			}
		}
	})
	b.Run("Map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if m := d.Map(); len(m) != 6 {
				b.Fatal(m)
			}
		}
	})
}
