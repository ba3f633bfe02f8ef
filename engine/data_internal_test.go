package engine

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/jsonvalue"
)

// Checking good data at the door costs no allocation: paths are built only
// for a failure.
func TestCheckData_GoodDataDoesNotAllocate(t *testing.T) {
	data := map[string]any{
		"order_id": "12345", "amount": 50.5, "items": []any{map[string]any{"sku": "a", "n": 2}, "x", true, nil},
		"tags": []string{"a", "b"}, "deep": map[string]any{"k": map[string]any{"v": int64(1)}},
	}
	if n := testing.AllocsPerRun(100, func() { _ = checkData("input", data) }); n != 0 {
		t.Errorf("got %v allocations, want 0", n)
	}
}

func TestCheckData_TooDeepAndTooLarge(t *testing.T) {
	deep := map[string]any{}
	cur := deep
	for range jsonvalue.MaxDepth + 2 {
		next := map[string]any{}
		cur["d"] = next
		cur = next
	}
	if err := checkData("input", deep); err == nil || !strings.Contains(err.Reason, "nests deeper") || !strings.HasPrefix(err.Field, "input.d.d") {
		t.Errorf("got %v, want the depth refused with its path", err)
	}
	big := map[string]any{"blob": strings.Repeat("x", MaxData)}
	if err := checkData("result", big); err == nil || err.Field != "result" || !strings.Contains(err.Reason, "bytes as JSON") {
		t.Errorf("got %v, want the size refused", err)
	}
}
