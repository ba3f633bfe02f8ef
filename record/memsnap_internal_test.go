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
// status and one of its own, and gets every one back as it was, then one
// that empties what the previous one set.
func TestMemSnap_KeepsEveryField(t *testing.T) {
	s := NewMemStore()
	full := fullSnapshot(t, 0)
	other := full
	other.Workflow, other.Version = "other", 7
	zeroUsage := full
	zeroUsage.Usage = registry.Ledger{Agents: registry.AgentTotals{}}
	var snaps []Snapshot
	for _, st := range append(statuses[:], "paused") {
		for _, snap := range []Snapshot{full, other, {ID: "i"}, zeroUsage, {ID: "i", Status: st, Error: "e"}} {
			snap.ID, snap.Status = "i", st
			snaps = append(snaps, snap)
		}
	}
	for k, want := range snaps {
		if err := s.Commit(t.Context(), Step{Snapshot: want}); err != nil {
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
