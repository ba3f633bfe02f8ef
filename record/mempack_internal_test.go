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
		{{Error: string(make([]byte, 70_000))}, local, zoned, negative},
		{},
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
