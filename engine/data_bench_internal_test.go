package engine

import (
	"strings"
	"testing"
)

// BenchmarkCheckData measures the door an agent's result passes: a small
// result, and one of half the limit.
func BenchmarkCheckData(b *testing.B) {
	small := map[string]any{
		"order_id": "12345", "amount": 50.5, "approval": "APPROVED",
		"items": []any{map[string]any{"sku": "a", "n": 2, "price": 19.99}, map[string]any{"sku": "b", "n": 1, "price": 5.0}},
		"notes": "customer asked for a refund <after> 14 days", "tags": []string{"refund", "vip"},
	}
	large := map[string]any{"blob": strings.Repeat("x", MaxData/2), "list": []any{1.5, "y", true}}
	for _, c := range []struct {
		name string
		data map[string]any
	}{{"small", small}, {"half_limit", large}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := checkData("result", c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
