package record

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/batonhq/baton/registry"
)

// fullSnapshot has every field of a Snapshot set, each to its own value:
// reflection fills the strings and numbers, so that a field added to
// Snapshot is filled too, and lost by memSnap unless memSnap keeps it.
func fullSnapshot(t *testing.T, n int) Snapshot {
	t.Helper()
	var s Snapshot
	fillSnapshot(t, reflect.ValueOf(&s).Elem(), &n)
	s.Created = time.Date(2026, 11, 27, 12, 0, n, n, time.UTC)
	s.Updated = time.Now() // with a monotonic clock reading, which the store keeps
	s.Visits = map[string]int{"A": n}
	s.Input = map[string]any{"in": n}
	s.Context = map[string]any{"ctx": n}
	s.Usage.Agents = registry.AgentTotals{{Agent: "a", Totals: registry.Totals{Tokens: int64(n)}}}
	return s
}

func fillSnapshot(t *testing.T, v reflect.Value, n *int) {
	for i := range v.NumField() {
		f := v.Field(i)
		*n++
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + string(rune('a'+*n%26)))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(*n))
		case reflect.Float64:
			f.SetFloat(float64(*n) + 0.5)
		case reflect.Struct:
			if f.Type() != reflect.TypeFor[time.Time]() {
				fillSnapshot(t, f, n)
			}
		case reflect.Map, reflect.Slice:
		default:
			t.Fatalf("Snapshot field %s is a %s: teach memSnap and this test", v.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestMemSnap_KeepsEveryField commits snapshots full and empty, with each
// status and one of its own, and gets every one back as it was (the maps
// of a finished one equal), then one that empties what the previous one
// set.
func TestMemSnap_KeepsEveryField(t *testing.T) {
	s := NewMemStore()
	full := fullSnapshot(t, 0)
	other := full
	other.Workflow, other.Version = "other", 7
	zeroUsage := full
	zeroUsage.Usage = registry.Ledger{Agents: registry.AgentTotals{}}
	var snaps []Snapshot
	for _, st := range []Status{"", StatusRunning, StatusCompleted, StatusFailed, StatusCanceled, "paused"} {
		for _, snap := range []Snapshot{full, other, {ID: "i"}, zeroUsage, {ID: "i", Status: st, Error: "e"}} {
			snap.ID, snap.Status = "i", st
			snaps = append(snaps, snap)
		}
	}
	for k, want := range snaps {
		// With an entry: a finished instance's maps are then kept in its log.
		if err := s.Commit(t.Context(), Step{Snapshot: want, Entries: []Entry{{Kind: KindStarted}}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Instance(t.Context(), "i")
		if err != nil || !reflect.DeepEqual(got, want) || got.Updated != want.Updated {
			t.Fatalf("commit %d: got %+v, %v, want %+v", k, got, err, want)
		}
	}
}

// TestMemInstance_Size keeps an instance's record in the 256-byte size
// class: every instance in the store, idle or finished, holds one.
func TestMemInstance_Size(t *testing.T) {
	if got := unsafe.Sizeof(memInstance{}); got > 256 {
		t.Errorf("got a memInstance of %d bytes, want at most 256", got)
	}
}

// TestMemSnap_FinishedMapsPacked checks that a finished instance's maps
// are kept in its log, not as maps, and come back equal, also after a late
// commit to it, and that maps holding a value the log cannot encode are
// kept as they are.
func TestMemSnap_FinishedMapsPacked(t *testing.T) {
	s := NewMemStore()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	run := Snapshot{ID: "i", Status: StatusRunning, Visits: map[string]int{"A": 1}, Input: map[string]any{"n": 1},
		Context: map[string]any{"x": "y"}}
	done := run
	done.Status, done.Visits, done.Context = StatusCompleted, map[string]int{"A": 1, "B": 2}, map[string]any{"x": "z", "l": []any{1.5}}
	late := done
	late.Context, late.Visits = map[string]any{}, nil
	entries := []Entry{{Seq: 1, Time: at, Kind: KindStarted, Result: run.Input}}
	for k, snap := range []Snapshot{run, done, late} {
		if err := s.Commit(t.Context(), Step{Snapshot: snap, Entries: entries}); err != nil {
			t.Fatal(err)
		}
		mi, _ := s.instances.Load("i")
		if packed := mi.snap.visits == nil && mi.snap.input == nil && mi.snap.context == nil; packed != (k > 0) || mi.snap.packed != (k > 0) {
			t.Errorf("commit %d: got the maps packed %t, want %t", k, packed, k > 0)
		}
		got, err := s.Instance(t.Context(), "i")
		if err != nil || !reflect.DeepEqual(got, snap) {
			t.Fatalf("commit %d: got %+v, %v, want %+v", k, got, err, snap)
		}
		hist, err := s.History(t.Context(), "i")
		if err != nil || len(hist) != k+1 || !reflect.DeepEqual(hist[k], entries[0]) {
			t.Fatalf("commit %d: got history %+v, %v, want %d entries", k, hist, err, k+1)
		}
		entries[0].Seq++
	}
	type custom struct{ A int }
	odd := done
	odd.ID, odd.Context = "odd", map[string]any{"c": custom{1}}
	if err := s.Commit(t.Context(), Step{Snapshot: odd, Entries: entries}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Instance(t.Context(), "odd"); err != nil || !reflect.DeepEqual(got, odd) {
		t.Fatalf("got %+v, %v, want %+v", got, err, odd)
	}
	if hist, err := s.History(t.Context(), "odd"); err != nil || len(hist) != 1 {
		t.Fatalf("got history %+v, %v, want 1 entry", hist, err)
	}
}

// TestMemStore_DropReleases checks that an instance dropped past the
// retention holds no history, outbox or maps any more, though the order
// List walks still holds it until it is compacted.
func TestMemStore_DropReleases(t *testing.T) {
	s := NewMemStore(WithRetention(1))
	var first *memInstance
	for _, id := range []string{"a", "b"} {
		snap := Snapshot{ID: id, Status: StatusCompleted, Context: map[string]any{"k": id}}
		if err := s.Commit(t.Context(), Step{Snapshot: snap, Entries: []Entry{{Kind: KindCompleted}}, Outbox: []Outgoing{{Key: id}}}); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first, _ = s.instances.Load(id)
		}
	}
	if !first.gone || first.log.data != nil || first.outbox != nil || first.snap.context != nil {
		t.Errorf("got the dropped instance holding %d bytes of history, %d outbox items, context %v; want nothing",
			len(first.log.data), len(first.outbox), first.snap.context)
	}
}
