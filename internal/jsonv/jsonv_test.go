package jsonv_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/jsonv"
)

// FuzzAppendString holds AppendString equal to json.Marshal of a string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "<>&", "\u2028\u2029", "\x00\x1f\b\f\n\r\t", "\xff\xfe", "é😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonv.AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}

// FuzzAppendFloat holds AppendFloat equal to json.Marshal of a float64.
func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-7, 1e-6, 1e20, 1e21, 123456789e-30, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1)} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		want, err := json.Marshal(x)
		got, ok := jsonv.AppendFloat(nil, x)
		if ok != (err == nil) || ok && string(got) != string(want) {
			t.Fatalf("got %s, %v, want %s, %v", got, ok, want, err)
		}
	})
}

// FuzzDecoder holds Value, where the Decoder takes a document, equal to
// json.Unmarshal into an any, and Append of the value equal to
// json.Marshal.
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,false,null,"x\u00e9\ud83d\ude00"],"a":{}}`, `[]`, `"\ud800"`, `1e400`, `{"a":1}x`, ` 0 `, `-`, `01`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := jsonv.NewDecoder(data)
		got := d.Value()
		d.End()
		var want any
		err := json.Unmarshal(data, &want)
		if !d.OK() {
			return
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %#v from %q, want encoding/json's %#v, %v", got, data, want, err)
		}
		enc, err := jsonv.Append(nil, got)
		wantEnc, werr := json.Marshal(want)
		if err != nil || werr != nil || string(enc) != string(wantEnc) {
			t.Fatalf("got %s, %v encoding %#v, want %s, %v", enc, err, got, wantEnc, werr)
		}
	})
}

// TestAppend_MapsOfEverySize writes maps of up to and past the entries
// sorted in place (16) with their keys in order, as json.Marshal does.
func TestAppend_MapsOfEverySize(t *testing.T) {
	for _, n := range []int{0, 1, 2, 15, 16, 17, 40} {
		m := map[string]any{}
		for i := range n {
			m[strconv.Itoa((i*7919)%1000)] = map[string]any{"i": i}
		}
		got, gerr := jsonv.Append(nil, m)
		want, werr := json.Marshal(m)
		if gerr != nil || werr != nil || string(got) != string(want) {
			t.Errorf("%d entries: got %s, %v, want %s, %v", n, got, gerr, want, werr)
		}
	}
}

// TestAppendGoValues writes the Go values handlers put in results as
// json.Marshal does.
func TestAppendGoValues(t *testing.T) {
	type point struct{ X, Y int }
	for _, v := range []any{
		map[string]any{"n": 3, "m": int64(-4), "f": 0.1, "s": []string{"a"}, "p": point{1, 2}, "nil": nil, "z": map[string]any(nil), "e": []any(nil)},
		[]any{1, "two", 3.5, map[string]string{"b": "c", "a": "<"}},
		uint8(7), float32(0.1), math.NaN(), map[string]any{"bad": math.Inf(-1)},
	} {
		got, gerr := jsonv.Append(nil, v)
		want, werr := json.Marshal(v)
		if (gerr == nil) != (werr == nil) || gerr == nil && string(got) != string(want) {
			t.Errorf("got %s, %v, want %s, %v", got, gerr, want, werr)
		}
	}
}

// TestDecoder_Object_KnownKeysCostNoAllocation reads the fields of an
// object whose keys were met before: it allocates no more than reading an
// empty object does.
func TestDecoder_Object_KnownKeysCostNoAllocation(t *testing.T) {
	read := func(doc string, want int) func() {
		data := []byte(doc)
		return func() {
			d := jsonv.NewDecoder(data)
			n := 0
			d.Object(func(key string) {
				n++
				d.Bool()
			})
			d.End()
			if !d.OK() || n != want {
				t.Fatalf("got ok %v and %d keys, want ok and %d", d.OK(), n, want)
			}
		}
	}
	fields := read(`{"instance_id":true,"step":false,"agent":true,"trigger":false}`, 4)
	fields()
	got, empty := testing.AllocsPerRun(100, fields), testing.AllocsPerRun(100, read(`{}`, 0))
	if got != empty {
		t.Errorf("got %v allocations per read, want %v (as many as for {})", got, empty)
	}
}

// TestDecoder_Object_KeysKeepTheirValue reads keys that are interned,
// escaped, long or not ASCII as json.Unmarshal does, twice.
func TestDecoder_Object_KeysKeepTheirValue(t *testing.T) {
	long := "k0123456789012345678901234567890123456789012345678901234567890123456789"
	doc := []byte(`{"a":1,"a\"b":2,"\u0041":3,"é":4,"` + long + `":5,"":6}`)
	for range 2 {
		var want map[string]any
		if err := json.Unmarshal(doc, &want); err != nil {
			t.Fatal(err)
		}
		d := jsonv.NewDecoder(doc)
		got := d.Map()
		d.End()
		if !d.OK() || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %#v (ok %v), want %#v", got, d.OK(), want)
		}
	}
}

// TestDecoder_SharedValues_AreTheValuesDecoded checks the values the
// Decoder shares between documents (small whole numbers, short strings):
// each is the value json.Unmarshal gives, its sign and type included, and
// a second document gets the same.
func TestDecoder_SharedValues_AreTheValuesDecoded(t *testing.T) {
	for _, doc := range []string{`0`, `-0`, `-0.0`, `1`, `1.0`, `1e2`, `1023`, `1024`, `-1`, `0.5`, `"run"`, `""`, `"a\"b"`, `"é"`,
		`"exactly-twenty-four-byte"`, `"twenty-five-bytes-long-xx"`, `{"step":3,"agent":"seller","ok":true}`} {
		for range 2 {
			d := jsonv.NewDecoder([]byte(doc))
			got := d.Value()
			d.End()
			var want any
			if err := json.Unmarshal([]byte(doc), &want); err != nil || !d.OK() {
				t.Fatalf("%s: decoder ok %v, encoding/json error %v", doc, d.OK(), err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %#v, want %#v", doc, got, want)
			}
			if f, ok := want.(float64); ok && math.Signbit(f) != math.Signbit(got.(float64)) {
				t.Errorf("%s: got sign of %v, want that of %v", doc, got, want)
			}
		}
	}
}

// FuzzDecoderRaw holds Raw, which skips a value without making it, to
// Value and encoding/json: it takes every document Value takes (and
// numbers out of a float64's range too), only valid JSON, and gives the
// document's bytes.
func FuzzDecoderRaw(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\u00e9",{"b":"c\\"d"}],"e":null}`, `"\ud800"`, "\"\xff\"", "\"a\x01\"", `"plain"`, ` [true,false] `, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := jsonv.NewDecoder(data)
		raw := d.Raw()
		d.End()
		v := jsonv.NewDecoder(data)
		v.Value()
		v.End()
		if v.OK() && !d.OK() {
			t.Fatalf("%q: Raw refused what Value takes", data)
		}
		if d.OK() && (!json.Valid(data) || string(raw) != strings.TrimSpace(string(data))) {
			t.Fatalf("%q: got raw %q (valid JSON: %v)", data, raw, json.Valid(data))
		}
	})
}

