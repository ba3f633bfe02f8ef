package record

import (
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"sync"
	"time"
)

// memLog is an instance's history as a MemStore keeps it: every entry
// encoded, end to end, with its result, in one pointer-free byte slice that
// commits append to. The finished histories a MemStore retains (10,000 by
// default) are most of a busy engine's heap: kept this way the garbage
// collector skips them, where an []Entry holds 19 pointers an entry and a
// result map many more.
//
// The slice is sized once for the whole history when the store knows how
// large its finished histories come out (see MemStore.logRoom): growing it
// by doubling at commits and copying it to its size at the end cost 6 KB of
// allocations a refund instance, three times the history.
//
// What cannot be encoded is kept aside, in odd, and the log holds its place:
// a result holding a value of a type appendValue does not know, and an entry
// whose time has a location other than UTC or Local. A time's monotonic
// clock reading is not kept, as no durable store keeps it.
type memLog struct {
	data []byte
	odd  *memOdd
	n    int32 // entries (a hint: it stops counting at its limit)
	// mapsAt is where the maps of a finished instance's snapshot start in
	// data, after its entries (see packMaps); 0 when they are not there.
	mapsAt int32
}

// memOdd holds the parts of a history a memLog could not encode; an
// instance seldom has any.
type memOdd struct {
	results []map[string]any // results appendValue does not know, in order
	plain   []Entry          // entries kept as they came, in order
}

// Flags of an encoded entry. Its result is one of packResult,
// packResultOdd and packResultSame (the bits packResultMask picks), or none.
const (
	packRetryable  = 1 << 0
	packResult     = 1 << 1                     // the entry's result follows its strings, encoded
	packResultOdd  = 1 << 2                     // the entry's result is the next of odd.results
	packResultSame = packResult | packResultOdd // the entry's result is the previous entry's (the engine's outcome repeats its agent_run's)
	packResultMask = packResult | packResultOdd
	packLocal      = 1 << 3 // the time is in time.Local (else UTC)
	packPlain      = 1 << 4 // the entry is the next of odd.plain; nothing else follows
	packCost       = 1 << 5 // the entry's usage has a cost
	packSameTime   = 1 << 6 // the time is the previous entry's, and is not written
	packSameMask   = 1 << 7 // a mask of the strings that are the previous entry's follows the strings' mask
)

// nStrings is how many string fields an Entry has.
const nStrings = 16

// add appends copies of entries, which the caller reuses after Commit. room
// is what the whole history is expected to need (0: unknown): a history
// past its first commit grows to it at once, into a buffer of spares if
// it has one of that size (spares may be nil).
func (l *memLog) add(entries []Entry, room int, spares *memSpares) {
	if len(entries) == 0 {
		return
	}
	l.n = int32(min(int64(l.n)+int64(len(entries)), math.MaxInt32))
	// Encoded in place when it surely fits, or when the log grows to its
	// room: zeroing a scratch buffer for it cost more than the encoding.
	need := 0
	for k := range entries {
		e := &entries[k]
		need += fixedSize + stringsLen(e) + resultGuess*len(e.Result)
	}
	switch {
	case cap(l.data)-len(l.data) >= need:
	case len(l.data) > 0 && room >= len(l.data)+need:
		first := l.data
		l.data = append(spares.get(room), first...)
		spares.putFirst(first)
	case len(l.data) > 0 && cap(l.data) > len(l.data):
		// It may fit all the same (the last step of a history in its
		// room, as a rule): try.
		at := len(l.data)
		if b := l.encode(l.data, entries); &b[0] == &l.data[0] {
			l.data = b
		} else {
			l.grow(b[at:], room, spares)
		}
		return
	default:
		// The step is encoded on the stack first, for its size, so that
		// the log grows once, to a size that holds it: its first step
		// exactly (an instance that then waits on an agent keeps no room it
		// may never use).
		var stack [1024]byte
		l.grow(l.encode(stack[:0], entries), room, spares)
		return
	}
	l.data = l.encode(l.data, entries)
}

