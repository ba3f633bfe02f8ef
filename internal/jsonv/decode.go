package jsonv

import (
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the deepest nesting the Decoder takes; deeper documents go
// to encoding/json.
const maxDepth = 512

// A Decoder reads one JSON document from bytes. Its methods never fail
// loudly: on anything outside the fast path they mark the Decoder bad and
// return zero values, and the caller, seeing OK false at the end, decodes
// the bytes with encoding/json instead.
type Decoder struct {
	data  []byte
	pos   int
	depth int
	bad   bool
}

// NewDecoder returns a Decoder of data.
func NewDecoder(data []byte) *Decoder { return &Decoder{data: data} }

// OK reports whether everything read so far was on the fast path.
func (d *Decoder) OK() bool { return !d.bad }

// Fail marks the Decoder bad: the caller met something it does not take.
func (d *Decoder) Fail() { d.bad = true }

func (d *Decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the next byte past white space, 0 at the end.
func (d *Decoder) peek() byte {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// Peek returns the first byte of the next value (past white space), 0 at
// the end, without reading it: a caller that reads a string field can
// then read it as a string, not as an any that holds it.
func (d *Decoder) Peek() byte { return d.peek() }

// End marks the Decoder bad unless only white space is left.
func (d *Decoder) End() {
	if d.peek() != 0 || d.pos != len(d.data) {
		d.bad = true
	}
}

// Object reads an object, calling field for each key with the Decoder
// at its value; field must read the value (or Fail). A key seen twice is
// the caller's to refuse.
func (d *Decoder) Object(field func(key string)) {
	if d.bad || d.peek() != '{' {
		d.bad = true
		return
	}
	d.pos++
	if d.depth++; d.depth > maxDepth {
		d.bad = true
		return
	}
	defer func() { d.depth-- }()
	if d.peek() == '}' {
		d.pos++
		return
	}
	for !d.bad {
		if d.peek() != '"' {
			d.bad = true
			return
		}
		key := d.key()
		if d.peek() != ':' {
			d.bad = true
			return
		}
		d.pos++
		field(key)
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return
		default:
			d.bad = true
		}
	}
}

// Fields reads an object whose keys are among names (at most 32), calling
// read with each key's index in names and the Decoder at its value; read
// must read the value (or Fail). An unknown key, or a key seen twice,
// fails the decoding: the records read this way are written by their own
// encoders, and anything else is left to encoding/json.
func (d *Decoder) Fields(names []string, read func(i int)) {
	var seen uint32
	d.Object(func(key string) {
		for i, n := range names {
			if n == key {
				if seen&(1<<i) != 0 {
					d.Fail()
					return
				}
				seen |= 1 << i
				read(i)
				return
			}
		}
		d.Fail()
	})
}

// Object keys are interned: the messages on the hot paths repeat the same
// few keys (their fields', and those of the maps they carry), and a key
// already in keys is returned without an allocation. A document with keys
// of its own only misses the table once it is full.
var keys = newInterner[string](4096)

// maxKeyLen is the longest key looked up in keys.
const maxKeyLen = 64

// key reads an object's key, as String does.
func (d *Decoder) key() string {
	if d.bad || d.peek() != '"' {
		d.bad = true
		return ""
	}
	end, ok := d.plain(maxKeyLen)
	if !ok {
		return d.String()
	}
	k, ok, room := keys.lookup(d.data[d.pos+1 : end])
	if ok {
		d.pos = end + 1
		return k
	}
	k = d.String()
	if !d.bad && room {
		keys.add(k, k)
	}
	return k
}

// plain reports where the string at d.pos ends (its closing quote) when it
// is at most maxLen bytes of printable ASCII without escapes: its bytes
// are then its value, and a lookup by string(bytes) does not allocate.
func (d *Decoder) plain(maxLen int) (end int, ok bool) {
	start := d.pos + 1
	end = start
	for end < len(d.data) && end-start <= maxLen {
		c := d.data[end]
		if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		end++
	}
	return end, end < len(d.data) && d.data[end] == '"' && end-start <= maxLen
}

// interner is a process-wide table of values by their text, taking at most
// max of them, the first met: a bounded cache that only saves
// allocations, never changes what is decoded. It is an open-addressed
// table of twice max slots, read without a lock: an entry, once in a
// slot, is never moved or removed, so a reader meets either nothing (and
// makes the value itself) or the whole entry. Behind a read lock and a Go
// map, the lookups of every key and short value decoded cost a NATS step
// 2.7% of its CPU, mostly the lock's shared counter moving between cores.
type interner[V any] struct {
	slots []atomic.Pointer[internEntry[V]] // a power of two of them
	mu    sync.Mutex                       // taken to add
	n     atomic.Int32
	max   int
}

type internEntry[V any] struct {
	k string
	v V
}

// internSeed is the interners' hash seed.
var internSeed = maphash.MakeSeed()

func newInterner[V any](max int) *interner[V] {
	size := 1
	for size < 2*max {
		size <<= 1
	}
	return &interner[V]{slots: make([]atomic.Pointer[internEntry[V]], size), max: max}
}

// lookup returns the value of raw's text, if the table holds it, and
// whether the table has room for more.
func (t *interner[V]) lookup(raw []byte) (v V, ok, room bool) {
	mask := uint64(len(t.slots) - 1)
	for i := maphash.Bytes(internSeed, raw) & mask; ; i = (i + 1) & mask {
		e := t.slots[i].Load()
		if e == nil {
			return v, false, int(t.n.Load()) < t.max
		}
		if e.k == string(raw) {
			return e.v, true, true
		}
	}
}

// add keeps v under k unless the table is full or holds k already (lookup
// said whether it had room: a full table is not locked again).
func (t *interner[V]) add(k string, v V) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(t.n.Load()) >= t.max {
		return
	}
	mask := uint64(len(t.slots) - 1)
	for i := maphash.String(internSeed, k) & mask; ; i = (i + 1) & mask {
		e := t.slots[i].Load()
		if e == nil {
			t.slots[i].Store(&internEntry[V]{k, v})
			t.n.Add(1)
			return
		}
		if e.k == k {
			return
		}
	}
}

// String reads a string. Strings with invalid UTF-8 or a lone surrogate,
// which encoding/json replaces, fail.
func (d *Decoder) String() string {
	if d.bad || d.peek() != '"' {
		d.bad = true
		return ""
	}
	if v, ok := d.short(); ok {
		return v.(string)
	}
	d.pos++
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := string(d.data[start:d.pos])
			d.pos++
			return s
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			d.bad = true
			return ""
		case c < utf8.RuneSelf:
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				d.bad = true
				return ""
			}
			d.pos += size
		}
	}
	d.bad = true
	return ""
}

