package record

import (
	"encoding/binary"
	"math"
	"slices"
	"sync"
	"time"
)

// memLog is an instance's history as a MemStore keeps it: every entry
// encoded, end to end, in one pointer-free byte slice that commits append
// to, with the entries' results (the only fields that hold pointers) beside
// it. The finished histories a MemStore retains (10,000 by default) are
// most of a busy engine's heap: kept this way the garbage collector skips
// their bytes and scans one pointer per result, where an []Entry holds 19
// pointers an entry. When the instance finishes, the log is copied to its
// exact size once.
//
// An entry whose time has a location other than UTC or Local is kept as it
// came, in plain, and the log holds its place. A time's monotonic clock
// reading is not kept, as no durable store keeps it.
type memLog struct {
	data    []byte
	results []map[string]any
	// packed holds the results of a finished history encoded (see
	// encodeResults), when they could be: then results is nil, and the
	// history holds no pointer into the heap but its plain entries'.
	packed []byte
	nres   int // results, packed or not
	plain  []Entry
	n      int // entries
}

// Flags of an encoded entry.
const (
	packRetryable = 1 << iota
	packResult    // the entry's result is the next of results
	packLocal     // the time is in time.Local (else UTC)
	packPlain     // the entry is the next of plain; nothing else follows
)

// nStrings is how many string fields an Entry has.
const nStrings = 16

// fixedSize is about the bytes of an encoded entry besides its strings':
// the flags, eleven small numbers and the strings' lengths.
const fixedSize = 40

// add appends copies of entries, which the caller reuses after Commit.
func (l *memLog) add(entries []Entry) {
	if len(entries) == 0 {
		return
	}
	// Grow at most once per commit, to twice what is needed: a history
	// reallocates a couple of times in its life, not at every entry.
	need := 0
	for k := range entries {
		need += fixedSize + stringsLen(&entries[k])
	}
	if cap(l.data)-len(l.data) < need {
		grown := make([]byte, len(l.data), max(2*(len(l.data)+need), 256))
		copy(grown, l.data)
		l.data = grown
	}
	for k := range entries {
		l.data = l.appendEntry(l.data, &entries[k])
	}
	l.n += len(entries)
}

func (l *memLog) appendEntry(b []byte, e *Entry) []byte {
	var flags byte
	switch e.Time.Location() {
	case time.UTC:
	case time.Local:
		flags |= packLocal
	default:
		l.plain = append(l.plain, *e)
		return append(b, packPlain)
	}
	if e.Retryable {
		flags |= packRetryable
	}
	if e.Result != nil {
		flags |= packResult
		if l.results == nil {
			l.results = make([]map[string]any, 0, 8)
		}
		l.results = append(l.results, e.Result)
		l.nres++
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, e.Time.Unix())
	b = binary.AppendUvarint(b, uint64(e.Time.Nanosecond()))
	for _, n := range [...]int64{int64(e.Seq), int64(e.Step), int64(e.Attempt), int64(e.Priority), int64(e.Index),
		int64(e.Delay), e.Usage.InputTokens, e.Usage.OutputTokens} {
		b = binary.AppendVarint(b, n)
	}
	b = binary.AppendUvarint(b, math.Float64bits(e.Usage.Cost))
	// The strings one by one, in the order entries decodes them: ranging
	// over an array of them would copy sixteen strings at every entry.
	b = appendString(b, string(e.Kind))
	b = appendString(b, e.State)
	b = appendString(b, e.Agent)
	b = appendString(b, e.Trigger)
	b = appendString(b, e.Rule)
	b = appendString(b, e.Condition)
	b = appendString(b, e.From)
	b = appendString(b, e.To)
	b = appendString(b, e.Next)
	b = appendString(b, e.HandoffID)
	b = appendString(b, e.Error)
	b = appendString(b, e.ErrorKind)
	b = appendString(b, e.Limit)
	b = appendString(b, e.Reason)
	b = appendString(b, e.Detail)
	return appendString(b, e.Usage.Model)
}