// grow appends step, encoded entries that do not fit in the log, to a copy
// of it of the size policy says: the step's size for the first step, the
// room when it holds it (from spares if they have a buffer of that size),
// else twice the size needed (a couple of reallocations in a history's
// life, not one a commit).
func (l *memLog) grow(step []byte, room int, spares *memSpares) {
	size := len(l.data) + len(step)
	var grown []byte
	switch {
	case len(l.data) == 0:
		grown = spares.getFirst(size)
	case room >= size:
		grown = spares.get(room)
		defer spares.putFirst(l.data)
	default:
		grown = slices.Grow([]byte(nil), 2*size)
	}
	l.data = append(append(grown, l.data...), step...)
}

// memSpares holds the history buffers of instances dropped past the
// retention, for the histories of new ones: in a busy engine as many
// instances are dropped as start, and their histories are of a size, so
// that a new history's buffer is seldom allocated. It was 1.4 KB of the
// 8.7 KB a refund instance allocated, and 3% of a refund's CPU time went
// to its allocation, its zeroing and the collector's assists that charged
// it (BenchmarkMemStoreCommit: 1,930 to 416 bytes and 5 to 4 allocations
// an instance). So are the buffers of first commits, which a history
// leaves when it grows to its room, for the next first commits.
type memSpares struct {
	mu          sync.Mutex
	hist, first spareList
}

// spareList is a stack of spare buffers.
type spareList struct {
	bufs  [][]byte
	bytes int // the capacity of bufs' buffers
}

// memSpareBytes is the most bytes of buffers a spareList keeps: enough
// for the bursts of a busy engine (BenchmarkEngineRefund's 500 instances
// in flight finish and start in turns of hundreds: 64 buffers met half of
// its new histories), little beside the histories a MemStore retains.
// memSpareMin is the smallest dropped history's buffer kept.
const (
	memSpareBytes = 1 << 20
	memSpareMin   = 256
)

// get returns an empty buffer of room bytes or a little more (no more than
// finish would copy away: room is more than 16 bytes), a spare if the last
// one kept is such.
func (sp *memSpares) get(room int) []byte { return sp.take(room, false) }

// getFirst is get for a history's first commit.
func (sp *memSpares) getFirst(size int) []byte { return sp.take(size, true) }

func (sp *memSpares) take(size int, first bool) []byte {
	if sp != nil {
		sp.mu.Lock()
		b := sp.list(first).pop()
		sp.mu.Unlock()
		// The last one only: a spare of another size is dropped, so that
		// the spares follow the sizes histories come in. Small sizes are
		// rounded up to 16 bytes when allocated, larger ones by an eighth
		// or so.
		if cap(b) >= size && cap(b)-size <= max(size/8, 16) {
			return b[:0]
		}
	}
	// Rounded up to its size class, no room is wasted, and the spare it
	// makes fits sizes of that class.
	return slices.Grow([]byte(nil), size)
}

func (sp *memSpares) list(first bool) *spareList {
	if first {
		return &sp.first
	}
	return &sp.hist
}

// put keeps b, the buffer of a dropped history, which no one reads any
// more, if there is room for it.
func (sp *memSpares) put(b []byte) {
	if cap(b) >= memSpareMin {
		sp.keep(b, false)
	}
}

// putFirst keeps b, the buffer of a history's first commit it has left,
// if there is room for it.
func (sp *memSpares) putFirst(b []byte) {
	if sp != nil && cap(b) > 0 {
		sp.keep(b, true)
	}
}

func (sp *memSpares) keep(b []byte, first bool) {
	sp.mu.Lock()
	if l := sp.list(first); l.bytes+cap(b) <= memSpareBytes {
		l.bufs = append(l.bufs, b)
		l.bytes += cap(b)
	}
	sp.mu.Unlock()
}

// pop takes the last buffer kept, if any.
func (l *spareList) pop() []byte {
	n := len(l.bufs)
	if n == 0 {
		return nil
	}
	b := l.bufs[n-1]
	l.bufs[n-1] = nil
	l.bufs = l.bufs[:n-1]
	l.bytes -= cap(b)
	return b
}