// StringOr reads a string as String does, and returns s itself, not a
// copy, when the string read is s: a document that repeats a value (a
// message's conversation id is most often its own id) makes it once.
func (d *Decoder) StringOr(s string) string {
	if s != "" && !d.bad && d.peek() == '"' {
		if end, ok := d.plain(len(s)); ok && end-d.pos-1 == len(s) && string(d.data[d.pos+1:end]) == s {
			d.pos = end + 1
			return s
		}
	}
	return d.String()
}

// escaped finishes a string with escapes that began at start.
func (d *Decoder) escaped(start int) string {
	b := append(make([]byte, 0, d.pos-start+16), d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(b)
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				d.bad = true
				return ""
			}
			e := d.data[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := d.hex4()
				if utf16.IsSurrogate(r) {
					if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						d.pos += 2
						r = utf16.DecodeRune(r, d.hex4())
					} else {
						r = utf8.RuneError
					}
					if r == utf8.RuneError {
						d.bad = true // a lone surrogate: encoding/json's to word
						return ""
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				d.bad = true
				return ""
			}
		case c < 0x20:
			d.bad = true
			return ""
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				d.bad = true
				return ""
			}
			b = append(b, d.data[d.pos:d.pos+size]...)
			d.pos += size
		}
		if d.bad {
			return ""
		}
	}
	d.bad = true
	return ""
}

func (d *Decoder) hex4() rune {
	if d.pos+4 > len(d.data) {
		d.bad = true
		return utf8.RuneError
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			d.bad = true
			return utf8.RuneError
		}
		r = r*16 + rune(c)
	}
	d.pos += 4
	return r
}

// number returns the bytes of a number that JSON's grammar takes.
func (d *Decoder) number() []byte {
	d.skipSpace()
	start, p := d.pos, d.pos
	digits := func() bool {
		s := p
		for p < len(d.data) && d.data[p] >= '0' && d.data[p] <= '9' {
			p++
		}
		return p > s
	}
	if p < len(d.data) && d.data[p] == '-' {
		p++
	}
	switch {
	case p < len(d.data) && d.data[p] == '0':
		p++
	case !digits():
		d.bad = true
		return nil
	}
	if p < len(d.data) && d.data[p] == '.' {
		p++
		if !digits() {
			d.bad = true
			return nil
		}
	}
	if p < len(d.data) && (d.data[p] == 'e' || d.data[p] == 'E') {
		p++
		if p < len(d.data) && (d.data[p] == '+' || d.data[p] == '-') {
			p++
		}
		if !digits() {
			d.bad = true
			return nil
		}
	}
	d.pos = p
	return d.data[start:p]
}

// Int reads an integer literal that fits 64 bits, as encoding/json reads
// one into an int64; a fraction or an exponent fails.
func (d *Decoder) Int() int64 {
	if d.bad {
		return 0
	}
	n, err := strconv.ParseInt(string(d.number()), 10, 64)
	if err != nil {
		d.bad = true
	}
	return n
}

// Float reads a number as a float64.
func (d *Decoder) Float() float64 {
	if d.bad {
		return 0
	}
	f, err := strconv.ParseFloat(string(d.number()), 64)
	if err != nil {
		d.bad = true
	}
	return f
}

// Bool reads true or false.
func (d *Decoder) Bool() bool {
	switch {
	case d.literal("true"):
		return true
	case d.literal("false"):
		return false
	}
	d.bad = true
	return false
}

