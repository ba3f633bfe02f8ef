//go:build go1.26 && !go1.27

package jsonvalue

import (
	"maps"
	"math/bits"
	"strconv"
	"testing"
)

// entries reads m as the walk does: from its group when m is small.
func entries(m map[string]any) (map[string]any, bool) {
	g, full, ok := smallGroup(m)
	if !ok {
		return nil, false
	}
	got := make(map[string]any)
	for ; full != 0; full &= full - 1 {
		s := &g.slots[bits.TrailingZeros64(full)>>3]
		got[s.key] = s.elem
	}
	return got, true
}

func TestSmallGroup_ReadsWhatRangeReads(t *testing.T) {
	if !smallMaps {
		t.Fatal("got smallMaps false, want the runtime's layout recognised on this Go release")
	}
	for n := range 12 {
		for _, shape := range []string{"inserted", "with deletes", "cleared and refilled", "made with a hint", "grown then shrunk"} {
			t.Run(strconv.Itoa(n)+" "+shape, func(t *testing.T) {
				var m map[string]any
				switch shape {
				case "made with a hint":
					m = make(map[string]any, 64)
				case "grown then shrunk":
					m = make(map[string]any)
					for i := range 20 {
						m["x"+strconv.Itoa(i)] = i
					}
					clear(m)
				default:
					m = make(map[string]any)
				}
				for i := range n {
					m["k"+strconv.Itoa(i)] = []any{i, "v"}[i%2]
				}
				switch shape {
				case "with deletes":
					delete(m, "k0")
					delete(m, "k3")
				case "cleared and refilled":
					clear(m)
					for i := range n / 2 {
						m["r"+strconv.Itoa(i)] = float64(i)
					}
				}
				got, ok := entries(m)
				// A map that never held more than 8 entries nor was
				// made for more is small: it must be read.
				small := n <= 8 && len(m) > 0 && (shape == "inserted" || shape == "with deletes" || shape == "cleared and refilled")
				if !ok {
					if small {
						t.Fatalf("got a small map of %d entries not read, want it read", len(m))
					}
					return
				}
				if !maps.Equal(got, m) {
					t.Errorf("got %v, want %v", got, m)
				}
			})
		}
	}
}
