package jsonvalue_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/jsonvalue"
)

func TestSize_MatchesMarshal(t *testing.T) {
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
		"empty number": json.Number(""),
		"map list":     []map[string]any{{"a": 1}, nil},
		"nil map list": []map[string]any(nil),
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := jsonvalue.Size(v); got != len(b) {
				t.Errorf("Size = %d, want %d (%s)", got, len(b), b)
			}
		})
	}
	if got := jsonvalue.Size(values); got <= 0 {
		t.Errorf("Size of all values = %d, want > 0", got)
	}
}

func TestSize_Unencodable(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	for name, v := range map[string]any{
		"NaN":     math.NaN(),
		"Inf":     math.Inf(1),
		"channel": map[string]any{"c": make(chan int)},
		"cycle":   cyclic,
		"in list": []any{1, math.Inf(-1)},
	} {
		if got := jsonvalue.Size(v); got != -1 {
			t.Errorf("%s: Size = %d, want -1", name, got)
		}
	}
}

// Check measures what Size measures, for every value it takes, and refuses
// what a store or a transport could not carry, naming the field.
func TestCheck_MeasuresAndRefuses(t *testing.T) {
	good := map[string]any{"order": map[string]any{"items": []any{map[string]any{"sku": "a<b", "n": 2}, 1.5, nil}}, "tags": []string{"x"}}
	b, _ := json.Marshal(good)
	if err := jsonvalue.Check(good, len(b)); err != nil {
		t.Fatalf("got %v, want nil: the value fits its own size", err)
	}
	if err := jsonvalue.Check(good, len(b)-1); err == nil || err.Field != "" || err.Reason != fmt.Sprintf("is %d bytes as JSON, more than %d", len(b), len(b)-1) {
		t.Fatalf("got %v, want the size refused one byte under it", err)
	}
	deep := map[string]any{}
	cur := deep
	for range jsonvalue.MaxDepth + 1 {
		next := map[string]any{}
		cur["d"] = next
		cur = next
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name  string
		v     any
		field string
		why   string
	}{
		{"string", map[string]any{"a": []any{"ok", "b\xff"}}, ".a[1]", "is not valid UTF-8"},
		{"key", map[string]any{"a": map[string]any{"\xfe": 1}}, ".a", "has a key that is not valid UTF-8"},
		{"list of strings", map[string]any{"tags": []string{"x", "\xff"}}, ".tags[1]", "is not valid UTF-8"},
		{"NaN", map[string]any{"x": []map[string]any{{"y": math.NaN()}}}, ".x[0].y", "is NaN, which JSON cannot hold"},
		{"float32 infinity", []any{float32(math.Inf(1))}, "[0]", "is +Inf, which JSON cannot hold"},
		{"depth", deep, "", "nests deeper than 64 levels"},
		{"cycle", cyclic, "", "nests deeper than 64 levels"},
		{"channel", map[string]any{"c": make(chan int)}, ".c", "cannot be encoded as JSON (chan int)"},
		{"panicking MarshalJSON", map[string]any{"p": panicky{}}, ".p", "cannot be encoded: its MarshalJSON panicked: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := jsonvalue.Check(tt.v, 1<<20)
			if err == nil {
				t.Fatalf("got nil, want %q", tt.why)
			}
			if !strings.HasPrefix(err.Field, tt.field) || !strings.HasPrefix(err.Reason, tt.why) {
				t.Errorf("got %q %q, want %q %q", err.Field, err.Reason, tt.field, tt.why)
			}
		})
	}
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("boom") }

func TestCheck_GoodDataDoesNotAllocate(t *testing.T) {
	data := map[string]any{"order_id": "12345", "amount": 50.5, "items": []any{map[string]any{"sku": "a", "n": 2}, "x", true, nil}, "tags": []string{"a", "b"}}
	if n := testing.AllocsPerRun(100, func() { _ = jsonvalue.Check(data, 1<<20) }); n != 0 {
		t.Errorf("got %v allocations, want 0", n)
	}
}

func TestSize_DoesNotAllocate(t *testing.T) {
	ctx := map[string]any{"user_preferences": map[string]any{"prefer_morning": true}, "notes": strings.Repeat("x", 4096), "amount": 50.5, "n": 3, "list": []any{"a", 1.0}}
	if allocs := testing.AllocsPerRun(100, func() { jsonvalue.Size(ctx) }); allocs != 0 {
		t.Errorf("got %v allocations, want 0", allocs)
	}
}

func FuzzSize(f *testing.F) {
	f.Add("hello", 1.5, int64(3), true)
	f.Add("<\xff\u2028>", 1e-7, int64(-9), false)
	f.Fuzz(func(t *testing.T, s string, fl float64, i int64, b bool) {
		v := map[string]any{s: []any{s, fl, float32(fl), i, b, nil, map[string]string{s: s}}}
		want := -1
		if enc, err := json.Marshal(v); err == nil {
			want = len(enc)
		}
		if got := jsonvalue.Size(v); got != want {
			t.Fatalf("Size = %d, want %d", got, want)
		}
	})
}

// FuzzCheck_Maps holds the walk of maps of up to a dozen members, small
// ones read from their group, with deleted members, equal to encoding/json.
func FuzzCheck_Maps(f *testing.F) {
	f.Add("action,parameters,amount", "process_payment", 450.0, uint16(0))
	f.Add("a,b,c,d,e,f,g,h,i,j", "x\xffy", math.Inf(1), uint16(0x0105))
	f.Add("k,\xfe,m", "", -0.0, uint16(0xffff))
	f.Fuzz(func(t *testing.T, keys, s string, fl float64, drop uint16) {
		m := map[string]any{}
		for i, k := range strings.SplitN(keys, ",", 12) {
			switch i % 4 {
			case 0:
				m[k] = s
			case 1:
				m[k] = fl
			case 2:
				m[k] = map[string]any{k: s, "n": fl}
			default:
				m[k] = []any{s, true, nil}
			}
		}
		for i, k := range strings.SplitN(keys, ",", 12) {
			if drop>>i&1 == 1 {
				delete(m, k)
			}
		}
		enc, err := json.Marshal(m)
		want := -1
		if err == nil {
			want = len(enc)
		}
		if got := jsonvalue.Size(m); got != want {
			t.Fatalf("Size = %d, want %d", got, want)
		}
		// Check also refuses invalid UTF-8, which json.Marshal replaces.
		valid := err == nil
		for k, v := range m {
			_, number := v.(float64)
			valid = valid && utf8.ValidString(k) && (number || utf8.ValidString(s))
		}
		if got := jsonvalue.Check(m, 1<<20); (got == nil) != valid {
			t.Fatalf("Check = %v, want valid %v", got, valid)
		}
	})
}