// literal consumes word if it comes next.
func (d *Decoder) literal(word string) bool {
	if d.bad || d.peek() != word[0] || len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return false
	}
	d.pos += len(word)
	return true
}

// Raw reads any value and returns its bytes.
func (d *Decoder) Raw() []byte {
	d.skipSpace()
	start := d.pos
	d.skip()
	if d.bad {
		return nil
	}
	return d.data[start:d.pos]
}

// skip reads a value without keeping it.
func (d *Decoder) skip() {
	switch d.peek() {
	case '{':
		d.Object(func(string) { d.skip() })
	case '[':
		d.array(func() { d.skip() })
	case '"':
		if !d.skipPlain() {
			_ = d.String()
		}
	case 't', 'f':
		_ = d.Bool()
	case 'n':
		if !d.literal("null") {
			d.bad = true
		}
	default:
		d.number()
	}
}

// skipPlain reads a string without escapes, checking it as String does
// but without making it (Raw and skip read whole documents of them); it
// reads nothing and returns false for a string with escapes or a
// control character, which String then reads or refuses.
func (d *Decoder) skipPlain() bool {
	p := d.pos + 1
	for p < len(d.data) {
		c := d.data[p]
		switch {
		case c == '"':
			d.pos = p + 1
			return true
		case c == '\\' || c < 0x20:
			return false
		case c < utf8.RuneSelf:
			p++
		default:
			r, size := utf8.DecodeRune(d.data[p:])
			if r == utf8.RuneError && size == 1 {
				return false
			}
			p += size
		}
	}
	return false
}

// array reads an array, calling elem with the Decoder at each element.
func (d *Decoder) array(elem func()) {
	if d.bad || d.peek() != '[' {
		d.bad = true
		return
	}
	d.pos++
	if d.depth++; d.depth > maxDepth {
		d.bad = true
		return
	}
	defer func() { d.depth-- }()
	if d.peek() == ']' {
		d.pos++
		return
	}
	for !d.bad {
		elem()
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return
		default:
			d.bad = true
		}
	}
}

// Array reads an array (null fails), calling elem with the Decoder at
// each element; elem must read it (or Fail).
func (d *Decoder) Array(elem func()) { d.array(elem) }

// Null consumes null if it comes next.
func (d *Decoder) Null() bool { return d.literal("null") }

// Map reads an object into a map as json.Unmarshal reads one into a
// map[string]any (a key seen twice keeps its last value); null fails,
// since callers' fields tell null from an empty object their own ways.
func (d *Decoder) Map() map[string]any {
	if d.peek() != '{' {
		d.bad = true
		return nil
	}
	// The entries are read first and the map made at its size: a map
	// grown entry by entry (twice past eight entries, as the work's
	// metadata is) cost more than the rest of the decoding.
	var buf [16]entry
	entries := buf[:0]
	d.Object(func(k string) { entries = append(entries, entry{k, d.Value()}) })
	m := make(map[string]any, len(entries))
	for _, e := range entries {
		m[e.key] = e.value
	}
	return m
}

// entry is one entry of an object Map reads.
type entry struct {
	key   string
	value any
}

// Value reads any value as json.Unmarshal reads one into an any: objects
// as map[string]any, arrays as []any, numbers as float64.
func (d *Decoder) Value() any {
	switch d.peek() {
	case '{':
		return d.Map()
	case '[':
		s := []any{}
		d.array(func() { s = append(s, d.Value()) })
		return s
	case '"':
		if v, ok := d.short(); ok {
			return v
		}
		return d.String()
	case 't', 'f':
		return d.Bool()
	case 'n':
		if !d.literal("null") {
			d.bad = true
		}
		return nil
	}
	f := d.Float()
	if f >= 0 && f < float64(len(smallInts)) && f == math.Trunc(f) && !math.Signbit(f) {
		return smallInts[int(f)]
	}
	return f
}

// smallInts holds the float64s 0 to 1023 as values of an any: made once,
// since making an any of a float64 allocates, and the numbers in work and
// reports (steps, attempts, versions, amounts) are mostly such.
var smallInts = func() (t [1024]any) {
	for i := range t {
		t[i] = float64(i)
	}
	return t
}()

// Short strings are interned as values of an any, as keys are: the values
// of the fields of work and reports that repeat from one message to the
// next (names of agents, states, workflows, triggers, actions) then cost
// neither the string's bytes nor the any that holds it. Ids are longer
// than maxShortLen and not looked up.
var values = newInterner[any](4096)

// maxShortLen is the longest string looked up in values.
const maxShortLen = 24

// short reads a string of at most maxShortLen bytes of plain printable
// ASCII without escapes, as an interned any holding it; ok is false, and
// nothing is read, for any other value.
func (d *Decoder) short() (v any, ok bool) {
	end, ok := d.plain(maxShortLen)
	if !ok || end == d.pos+1 {
		return nil, false
	}
	raw := d.data[d.pos+1 : end]
	v, ok, room := values.lookup(raw)
	if !ok {
		v = string(raw)
		if room {
			values.add(v.(string), v)
		}
	}
	d.pos = end + 1
	return v, true
}
