package handoff

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestJSONSize_MatchesMarshal(t *testing.T) {
	values := map[string]any{
		"nil":          nil,
		"true":         true,
		"false":        false,
		"empty string": "",
		"escapes":      "a\"b\\c\n\r\t\b\f\x00\x1f<>&\u2028\u2029é漢\U0001F600",
		"invalid utf8": "ab\xff\xfe",
		"ints":         []any{0, -1, int8(-128), int16(300), int32(-70000), int64(math.MinInt64), uint(7), uint8(255), uint16(65535), uint32(1 << 31), uint64(math.MaxUint64)},
		"floats":       []any{0.0, -0.0, 1.5, -2.25, 1e-6, 9.99e-7, 1e-7, 1.234e-300, 1e20, 1e21, 123456789012345678901234.0, float32(0.1), float32(1e-7), float32(3e21), math.MaxFloat64, math.SmallestNonzeroFloat64},
		"nested":       map[string]any{"a": []any{map[string]any{"b": "c"}, nil}, "": map[string]any{}, "d": []any{}},
		"nil map":      map[string]any(nil),
		"nil slice":    []any(nil),
		"str map":      map[string]string{"k<": "v&", "x": ""},
		"nil str map":  map[string]string(nil),
		"strings":      []string{"a", "", "\n"},
		"nil strings":  []string(nil),
		"bytes":        []byte("hello world"),
		"time":         time.Date(2025, 11, 16, 10, 0, 0, 0, time.UTC),
		"struct":       struct{ A int }{3},
		"number":       json.Number("12.50"),
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := JSONSize(v); got != len(b) {
				t.Errorf("jsonSize = %d, want %d (%s)", got, len(b), b)
			}
		})
	}
	if got := JSONSize(values); got <= 0 {
		t.Errorf("jsonSize of all values = %d, want > 0", got)
	}
}

func TestJSONSize_Unencodable(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	for name, v := range map[string]any{
		"NaN":     math.NaN(),
		"Inf":     math.Inf(1),
		"channel": map[string]any{"c": make(chan int)},
		"cycle":   cyclic,
		"in list": []any{1, math.Inf(-1)},
	} {
		if got := JSONSize(v); got != -1 {
			t.Errorf("%s: jsonSize = %d, want -1", name, got)
		}
	}
}

func TestJSONSize_DoesNotAllocate(t *testing.T) {
	ctx := map[string]any{"user_preferences": map[string]any{"prefer_morning": true}, "notes": strings.Repeat("x", 4096), "amount": 50.5, "n": 3, "list": []any{"a", 1.0}}
	if allocs := testing.AllocsPerRun(100, func() { JSONSize(ctx) }); allocs != 0 {
		t.Errorf("got %v allocations, want 0", allocs)
	}
}

func FuzzJSONSize(f *testing.F) {
	f.Add("hello", 1.5, int64(3), true)
	f.Add("<\xff\u2028>", 1e-7, int64(-9), false)
	f.Fuzz(func(t *testing.T, s string, fl float64, i int64, b bool) {
		v := map[string]any{s: []any{s, fl, float32(fl), i, b, nil, map[string]string{s: s}}}
		want := -1
		if enc, err := json.Marshal(v); err == nil {
			want = len(enc)
		}
		if got := JSONSize(v); got != want {
			t.Fatalf("jsonSize = %d, want %d", got, want)
		}
	})
}