// TestAppend_Map_KeysInOrder holds Append of maps of every size around
// the sorting's two ways (by insertion up to 16 entries, by SortFunc past
// them) to json.Marshal.
func TestAppend_Map_KeysInOrder(t *testing.T) {
	for n := range 40 {
		m := map[string]any{}
		for i := range n {
			m[string(rune('z'-i%26))+strings.Repeat("k", i/26)] = map[string]any{"v": float64(i), "a": []any{"x"}}
		}
		got, err := jsonv.Append(nil, m)
		want, werr := json.Marshal(m)
		if err != nil || werr != nil || string(got) != string(want) {
			t.Fatalf("%d keys: got %s, %v, want %s, %v", n, got, err, want, werr)
		}
	}
}

// FuzzStringOr holds StringOr equal to String whatever the string it is
// given.
func FuzzStringOr(f *testing.F) {
	id := "0193f1c2-bbbb-7bbb-8ccc-123456789abc"
	for _, seed := range []struct{ doc, s string }{
		{`"` + id + `"`, id}, {`"` + id + `x"`, id}, {`"` + id[:10] + `"`, id}, {`"a\u0062c"`, "abc"},
		{`"abc"`, ""}, {` "abc" `, "abc"}, {`"é"`, "é"}, {`1`, "1"}, {`"`, "a"}, {`"a`, "a"},
	} {
		f.Add([]byte(seed.doc), seed.s)
	}
	f.Fuzz(func(t *testing.T, doc []byte, s string) {
		d, e := jsonv.NewDecoder(doc), jsonv.NewDecoder(doc)
		got, want := d.StringOr(s), e.String()
		d.End()
		e.End()
		if got != want || d.OK() != e.OK() {
			t.Fatalf("got %q, ok %v from %q, want String's %q, ok %v", got, d.OK(), doc, want, e.OK())
		}
	})
}

// TestStringOr_TheStringGivenIsNotCopied: an id read again where it was
// given costs no allocation, where String makes it.
func TestStringOr_TheStringGivenIsNotCopied(t *testing.T) {
	id := "0193f1c2-bbbb-7bbb-8ccc-123456789abc"
	data := []byte(`"` + id + `"`)
	read := func(or bool) func() {
		return func() {
			d := jsonv.NewDecoder(data)
			var got string
			if or {
				got = d.StringOr(id)
			} else {
				got = d.String()
			}
			if got != id || !d.OK() {
				t.Fatalf("got %q, ok %v, want %q", got, d.OK(), id)
			}
		}
	}
	if or, plain := testing.AllocsPerRun(100, read(true)), testing.AllocsPerRun(100, read(false)); or >= plain {
		t.Errorf("got %v allocations with the id given, want fewer than String's %v", or, plain)
	}
}