func appendString(b []byte, s string) []byte {
	if len(s) < 0x80 {
		b = append(b, byte(len(s)))
	} else {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	return append(b, s...)
}

// stringsLen is the total length of e's strings.
func stringsLen(e *Entry) int {
	return len(e.Kind) + len(e.State) + len(e.Agent) + len(e.Trigger) + len(e.Rule) + len(e.Condition) + len(e.From) +
		len(e.To) + len(e.Next) + len(e.HandoffID) + len(e.Error) + len(e.ErrorKind) + len(e.Limit) + len(e.Reason) +
		len(e.Detail) + len(e.Usage.Model)
}

// finish trims the log to its size and encodes its results: a finished
// instance seldom commits again (a late notice may; its entries are added
// as to a running one).
func (l *memLog) finish() {
	l.plain = slices.Clip(l.plain)
	scratch := scratchPool.Get().(*[]byte)
	packed, ok := encodeResults((*scratch)[:0], l.results)
	// One allocation of the exact size holds the entries and, when they
	// could be encoded, the results.
	size := len(l.data)
	if ok {
		size += len(packed)
	}
	buf := append(make([]byte, 0, size), l.data...)
	l.data = buf[:len(buf):len(buf)]
	switch {
	case len(l.results) == 0:
		l.results = nil
	case ok:
		l.packed = append(buf[len(buf):], packed...)
		l.results = nil
	default:
		l.results = slices.Clip(l.results)
	}
	if cap(packed) <= maxScratch {
		*scratch = packed[:0]
		scratchPool.Put(scratch)
	}
}

// scratchPool holds the buffers finish encodes results in before it knows
// their size; maxScratch bounds the one it keeps.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

const maxScratch = 64 << 10

// allResults returns every result of the log, the packed ones decoded.
func (l *memLog) allResults() []map[string]any {
	if l.packed == nil {
		return l.results
	}
	return append(decodeResults(string(l.packed), l.nres), l.results...)
}

// entries decodes the log. Its strings share one copy of the log's bytes.
func (l *memLog) entries() []Entry {
	out := make([]Entry, 0, l.n)
	results := l.allResults()
	s := string(l.data)
	var res, plain int
	for at := 0; at < len(s); {
		flags := s[at]
		at++
		if flags&packPlain != 0 {
			out = append(out, l.plain[plain])
			plain++
			continue
		}
		var e Entry
		sec := readVarint(s, &at)
		nsec := int64(readUvarint(s, &at))
		e.Time = time.Unix(sec, nsec)
		if flags&packLocal == 0 {
			e.Time = e.Time.UTC()
		}
		var n [8]int64
		for k := range n {
			n[k] = readVarint(s, &at)
		}
		e.Seq, e.Step, e.Attempt, e.Priority, e.Index = int(n[0]), int(n[1]), int(n[2]), int(n[3]), int(n[4])
		e.Delay, e.Usage.InputTokens, e.Usage.OutputTokens = time.Duration(n[5]), n[6], n[7]
		e.Usage.Cost = math.Float64frombits(readUvarint(s, &at))
		var f [nStrings]string
		for k := range f {
			size := int(readUvarint(s, &at))
			f[k] = s[at : at+size]
			at += size
		}
		e.Kind, e.State, e.Agent, e.Trigger, e.Rule, e.Condition, e.From, e.To = Kind(f[0]), f[1], f[2], f[3], f[4], f[5], f[6], f[7]
		e.Next, e.HandoffID, e.Error, e.ErrorKind, e.Limit, e.Reason, e.Detail = f[8], f[9], f[10], f[11], f[12], f[13], f[14]
		e.Usage.Model = f[15]
		e.Retryable = flags&packRetryable != 0
		if flags&packResult != 0 {
			e.Result = results[res]
			res++
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
