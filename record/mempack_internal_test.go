package record

import (
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/registry"
)

// fullEntry has every field of an Entry set, each to its own value:
// reflection fills the strings and numbers, so that a field added to
// Entry is filled too, and lost by packing unless packing keeps it.
func fullEntry(t *testing.T, n int) Entry {
	t.Helper()
	var e Entry
	fill(t, reflect.ValueOf(&e).Elem(), &n)
	e.Time = time.Date(2026, 11, 27, 12, 0, n, n, time.UTC)
	e.Result = map[string]any{"n": n}
	return e
}

func fill(t *testing.T, v reflect.Value, n *int) {
	for i := range v.NumField() {
		f := v.Field(i)
		*n++
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + string(rune('a'+*n%26)) + "é")
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(*n))
		case reflect.Float64:
			f.SetFloat(float64(*n) + 0.5)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct:
			if f.Type() != reflect.TypeFor[time.Time]() {
				fill(t, f, n)
			}
		case reflect.Map:
		default:
			t.Fatalf("Entry field %s is a %s: teach packedEntry and this test", v.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestMemLog_KeepsEveryField logs steps of entries, full and empty, with
// times in UTC, in Local and in another zone, and gets every entry back
// equal.
func TestMemLog_KeepsEveryField(t *testing.T) {
	local := fullEntry(t, 300)
	local.Time = time.Date(2026, 11, 27, 12, 0, 0, 7, time.Local)
	zoned := fullEntry(t, 400)
	zoned.Time = time.Date(2026, 11, 27, 12, 0, 0, 7, time.FixedZone("X", 3600))
	negative := Entry{Seq: -1, Time: time.Unix(-5, 3).UTC(), Delay: -time.Second, Usage: registry.Usage{Cost: -0.25, InputTokens: -1}}
	steps := [][]Entry{
		{fullEntry(t, 0)},
		{fullEntry(t, 100), {}, fullEntry(t, 200), {Kind: KindCompleted, Usage: registry.Usage{Model: "m"}}},
		{{Error: string(make([]byte, 70_000))}, local, zoned, negative, {Result: richResult()}, {Result: map[string]any{}}},
		{{Result: map[string]any{"late": 1}}},
	}
	var l memLog
	var want []Entry
	for k, entries := range steps {
		l.add(entries)
		want = append(want, entries...)
		if k == len(steps)-2 {
			l.finish()
		}
		if got := l.entries(); !reflect.DeepEqual(got, want) {
			t.Fatalf("after step %d got %+v, want %+v", k, got, want)
		}
	}
	if len(l.plain) != 1 {
		t.Errorf("got %d entries kept plain, want 1 (the one in another zone)", len(l.plain))
	}
	if l.packed == nil {
		t.Error("got the finished log's results unpacked, want them packed")
	}
	// The entries and results share one allocation of their size.
	if want, _ := encodeResults(nil, richResultsOf(steps)); cap(l.packed) != len(want) {
		t.Errorf("got %d bytes of room for the packed results, want their size %d", cap(l.packed), len(want))
	}
}

// richResultsOf lists the results of the entries of every step but the
// last, but those of the entries kept plain.
func richResultsOf(steps [][]Entry) []map[string]any {
	var out []map[string]any
	for _, entries := range steps[:len(steps)-1] {
		for _, e := range entries {
			if loc := e.Time.Location(); e.Result != nil && (loc == time.UTC || loc == time.Local) {
				out = append(out, e.Result)
			}
		}
	}
	return out
}

// richResult holds a value of every type a finished log encodes.
func richResult() map[string]any {
	return map[string]any{
		"nil": nil, "t": true, "f": false, "s": "é", "empty": "", "i": -3, "i64": int64(1 << 40), "x": 2.5,
		"nan-free": -0.0, "m": map[string]any{"a": []any{1, "b", nil, map[string]any{}}}, "l": []any{},
		"nilmap": map[string]any(nil), "nilslice": []any(nil),
	}
}

// TestMemLog_KeepsResultsItCannotEncode finishes a log whose results hold
// values encodeResults does not know, and gets them back as they were.
func TestMemLog_KeepsResultsItCannotEncode(t *testing.T) {
	type custom struct{ A int }
	deep := map[string]any{}
	for m, k := deep, 0; k < maxResultDepth+2; k++ {
		next := map[string]any{}
		m["d"] = next
		m = next
	}
	for _, odd := range []map[string]any{{"c": custom{1}}, {"u": uint8(1)}, {"deep": deep}, {"ss": []string{"a"}}} {
		var l memLog
		entries := []Entry{{Result: richResult()}, {Result: odd}}
		l.add(entries)
		l.finish()
		if l.packed != nil {
			t.Errorf("%v: got the results packed, want them kept", odd)
		}
		if got := l.entries(); !reflect.DeepEqual(got, entries) {
			t.Errorf("got %+v, want %+v", got, entries)
		}
	}
}

// TestMemStore_HistoryIsACopy checks that the history a MemStore returns
// does not change when the engine reuses the slice it committed.
func TestMemStore_HistoryIsACopy(t *testing.T) {
	s := NewMemStore()
	entries := []Entry{fullEntry(t, 0), fullEntry(t, 50)}
	want := []Entry{fullEntry(t, 0), fullEntry(t, 50)}
	if err := s.Commit(t.Context(), Step{Snapshot: Snapshot{ID: "i", Status: StatusRunning}, Entries: entries}); err != nil {
		t.Fatal(err)
	}
	clear(entries)
	got, err := s.History(t.Context(), "i")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v, want %+v", got, err, want)
	}
}
