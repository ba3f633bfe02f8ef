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
		l.add(entries, 0, nil)
		want = append(want, entries...)
		if k == len(steps)-2 {
			l.finish()
		}
		if got := l.entries(); !reflect.DeepEqual(got, want) {
			t.Fatalf("after step %d got %+v, want %+v", k, got, want)
		}
	}
	if l.odd == nil || len(l.odd.plain) != 1 || len(l.odd.results) != 0 {
		t.Errorf("got %+v kept aside, want 1 entry (the one in another zone) and no result", l.odd)
	}
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
		entries := []Entry{{Result: richResult()}, {Result: odd}, {Result: odd}, {Result: richResult()}}
		l.add(entries, 0, nil)
		l.finish()
		if l.odd == nil || len(l.odd.results) != 1 {
			t.Errorf("%v: got %+v kept aside, want the odd result once", odd, l.odd)
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

// TestMemLog_SharedResult logs a step whose outcome holds its agent_run's
// result, as the engine commits them, and gets back one map for both,
// equal to it; a result repeated in a later step comes back equal too.
func TestMemLog_SharedResult(t *testing.T) {
	res := map[string]any{"approval": "APPROVED"}
	zoned := Entry{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 60)), Result: map[string]any{"z": 1}}
	steps := [][]Entry{
		{{Kind: KindAgentRun, Result: res}, zoned, {Kind: KindOutcome, Result: res}, {Kind: KindRuleFired}},
		{{Kind: KindOutcome, Result: res}},
	}
	var l memLog
	var want []Entry
	for _, entries := range steps {
		l.add(entries, 0, nil)
		want = append(want, entries...)
	}
	got := l.entries()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if !sameMap(got[0].Result, got[2].Result) {
		t.Error("got two maps for the result the step's entries share, want one")
	}
}

// TestMemLog_RepeatedFields logs steps whose entries repeat the time and
// strings of the entry before, as the engine's do, across an entry kept
// aside and a step's first entry (which repeats nothing), and gets every
// entry back equal; a repeated entry takes far fewer bytes than the first.
func TestMemLog_RepeatedFields(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 5, time.UTC)
	local := time.Date(2026, 11, 27, 12, 0, 0, 5, time.Local)
	zoned := Entry{Time: at.In(time.FixedZone("X", 3600)), State: "A", Agent: "a"}
	run := Entry{Time: at, Kind: KindAgentRun, State: "A", Agent: "a", Trigger: "done", Result: map[string]any{"ok": true}}
	outcome := run
	outcome.Kind = KindOutcome
	rule := Entry{Time: at, Kind: KindRuleFired, State: "A", Agent: "a", Trigger: "done", Rule: "r", Next: "B"}
	moved := Entry{Time: local, Kind: KindTransition, State: "A", Next: "B"}
	steps := [][]Entry{
		{run, outcome, rule, moved, moved},
		{moved, run, zoned, run, {Time: at}, {}, {Time: at, State: "A"}},
		{rule, rule, outcome},
	}
	var l memLog
	var want []Entry
	for _, entries := range steps {
		l.add(entries, 0, nil)
		want = append(want, entries...)
		if got := l.entries(); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
	var one, two memLog
	one.add([]Entry{rule}, 0, nil)
	two.add([]Entry{rule, rule}, 0, nil)
	if first, again := len(one.data), len(two.data)-len(one.data); again > first/3 {
		t.Errorf("a repeated entry took %d bytes, the first %d: want at most a third", again, first)
	}
}