// fixedSize is about the most bytes an encoded entry takes besides its
// strings' and result's: the flags, the time, the masks, a few small
// numbers and the strings' lengths; resultGuess is a guess of those of a
// result's key and value. A step they do not cover is encoded on the stack
// first.
const (
	fixedSize   = 32
	resultGuess = 16
)

// encode appends entries to b.
func (l *memLog) encode(b []byte, entries []Entry) []byte {
	var (
		prev       *Entry         // the entry before, when it was encoded (not kept aside)
		prevResult map[string]any // the result of the step's previous encoded entry
	)
	for k := range entries {
		e := &entries[k]
		switch e.Time.Location() {
		case time.UTC, time.Local:
		default:
			l.oddParts().plain = append(l.odd.plain, *e)
			b = append(b, packPlain)
			prev = nil
			continue
		}
		flagAt := len(b)
		b = appendEntry(b, e, prev)
		prev = e
		switch {
		case e.Result == nil:
		case prevResult != nil && sameMap(e.Result, prevResult):
			b[flagAt] |= packResultSame
		default:
			mark := len(b)
			var ok bool
			if b, ok = appendValue(b, e.Result, 0); ok {
				b[flagAt] |= packResult
			} else {
				b = b[:mark]
				b[flagAt] |= packResultOdd
				l.oddParts().results = append(l.odd.results, e.Result)
			}
		}
		if e.Result != nil {
			prevResult = e.Result
		}
	}
	return b
}

// sameMap reports whether a and b are the same map.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func (l *memLog) oddParts() *memOdd {
	if l.odd == nil {
		l.odd = new(memOdd)
	}
	return l.odd
}

// noEntry is the entry before the first of a step: none of its fields
// are repeated.
var noEntry Entry

// appendEntry appends e but its result: its flags, its time, a mask of its
// numbers that are not zero and those numbers, a mask of its strings that
// are not empty and those strings. Most of an entry's fields are empty:
// skipping them took 14% off a commit's CPU time and 12% off the heap a
// finished refund instance holds (BenchmarkMemStoreCommit). prev is the
// entry before e in the log, if it is encoded in this step: the time and
// the strings e repeats from it (its state, agent, trigger and time, as a
// rule) are marked and not written again: 17% off the heap a finished
// refund instance holds (2,198 to 1,813 bytes, BenchmarkMemStoreCommit),
// and a little off a commit's CPU time.
func appendEntry(b []byte, e, prev *Entry) []byte {
	var flags byte
	if e.Time.Location() == time.Local {
		flags |= packLocal
	}
	if e.Retryable {
		flags |= packRetryable
	}
	if e.Usage.Cost != 0 {
		flags |= packCost
	}
	flagAt := len(b)
	b = append(b, 0)
	p := prev
	if p == nil {
		p = &noEntry
	} else {
		flags |= packSameMask
	}
	if prev != nil && e.Time.Equal(prev.Time) && e.Time.Location() == prev.Time.Location() {
		flags |= packSameTime
	} else {
		b = binary.AppendVarint(b, e.Time.Unix())
		b = binary.AppendUvarint(b, uint64(e.Time.Nanosecond()))
	}
	at := len(b)
	b = append(b, 0)
	var nm uint8
	b, nm = appendNumber(b, nm, 0, int64(e.Seq))
	b, nm = appendNumber(b, nm, 1, int64(e.Step))
	b, nm = appendNumber(b, nm, 2, int64(e.Attempt))
	b, nm = appendNumber(b, nm, 3, int64(e.Priority))
	b, nm = appendNumber(b, nm, 4, int64(e.Index))
	b, nm = appendNumber(b, nm, 5, int64(e.Delay))
	b, nm = appendNumber(b, nm, 6, e.Usage.InputTokens)
	b, nm = appendNumber(b, nm, 7, e.Usage.OutputTokens)
	b[at] = nm
	if flags&packCost != 0 {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Usage.Cost))
	}
	// The strings one by one, in the order entries decodes them: ranging
	// over an array of them would copy sixteen strings at every entry.
	at = len(b)
	if flags&packSameMask != 0 {
		b = append(b, 0, 0, 0, 0)
	} else {
		b = append(b, 0, 0)
	}
	var m strMasks
	b = m.append(b, 0, string(e.Kind), string(p.Kind))
	b = m.append(b, 1, e.State, p.State)
	b = m.append(b, 2, e.Agent, p.Agent)
	b = m.append(b, 3, e.Trigger, p.Trigger)
	b = m.append(b, 4, e.Rule, p.Rule)
	b = m.append(b, 5, e.Condition, p.Condition)
	b = m.append(b, 6, e.From, p.From)
	b = m.append(b, 7, e.To, p.To)
	b = m.append(b, 8, e.Next, p.Next)
	b = m.append(b, 9, e.HandoffID, p.HandoffID)
	b = m.append(b, 10, e.Error, p.Error)
	b = m.append(b, 11, e.ErrorKind, p.ErrorKind)
	b = m.append(b, 12, e.Limit, p.Limit)
	b = m.append(b, 13, e.Reason, p.Reason)
	b = m.append(b, 14, e.Detail, p.Detail)
	b = m.append(b, 15, e.Usage.Model, p.Usage.Model)
	binary.LittleEndian.PutUint16(b[at:], m.set)
	if flags&packSameMask != 0 {
		binary.LittleEndian.PutUint16(b[at+2:], m.same)
	}
	b[flagAt] = flags
	return b
}

