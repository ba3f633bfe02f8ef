//go:build go1.26 && !go1.27

package jsonvalue

import (
	"math/bits"
	"unsafe"
)

// A range over a map costs its iterator's set-up (two random numbers, a
// hundred bytes zeroed, write barriers while the collector marks) and a
// call per entry that scans the slots again: 67–105ns for a two-entry
// map[string]any (measured), which was a fifth of a bus send and receive.
// Most maps a message or a step carries are small, and a small map keeps
// its entries in one group of eight slots that is read here directly
// (22ns): the layout below is internal/runtime/maps' (Map, and the group
// type cmd/compile builds for it) in the Go releases this file builds with
// (its build line, Go 1.26), and init checks it against range before it
// is used. Every larger map is ranged over, and so is every map on another
// release (smallmap_other.go). A map written while it is walked is the
// caller's error either way (range stops the program on it).

// mapHeader is the start of the runtime's map header.
type mapHeader struct {
	used   uint64
	seed   uintptr
	dirPtr unsafe.Pointer // a small map's group
	dirLen int            // 0 for a small map
}

// anyGroup is the one group of a small map[string]any: a control word
// holding a byte per slot (slot i's in bits 8i to 8i+7, on every byte
// order), whose high bit is clear when the slot is full, then the slots.
type anyGroup struct {
	ctrl  uint64
	slots [8]struct {
		key  string
		elem any
	}
}

// smallMaps is whether init found the layout above in this runtime.
var smallMaps = func() bool {
	for n := range 10 { // 9 entries make a large map: not read
		m := make(map[string]any)
		for i := range n {
			m[string(rune('a'+i))] = i
		}
		delete(m, "b") // a deleted slot is skipped
		g, full, ok := smallGroup(m)
		if ok != (len(m) > 0 && n <= 8) {
			return false
		}
		if ok && bits.OnesCount64(full) != len(m) {
			return false
		}
		for ; full != 0; full &= full - 1 {
			s := &g.slots[bits.TrailingZeros64(full)>>3]
			if v, ok := m[s.key]; !ok || v != s.elem {
				return false
			}
		}
	}
	return true
}()

// smallGroup returns m's group and a mask with the high bit of each full
// slot's byte set, when m is small and not empty; ok is false otherwise
// (then range over m).
func smallGroup(m map[string]any) (g *anyGroup, full uint64, ok bool) {
	h := *(**mapHeader)(unsafe.Pointer(&m))
	if h == nil || h.used == 0 || h.dirLen != 0 || h.dirPtr == nil {
		return nil, 0, false
	}
	g = (*anyGroup)(h.dirPtr)
	return g, ^g.ctrl & hiBits64, true
}