// appendNumber appends n unless it is 0, and marks bit k of mask when it
// does.
func appendNumber(b []byte, mask uint8, k uint, n int64) ([]byte, uint8) {
	if n == 0 {
		return b, mask
	}
	return binary.AppendVarint(b, n), mask | 1<<k
}

// strMasks are the masks of an entry's strings: set marks those not
// empty, same those of them that are the previous entry's.
type strMasks struct{ set, same uint16 }

// append appends s, string k, its length first, unless it is empty or
// the previous entry's (p), and marks it in the masks.
func (m *strMasks) append(b []byte, k uint, s, p string) []byte {
	if s == "" {
		return b
	}
	m.set |= 1 << k
	if s == p {
		m.same |= 1 << k
		return b
	}
	if len(s) < 0x80 {
		b = append(b, byte(len(s)))
	} else {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	return append(b, s...)
}

// entryBytes returns the part of data that holds the entries.
func (l *memLog) entryBytes() []byte {
	if l.mapsAt > 0 {
		return l.data[:l.mapsAt]
	}
	return l.data
}

// packMaps appends the maps of m, a finished instance's snapshot, to the
// log, and reports whether it could (see appendValue; their values may be
// of other types, and a log past 2 GB keeps them as they are). The
// retained finished instances' maps were most of the pointers the garbage
// collector traced in a busy engine's heap.
func (l *memLog) packMaps(m *memSnap) bool {
	if len(l.data) == 0 || len(l.data) > math.MaxInt32 {
		return false
	}
	at := len(l.data)
	b := appendVisits(l.data, m.visits)
	b, ok := appendValue(b, m.input, 0)
	if ok {
		b, ok = appendValue(b, m.context, 0)
	}
	if !ok {
		l.data = b[:at]
		return false
	}
	l.data, l.mapsAt = b, int32(at)
	return true
}

// unpackMaps drops the maps packMaps appended, and returns them.
func (l *memLog) unpackMaps() (visits map[string]int, input, context map[string]any) {
	if l.mapsAt == 0 {
		return nil, nil, nil
	}
	s, at := string(l.data[l.mapsAt:]), 0
	visits = readVisits(s, &at)
	input, _ = readValue(s, &at).(map[string]any)
	context, _ = readValue(s, &at).(map[string]any)
	return visits, input, context
}

// dropMaps drops the maps packMaps appended: a commit to a finished
// instance brings its snapshot's.
func (l *memLog) dropMaps() {
	if l.mapsAt > 0 {
		l.data, l.mapsAt = l.data[:l.mapsAt], 0
	}
}

// finish trims what a finished history keeps: a finished instance seldom
// commits again (a late notice may; its entries are added as to a running
// one). The log's slice is copied to its size only when it holds more room
// than a size class rounds up to: when it was sized from the store's
// estimate it is kept as it is.
func (l *memLog) finish() {
	if l.odd != nil {
		l.odd.results = slices.Clip(l.odd.results)
		l.odd.plain = slices.Clip(l.odd.plain)
	}
	if cap(l.data)-len(l.data) > len(l.data)/8 {
		l.data = slices.Clone(l.data)
	}
}

// entries decodes the log. Its strings share one copy of the log's bytes.
func (l *memLog) entries() []Entry {
	out := make([]Entry, 0, l.n)
	s := string(l.entryBytes())
	var (
		odd, plain int
		prevResult map[string]any
		t          time.Time        // the time of the last entry decoded here (not kept aside)
		f          [nStrings]string // and its strings
	)
	for at := 0; at < len(s); {
		flags := s[at]
		at++
		if flags&packPlain != 0 {
			out = append(out, l.odd.plain[plain])
			plain++
			continue
		}
		var e Entry
		if flags&packSameTime == 0 {
			sec := readVarint(s, &at)
			nsec := int64(readUvarint(s, &at))
			t = time.Unix(sec, nsec)
			if flags&packLocal == 0 {
				t = t.UTC()
			}
		}
		e.Time = t
		var n [8]int64
		nm := s[at]
		at++
		for k := range n {
			if nm&(1<<k) != 0 {
				n[k] = readVarint(s, &at)
			}
		}
		e.Seq, e.Step, e.Attempt, e.Priority, e.Index = int(n[0]), int(n[1]), int(n[2]), int(n[3]), int(n[4])
		e.Delay, e.Usage.InputTokens, e.Usage.OutputTokens = time.Duration(n[5]), n[6], n[7]
		if flags&packCost != 0 {
			e.Usage.Cost = math.Float64frombits(binary.LittleEndian.Uint64([]byte(s[at : at+8])))
			at += 8
		}
		sm := uint16(s[at]) | uint16(s[at+1])<<8
		at += 2
		var same uint16
		if flags&packSameMask != 0 {
			same = uint16(s[at]) | uint16(s[at+1])<<8
			at += 2
		}
		for k := range f {
			switch {
			case sm&(1<<k) == 0:
				f[k] = ""
			case same&(1<<k) != 0: // the previous entry's
			default:
				size := int(readUvarint(s, &at))
				f[k] = s[at : at+size]
				at += size
			}
		}
		e.Kind, e.State, e.Agent, e.Trigger, e.Rule, e.Condition, e.From, e.To = Kind(f[0]), f[1], f[2], f[3], f[4], f[5], f[6], f[7]
		e.Next, e.HandoffID, e.Error, e.ErrorKind, e.Limit, e.Reason, e.Detail = f[8], f[9], f[10], f[11], f[12], f[13], f[14]
		e.Usage.Model = f[15]
		e.Retryable = flags&packRetryable != 0
		switch flags & packResultMask {
		case packResult:
			e.Result, _ = readValue(s, &at).(map[string]any)
		case packResultOdd:
			e.Result = l.odd.results[odd]
			odd++
		case packResultSame:
			e.Result = prevResult
		}
		if e.Result != nil {
			prevResult = e.Result
		}
		out = append(out, e)
	}
	return out
}

// readVarint and readUvarint decode the number at s[*at:], which appendEntry
// wrote, and move *at past it.
func readVarint(s string, at *int) int64 {
	u := readUvarint(s, at)
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func readUvarint(s string, at *int) uint64 {
	var x uint64
	for shift := 0; ; shift += 7 {
		c := s[*at]
		*at++
		if c < 0x80 {
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
	}
}

// stringsLen is the total length of e's strings.
func stringsLen(e *Entry) int {
	return len(e.Kind) + len(e.State) + len(e.Agent) + len(e.Trigger) + len(e.Rule) + len(e.Condition) + len(e.From) +
		len(e.To) + len(e.Next) + len(e.HandoffID) + len(e.Error) + len(e.ErrorKind) + len(e.Limit) + len(e.Reason) +
		len(e.Detail) + len(e.Usage.Model)
}
